package application

import (
	"context"
	"errors"
	"fmt"

	"slices"
	"sort"
	"strings"
	"time"

	"github.com/planhq/plan/application/internal/kernel"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// MaintenanceService keeps the store healthy for months of use: retention (prune), garbage
// collection, verification and statistics.
type MaintenanceService struct {
	ops *Operations
	// The parts of the shared core this service uses, taken from it when it is built.
	guard       *kernel.Guard
	clock       port.Clock
	checkpoints checkpoint.Repository
	plans       plan.Repository
	corrections correction.Repository
	archiver    port.Archiver
	metrics     port.Metrics
	// Its own collaborators.
	store    port.StoreHealth
	settings port.Settings
	log      port.OperationLog // nil: the budget knows no undo to keep a safety checkpoint for
	healer   port.StoreHealer  // nil: Heal refuses
}

// MaintenanceParams are MaintenanceService's collaborators beyond the shared core.
type MaintenanceParams struct {
	Ops      *Operations
	Store    port.StoreHealth
	Settings port.Settings
	// Log, when set, lets the disk budget keep the safety checkpoint of the newest undo.
	Log port.OperationLog
	// Healer, when set, repairs the store (Heal); without one Heal refuses.
	Healer port.StoreHealer
}

// NewMaintenanceService returns the service.
func NewMaintenanceService(p MaintenanceParams) *MaintenanceService {
	return &MaintenanceService{ops: p.Ops, store: p.Store, settings: p.Settings, log: p.Log, healer: p.Healer, guard: p.Ops.guard, clock: p.Ops.clock, checkpoints: p.Ops.checkpoints, plans: p.Ops.plans, corrections: p.Ops.corrections, archiver: p.Ops.archiver, metrics: p.Ops.metrics}
}

// PruneRequest describes `plan checkpoint prune`.
type PruneRequest struct {
	Keep      int
	OlderThan time.Duration // 0: no age condition
	// Classes decide first for the checkpoints they match (see RetentionClass).
	Classes []port.RetentionClass
	// Calendar keeps, beyond the newest Keep, the newest checkpoint of recent hours, days, weeks
	// and months (see checkpoint.Calendar).
	Calendar checkpoint.Calendar
	DryRun   bool
}

// PruneResult lists what was (or would be) deleted and kept, and why protected ones were kept.
type PruneResult struct {
	Deleted []checkpoint.ID
	Kept    []checkpoint.ID
	Reasons map[checkpoint.ID]string
	// Rules names, for every checkpoint, the rule that keeps or deletes it (Reasons and more: the
	// newest N kept, and why each deleted one goes), for prune --dry-run's table.
	Rules map[checkpoint.ID]string
	// UndoLost are the operations whose safety checkpoint the prune deleted (or would): `plan undo`
	// steps past them, taking them back together with the operation before them.
	UndoLost []port.LoggedOperation
}

// Prune deletes checkpoints beyond the newest Keep (and, with OlderThan, only those older than
// that), except those a live decision, an unfinished correction or a pending operation needs.
func (s *MaintenanceService) Prune(ctx context.Context, req PruneRequest) (_ PruneResult, err error) {
	if !req.DryRun {
		var done func(*error)
		ctx, done = s.ops.begin(ctx, "prune", "", "checkpoints")
		defer done(&err)
	}
	if req.Keep < 0 {
		return PruneResult{}, fault.Invalid("--keep must be zero or more")
	}
	if req.OlderThan < 0 {
		return PruneResult{}, fault.Invalid("--older-than must be positive")
	}
	if err := req.Calendar.Validate(); err != nil {
		return PruneResult{}, err
	}
	ctx, release, err := s.guard.Enter(ctx, "checkpoint prune")
	if err != nil {
		return PruneResult{}, err
	}
	defer release()
	all, err := s.checkpoints.List(ctx)
	if err != nil {
		return PruneResult{}, err
	}
	protected, err := s.ops.protected(ctx)
	if err != nil {
		return PruneResult{}, err
	}
	res := PruneResult{Reasons: map[checkpoint.ID]string{}, Rules: map[checkpoint.ID]string{}}
	drop := fmt.Sprintf("beyond the newest %d", req.Keep)
	if !req.Calendar.IsZero() {
		drop += ", no calendar rule keeps it"
	}
	if req.OlderThan > 0 {
		drop += ", older than " + req.OlderThan.String()
	}
	cutoff := s.clock.Now().Add(-req.OlderThan)
	rest := 0 // the index among the checkpoints no class decides for
	keepWhy := func(cp *checkpoint.Checkpoint) string {
		if cp.Pinned() {
			return "pinned (`plan checkpoint unpin` releases it)"
		}
		return protected[cp.ID()]
	}
	cal := req.Calendar.Keeper()
	restTotal := 0 // the checkpoints no class decides for: the oldest of them is the calendar's oldest
	for _, cp := range all {
		if _, ok := firstClass(req.Classes, cp); !ok {
			restTotal++
		}
	}
	for _, cp := range all { // newest first
		if class, ok := firstClass(req.Classes, cp); ok {
			switch why := keepWhy(cp); {
			case why != "":
				res.Kept = append(res.Kept, cp.ID())
				res.Reasons[cp.ID()] = why
			case class.Forever:
				res.Kept = append(res.Kept, cp.ID())
				res.Reasons[cp.ID()] = "retention class " + class.String() + ": kept forever"
			case cp.CreatedAt().After(s.clock.Now().Add(-class.OlderThan)):
				res.Kept = append(res.Kept, cp.ID())
				res.Reasons[cp.ID()] = fmt.Sprintf("retention class %s: younger than %s", class, class.OlderThan)
			default:
				res.Deleted = append(res.Deleted, cp.ID())
				res.Rules[cp.ID()] = fmt.Sprintf("retention class %s: older than %s", class, class.OlderThan)
			}
			continue
		}
		i := rest
		rest++
		bucket := cal.Keep(cp.CreatedAt(), rest == restTotal)
		switch {
		case i < req.Keep:
			res.Kept = append(res.Kept, cp.ID())
			res.Rules[cp.ID()] = fmt.Sprintf("among the newest %d", req.Keep)
		case bucket != "":
			res.Kept = append(res.Kept, cp.ID())
			res.Reasons[cp.ID()] = bucket
		case req.OlderThan > 0 && cp.CreatedAt().After(cutoff):
			res.Kept = append(res.Kept, cp.ID())
			res.Reasons[cp.ID()] = "newer than --older-than"
		case keepWhy(cp) != "":
			res.Kept = append(res.Kept, cp.ID())
			res.Reasons[cp.ID()] = keepWhy(cp)
		default:
			res.Deleted = append(res.Deleted, cp.ID())
			res.Rules[cp.ID()] = drop
		}
	}
	for id, why := range res.Reasons {
		res.Rules[id] = why
	}
	if res.UndoLost, err = s.undoLost(ctx, res.Deleted); err != nil {
		return res, err
	}
	if req.DryRun {
		return res, nil
	}
	for _, id := range res.Deleted {
		if err := s.checkpoints.Delete(ctx, id); err != nil {
			return res, fmt.Errorf("prune %s: %w", id, err)
		}
	}
	return res, nil
}

// undoLost lists the operations `plan undo` could still take back whose safety checkpoint is in
// deleted.
func (s *MaintenanceService) undoLost(ctx context.Context, deleted []checkpoint.ID) ([]port.LoggedOperation, error) {
	if s.ops.oplog == nil || len(deleted) == 0 {
		return nil, nil
	}
	ops, err := s.ops.oplog.List(ctx, 0, "")
	if err != nil {
		return nil, err
	}
	var lost []port.LoggedOperation
	for _, op := range ops {
		if undoable(op) && slices.Contains(deleted, op.UndoCheckpoint) {
			lost = append(lost, op)
		}
	}
	return lost, nil
}

// RetentionResult is what ApplyRetention removed.
type RetentionResult struct {
	Checkpoints PruneResult
	Archives    ArchivePruneResult
}

func firstClass(classes []port.RetentionClass, cp *checkpoint.Checkpoint) (port.RetentionClass, bool) {
	for _, c := range classes {
		if c.Matches(cp) {
			return c, true
		}
	}
	return port.RetentionClass{}, false
}

// PruneByPolicy prunes checkpoints by the configured retention policy (its checkpoint rule and its
// classes), as ApplyRetention does after each run; without a configured checkpoint policy it is
// invalid input.
func (s *MaintenanceService) PruneByPolicy(ctx context.Context, dry bool) (PruneResult, error) {
	rule, ok, err := s.settings.Retention()
	if err != nil {
		return PruneResult{}, err
	}
	if !ok || (rule.Keep == 0 && len(rule.Classes) == 0 && rule.Calendar.IsZero()) {
		return PruneResult{}, fault.Invalid("no checkpoint retention policy is configured in .plan/config.yaml (retention.keep, retention.keep_daily and the like, or retention.classes)")
	}
	return s.Prune(ctx, PruneRequest{Keep: keepOf(rule), OlderThan: rule.OlderThan, Classes: rule.Classes, Calendar: rule.Calendar, DryRun: dry})
}

// ApplyRetention prunes by the configured policy, if there is one: checkpoints, correction
// archives, or both. ok is false without a policy.
func (s *MaintenanceService) ApplyRetention(ctx context.Context) (RetentionResult, bool, error) {
	var res RetentionResult
	rule, ok, err := s.settings.Retention()
	if err != nil || !ok {
		return res, false, err
	}
	if rule.Keep != 0 || len(rule.Classes) > 0 || !rule.Calendar.IsZero() {
		if res.Checkpoints, err = s.Prune(ctx, PruneRequest{Keep: keepOf(rule), OlderThan: rule.OlderThan, Classes: rule.Classes, Calendar: rule.Calendar}); err != nil {
			return res, true, err
		}
	}
	if a := rule.Archives; a != nil {
		if res.Archives, err = s.PruneArchives(ctx, PruneRequest{Keep: a.Keep, OlderThan: a.OlderThan}); err != nil {
			return res, true, err
		}
	}
	return res, true, nil
}

// GC removes every object no checkpoint and no live attempt needs (in a shared store, of any
// workspace).
func (s *MaintenanceService) GC(ctx context.Context, req port.GCRequest) (_ port.GCReport, err error) {
	ctx, done := s.ops.begin(ctx, "gc", "")
	defer done(&err)
	ctx, release, err := s.guard.Enter(ctx, "gc")
	if err != nil {
		return port.GCReport{}, err
	}
	defer release()
	roots, err := s.roots(ctx)
	if err != nil {
		return port.GCReport{}, err
	}
	if req.Aggressive {
		return s.store.Repack(roots, req.Progress)
	}
	return s.store.Collect(roots, req.Grace)
}

// Consolidate merges the store's small packs once enough have accumulated (every write of a
// private store is a pack: without it, a long agent session's later commands would read thousands
// of index files). It is a no-op when none is due, and when the workspace lock is taken or an
// operation is pending (a later command does it). The CLI runs it after every command; a host
// embedding the services calls it after its own. It copies and decides nothing, unlike gc.
func (s *MaintenanceService) Consolidate(ctx context.Context) (port.ConsolidationReport, error) {
	if !s.store.ConsolidationDue() {
		return port.ConsolidationReport{}, nil
	}
	_, release, ok, err := s.guard.EnterIfFree(ctx, "consolidate")
	if err != nil || !ok {
		return port.ConsolidationReport{}, err
	}
	defer release()
	return s.store.Consolidate()
}

// roots are the trees gc keeps: every checkpoint's, and every recorded attempt result a future
// correction could archive, in every plan (`plan correct --plan NAME` archives from any of them,
// not only the plan run last).
func (s *MaintenanceService) roots(ctx context.Context) ([]tree.Hash, error) {
	cps, err := s.checkpoints.List(ctx)
	if err != nil {
		return nil, err
	}
	// Oldest first: a gc that re-encodes pairs each checkpoint with the one before it, as the
	// writers did.
	roots := make([]tree.Hash, 0, len(cps))
	for i := len(cps) - 1; i >= 0; i-- {
		roots = append(roots, cps[i].Root())
	}
	plans, err := s.plans.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range plans {
		for _, d := range p.Decisions() {
			for _, a := range d.Attempts() {
				// A reverted attempt's result too: `plan undo` of the revert (a rewind, a
				// correction) gives the attempt its standing back, and with it its result, which
				// `plan show` and a later revert read. Not provably garbage while it can.
				if a.ResultTree.IsZero() {
					continue
				}
				roots = append(roots, a.ResultTree)
			}
		}
	}
	return roots, nil
}

// VerifyProblem is one problem verification found, attributed to a checkpoint.
type VerifyProblem struct {
	CheckpointID checkpoint.ID
	Path         string
	Problem      string
}

// VerifyResult is the outcome of Verify.
type VerifyResult struct {
	CheckedCheckpoints int
	CheckedObjects     int
	Retried            int // transient read errors that succeeded on the retry
	Problems           []VerifyProblem
}

// Verify checks that every object the checkpoints (or the one ref names) reference is present with
// the right size, and with readData that its content hashes right. Shared objects are checked once
// and their damage reported for every checkpoint that references them.
func (s *MaintenanceService) Verify(ctx context.Context, ref string, readData bool) (VerifyResult, error) {
	// Under the lock: a gc or prune running meanwhile would otherwise show as damage.
	ctx, release, err := s.guard.Enter(ctx, "verify")
	if err != nil {
		return VerifyResult{}, err
	}
	defer release()
	var cps []*checkpoint.Checkpoint
	if ref != "" {
		cp, err := s.ops.resolve(ctx, ref)
		if err != nil {
			return VerifyResult{}, err
		}
		cps = []*checkpoint.Checkpoint{cp}
	} else {
		var err error
		if cps, err = s.checkpoints.List(ctx); err != nil {
			return VerifyResult{}, err
		}
	}
	v := &verifier{store: s.store, readData: readData, objects: map[tree.Hash]string{}, trees: map[tree.Hash][]port.ObjectProblem{}}
	var res VerifyResult
	for _, cp := range cps {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if v.failed != nil {
			break
		}
		for _, p := range v.tree(cp.Root(), "") {
			res.Problems = append(res.Problems, VerifyProblem{CheckpointID: cp.ID(), Path: p.Path, Problem: p.Problem})
		}
		res.CheckedCheckpoints++
	}
	res.CheckedObjects, res.Retried = len(v.objects), v.retried
	if v.failed != nil {
		return VerifyResult{}, fmt.Errorf("verify (nothing was marked damaged): %w", v.failed)
	}
	// The records are the only thing other workspaces' gcs see of this one's checkpoints.
	missing, err := s.store.MissingRecords(ctx)
	if err != nil {
		return res, err
	}
	if len(missing) > 0 {
		shown := missing[:min(len(missing), 3)]
		res.Problems = append(res.Problems, VerifyProblem{Path: "records", Problem: fmt.Sprintf(
			"%d records of this workspace's history are missing from the store (%s): a gc of another workspace may delete what its checkpoints reference; `plan doctor --repair` writes them again",
			len(missing), strings.Join(shown, ", "))})
	}
	if readData && ref == "" {
		// Checkpoints read only the copy of each object the index points at; a full scan also
		// catches damage in the rest of the store (other copies, pack headers, indexes).
		store, err := s.store.ScanStore()
		if err != nil {
			return res, err
		}
		for _, p := range store {
			res.Problems = append(res.Problems, VerifyProblem{Path: p.Path, Problem: p.Problem})
		}
	}
	return res, nil
}

type verifier struct {
	store    port.StoreHealth
	readData bool
	objects  map[tree.Hash]string               // checked objects → problem ("" when fine)
	trees    map[tree.Hash][]port.ObjectProblem // checked trees → problems below them (relative paths)
	retried  int
	failed   error // the store stopped answering or refused a read (unavailable, denied): no verdict
}

// noVerdict says whether err says nothing about the stored bytes: the store did not answer, or
// refused the read.
func noVerdict(err error) bool {
	return !errors.Is(err, fault.ErrIntegrity) && (errors.Is(err, fault.ErrUnavailable) || errors.Is(err, fault.ErrDenied))
}

// check verifies one object once, retrying a non-integrity (I/O) error once. A store that still
// does not answer, or refuses the read, stops the verification (v.failed): no verdict on the object.
func (v *verifier) check(h tree.Hash) string {
	if p, ok := v.objects[h]; ok {
		return p
	}
	if v.failed != nil {
		return ""
	}
	err := v.store.CheckObject(h, v.readData)
	if err != nil && !errors.Is(err, fault.ErrIntegrity) {
		if err = v.store.CheckObject(h, v.readData); err == nil {
			v.retried++
		} else if noVerdict(err) {
			v.failed = err
			return ""
		} else if !errors.Is(err, fault.ErrIntegrity) {
			err = fmt.Errorf("read error (failed twice): %w", err)
		}
	}
	p := ""
	if err != nil {
		p = err.Error()
	}
	v.objects[h] = p
	return p
}

// tree returns the problems under tree h, with paths prefixed by prefix.
func (v *verifier) tree(h tree.Hash, prefix string) []port.ObjectProblem {
	rel, ok := v.trees[h]
	if !ok {
		rel = v.scanTree(h)
		v.trees[h] = rel
	}
	out := make([]port.ObjectProblem, 0, len(rel))
	for _, p := range rel {
		out = append(out, port.ObjectProblem{Path: join(prefix, p.Path), Problem: p.Problem})
	}
	return out
}

func (v *verifier) scanTree(h tree.Hash) []port.ObjectProblem {
	if p := v.check(h); p != "" {
		return []port.ObjectProblem{{Path: ".", Problem: p}}
	}
	entries, err := v.store.ListTree(h)
	if noVerdict(err) {
		v.failed = err
		return nil
	}
	if err != nil {
		return []port.ObjectProblem{{Path: ".", Problem: err.Error()}}
	}
	var out []port.ObjectProblem
	for _, e := range entries {
		switch e.Kind {
		case tree.KindFile:
			if p := v.check(e.Hash); p != "" {
				out = append(out, port.ObjectProblem{Path: e.Path, Problem: p})
			}
		case tree.KindDir:
			// A problem with the subtree itself (path ".") is named by the directory's path: join
			// maps "." to the prefix.
			out = append(out, v.tree(e.Hash, e.Path)...)
		}
	}
	return out
}

func join(prefix, p string) string {
	switch {
	case prefix == "":
		return p
	case p == ".":
		return prefix
	}
	return prefix + "/" + p
}

// Stats are the figures `plan stats` prints.
type Stats struct {
	Checkpoints        int
	LogicalBytes       int64
	Store              port.StoreUsage
	DedupRatio         float64
	AvgCheckpoint      time.Duration
	P95Checkpoint      time.Duration
	MaxCheckpoint      time.Duration
	CheckpointFailures int
	SuccessRate        float64
	GrowthPerDay       []DayGrowth
	// ArchiveBytes is what the corrections' archives hold (`plan correction prune` retires them).
	ArchiveBytes int64
}

// DayGrowth is one day's checkpoints and what the store holds that was written that day
// (checkpoints' new objects, decisions' results, records; a gc's rewritten packs count on the day
// of the gc).
type DayGrowth struct {
	Day         string
	Checkpoints int
	StoredBytes int64
}

// Stats gathers the store and checkpoint figures.
func (s *MaintenanceService) Stats(ctx context.Context) (Stats, error) {
	cps, err := s.checkpoints.List(ctx)
	if err != nil {
		return Stats{}, err
	}
	failures, err := s.metrics.CheckpointFailures(ctx)
	if err != nil {
		return Stats{}, err
	}
	archive, err := s.archiver.Usage()
	if err != nil {
		return Stats{}, err
	}
	written, err := s.store.WrittenPerDay()
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Checkpoints: len(cps), Store: s.store.Usage(), CheckpointFailures: failures, ArchiveBytes: archive}
	var durations []time.Duration
	days := map[string]*DayGrowth{}
	for day, n := range written {
		days[day] = &DayGrowth{Day: day, StoredBytes: n}
	}
	for _, cp := range cps {
		st.LogicalBytes += cp.Stats().Bytes
		durations = append(durations, cp.Stats().Duration)
		day := cp.CreatedAt().UTC().Format(time.DateOnly)
		g := days[day]
		if g == nil {
			g = &DayGrowth{Day: day}
			days[day] = g
		}
		g.Checkpoints++
	}
	if st.Store.StoredBytes > 0 {
		st.DedupRatio = float64(st.LogicalBytes) / float64(st.Store.StoredBytes)
	}
	if n := len(durations); n > 0 {
		slices.Sort(durations)
		var sum time.Duration
		for _, d := range durations {
			sum += d
		}
		st.AvgCheckpoint = sum / time.Duration(n)
		st.P95Checkpoint = durations[min(n-1, (n*95+99)/100-1)]
		st.MaxCheckpoint = durations[n-1]
	}
	if total := len(cps) + failures; total > 0 {
		st.SuccessRate = float64(len(cps)) / float64(total)
	}
	for _, g := range days {
		st.GrowthPerDay = append(st.GrowthPerDay, *g)
	}
	sort.Slice(st.GrowthPerDay, func(i, j int) bool { return st.GrowthPerDay[i].Day < st.GrowthPerDay[j].Day })
	return st, nil
}

// ArchivePruneResult lists the corrections whose archives were (or would be) removed and kept,
// with why protected ones were kept, and the bytes freed.
type ArchivePruneResult struct {
	Deleted    []string
	Kept       []string
	Reasons    map[string]string
	BytesFreed int64
}

// PruneArchives removes the archives of corrections beyond the newest Keep (and, with OlderThan,
// only those older than that). Corrections whose archive is already gone are not counted. An unfinished correction's archive (reverted and not re-executed,
// or re-executing) is always kept: it is what undoing or completing that correction needs. The
// correction records stay; only the archived files go.
func (s *MaintenanceService) PruneArchives(ctx context.Context, req PruneRequest) (_ ArchivePruneResult, err error) {
	if !req.DryRun {
		var done func(*error)
		ctx, done = s.ops.begin(ctx, "prune", "", "archives")
		defer done(&err)
	}
	if req.Keep < 0 {
		return ArchivePruneResult{}, fault.Invalid("--keep must be zero or more")
	}
	if req.OlderThan < 0 {
		return ArchivePruneResult{}, fault.Invalid("--older-than must be positive")
	}
	ctx, release, err := s.guard.Enter(ctx, "correction prune")
	if err != nil {
		return ArchivePruneResult{}, err
	}
	defer release()
	cs, err := s.corrections.List(ctx)
	if err != nil {
		return ArchivePruneResult{}, err
	}
	res := ArchivePruneResult{Reasons: map[string]string{}}
	cutoff := s.clock.Now().Add(-req.OlderThan)
	finished := 0
	for _, c := range cs { // newest first
		id := c.ID()
		has, err := s.archiver.Has(id)
		if err != nil {
			return res, err
		}
		switch {
		case !has:
			continue // retired already (or never published): nothing to keep or remove
		case c.Status() == correction.Reverted || c.Status() == correction.Reexecuting:
			res.Kept = append(res.Kept, id)
			res.Reasons[id] = "unfinished correction (" + string(c.Status()) + ")"
			continue
		case finished < req.Keep:
			finished++
			res.Kept = append(res.Kept, id)
			continue
		case req.OlderThan > 0 && !c.Params().CreatedAt.Before(cutoff):
			res.Kept = append(res.Kept, id)
			res.Reasons[id] = "newer than --older-than"
			continue
		}
		res.Deleted = append(res.Deleted, id)
		if req.DryRun {
			continue
		}
		n, err := s.archiver.Remove(id)
		if err != nil {
			return res, fmt.Errorf("remove the archive of correction %s: %w", id, err)
		}
		res.BytesFreed += n
	}
	return res, nil
}
