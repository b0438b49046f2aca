package application

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/planhq/plan/application/internal/kernel"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// Operations is the core the use cases share, and the only thing they share: recording the
// workspace as a checkpoint (with its metrics), previewing and applying a journaled rollback
// against a backup checkpoint, recording a finished rollback (its count, the decisions it reverts,
// its history) in one unit of work, running one attempt of a decision, and the checkpoints that
// something still needs. Its methods are unexported: a host reaches them only through the services.
//
// NewOperations is also the one place where crash recovery is wired, in a fixed order, so that every
// graph that has a service has all of recovery: the finishers of both journaled kinds (rollback,
// correction), the recorder that keeps work done after a crash, and the repairs, which run in this
// order: attempts a killed run left running are closed (recording what they changed), staged
// archives nothing refers to are removed, and corrections left re-executing are closed.
type Operations struct {
	checkpoints checkpoint.Repository
	plans       plan.Repository
	corrections correction.Repository
	snap        port.Snapshotter
	store       port.TreeStore
	guard       *kernel.Guard
	tx          port.Transactor
	history     port.History
	clock       port.Clock
	git         port.GitProbe
	metrics     port.Metrics
	exec        port.Executor
	archiver    port.Archiver
	trees       port.TreeWriter
	// oplog is the operation log, once a HistoryService is built on this core: a use case logs its
	// own operation through it, and folds the entry into its last transaction (see commitLogged).
	oplog port.OperationLog
	funcs *funcRegistry
	host  string
	// steps holds, by rollback ID, what an undo's or a redo's log step did (see logstep.go), for
	// the use case that ran the rollback to report.
	steps sync.Map
}

// OperationsParams are Operations' collaborators. Metrics may be nil.
type OperationsParams struct {
	Checkpoints checkpoint.Repository
	Plans       plan.Repository
	Corrections correction.Repository
	Snapshotter port.Snapshotter
	Store       port.TreeStore
	// Locker, Journal and Restorer are what the guard (the workspace lock, the journaled change
	// and crash recovery) is built on; Failpoint, when set, is called at each step of a journaled
	// change (the release binary's crash hooks).
	Locker    port.Locker
	Journal   port.Journal
	Restorer  port.Restorer
	Failpoint func(name string) error
	Tx        port.Transactor
	History   port.History
	Clock     port.Clock
	Git       port.GitProbe
	Metrics   port.Metrics
	Executor  port.Executor
	Archiver  port.Archiver
	// Trees stores a surgical revert's target tree; without it RevertDecision refuses.
	Trees port.TreeWriter
	// Log is the operation log the services record their operations in (`plan history`, `plan
	// undo`); nil records nothing until NewHistoryService gives it one. With it, what the next
	// `plan undo` and `plan redo` roll back to is protected like a live decision's checkpoint.
	Log port.OperationLog
	// Host names the program the services run in, for the decisions it runs as Go functions
	// (DecisionFunc): a `plan correct` from the CLI, which cannot call them, names it. "" is
	// "a Go host program".
	Host string
}

// NewOperations returns the shared core and installs crash recovery into its guard.
func NewOperations(p OperationsParams) *Operations {
	o := &Operations{
		checkpoints: p.Checkpoints, plans: p.Plans, corrections: p.Corrections, snap: p.Snapshotter,
		store: p.Store, guard: kernel.NewGuard(p.Locker, p.Journal, p.Restorer), tx: p.Tx, history: p.History, clock: p.Clock, git: p.Git,
		metrics: p.Metrics, exec: p.Executor, archiver: p.Archiver, trees: p.Trees,
		oplog: p.Log, funcs: newFuncRegistry(), host: p.Host,
	}
	g := o.guard
	g.Failpoint = p.Failpoint
	g.Register(kindRollback, o.finishRollback)
	g.Register(kindCorrection, o.finishCorrection)
	g.Register(kindRevert, o.finishRevert)
	g.RegisterRecorder(o.recordBeforeRecovery)
	g.RegisterLogger(o.logRecovered)
	g.AddRepair(o.closeStaleAttempts)
	g.AddRepair(func(context.Context) error { return o.archiver.CleanStaged() })
	g.AddRepair(o.closeStaleCorrections)
	return o
}

// entries returns a checkpoint's tree as an ordered entry list.
func (o *Operations) entries(cp *checkpoint.Checkpoint) ([]tree.Entry, error) {
	entries, err := o.store.Flatten(cp.Root())
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", cp.ID(), err)
	}
	return entries, nil
}

// recordBeforeRecovery records the live workspace as a pre_recover checkpoint; the guard calls it
// under the lock when recovery would otherwise overwrite work done after a crash.
func (o *Operations) recordBeforeRecovery(ctx context.Context, note string) (string, error) {
	cp, err := o.create(ctx, CreateRequest{Type: checkpoint.PreRecover, Note: note})
	if err != nil {
		return "", err
	}
	return string(cp.ID()), nil
}

func (o *Operations) create(ctx context.Context, req CreateRequest) (*checkpoint.Checkpoint, error) {
	cp, err := o.take(ctx, req)
	if err != nil && o.metrics != nil && !errors.Is(err, fault.ErrInvalid) {
		// Counted for `plan stats`; the failure itself is returned, never swallowed.
		_ = o.metrics.RecordCheckpointFailure(context.WithoutCancel(ctx), o.clock.Now(), err.Error())
	}
	return cp, err
}

func (o *Operations) take(ctx context.Context, req CreateRequest) (*checkpoint.Checkpoint, error) {
	if req.Type == "" {
		req.Type = checkpoint.Manual
	}
	if _, err := checkpoint.ParseType(string(req.Type)); err != nil {
		return nil, err
	}
	if len(req.Note) > checkpoint.MaxNoteLength {
		return nil, fault.Invalid("note is %d bytes; at most %d", len(req.Note), checkpoint.MaxNoteLength)
	}
	began := time.Now()
	now := o.clock.Now()
	var also []tree.Hash
	if !req.AlsoExclude.IsZero() {
		also = append(also, req.AlsoExclude)
	}
	snap, err := o.snap.Snapshot(ctx, req.Progress, also...)
	if err != nil {
		return nil, fmt.Errorf("snapshot the workspace: %w", err)
	}
	if err := o.guard.Hit("checkpoint.stored"); err != nil {
		return nil, err
	}
	if req.Warn != nil {
		for _, w := range snap.Warnings {
			req.Warn(w)
		}
	}
	if req.Unreadable != nil && len(snap.Unreadable) > 0 {
		req.Unreadable(snap.Unreadable)
	}
	var parent checkpoint.ID // the head: a checkpoint taken after a rollback branches from its target
	switch head, err := o.head(ctx); {
	case err != nil:
		return nil, err
	case head != nil:
		parent = head.ID()
	}
	commit, ok := o.git.Head()
	if !ok {
		commit = ""
	}
	cp, err := checkpoint.New(checkpoint.Params{
		ID: ident.New(now), Type: req.Type, CreatedAt: now, Note: req.Note, Labels: req.Labels,
		DecisionID: req.DecisionID, ParentID: parent, GitCommit: commit, Root: snap.Root,
		Stats: checkpoint.Stats{
			Files: snap.Files, Bytes: snap.Bytes, StoredBytes: snap.StoredBytes,
			Duration: time.Since(began),
		},
	})
	if err != nil {
		return nil, err
	}
	add := func(ctx context.Context) error {
		if err := o.checkpoints.Add(ctx, cp); err != nil {
			return fmt.Errorf("record checkpoint: %w", err)
		}
		if req.with != nil {
			return req.with(ctx, cp)
		}
		return nil
	}
	switch {
	case req.logged:
		err = o.commitLogged(ctx, add)
	case req.with != nil:
		err = o.tx.Do(ctx, add)
	default:
		err = add(ctx)
	}
	if err != nil {
		return nil, err
	}
	return cp, nil
}

// attemptResult is how one attempt of a decision went. Ran is false when it never started (its
// checkpoint could not be taken); Attempt is then zero.
type attemptResult struct {
	Attempt          plan.Attempt
	Ran              bool
	TimedOut         bool
	ValidationFailed bool
}

// failure is the error for an attempt that ran and did not succeed, nil when it did. The one place
// that builds it, so every path (run, exec, a correction's re-execution) reports a timeout as a
// timeout and an interruption as a cancellation.
func (r attemptResult) failure(id string) error {
	if r.Attempt.Status == plan.Succeeded {
		return nil
	}
	failure := &DecisionFailedError{DecisionID: id, Status: r.Attempt.Status, ExitCode: r.Attempt.ExitCode, TimedOut: r.TimedOut,
		Validation: r.ValidationFailed}
	if r.Attempt.Status == plan.Interrupted {
		return fmt.Errorf("%w: %w", failure, context.Canceled)
	}
	return failure
}

// revertAfter marks every attempt that started at or after cp, in every plan of the workspace, as
// reverted by operation op: the workspace went back to before them, whichever plan ran them. It
// runs inside the operation's unit of work. The IDs returned are those of planName's decisions
// ("" is the current plan), and "plan/decision" for another plan's.
func (o *Operations) revertAfter(ctx context.Context, cp *checkpoint.Checkpoint, op, planName string) ([]string, error) {
	ps, err := o.plans.List(ctx) // the current plan first
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, nil
	}
	if planName == "" {
		planName = ps[0].Name()
	}
	return o.changePlans(ctx, ps, planName, func(p *plan.Plan) []string { return p.RevertStartedSince(cp.CreatedAt(), op) })
}

// qualified names decision id of plan p as revertAfter, unrevert and wouldRevert list it: plainly in
// plan planName, as plan/decision in any other.
func qualified(p *plan.Plan, planName, id string) string {
	if p.Name() != planName {
		return p.Name() + "/" + id
	}
	return id
}

// wouldRevert lists what revertAfter(cp, "") would revert, named as it names them, changing
// nothing: what a dry run reports.
func (o *Operations) wouldRevert(ctx context.Context, cp *checkpoint.Checkpoint) ([]string, error) {
	ps, err := o.plans.List(ctx) // the current plan first
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	var ids []string
	for i := len(ps) - 1; i >= 0; i-- { // in the order changePlans saves them
		for _, id := range ps[i].StartedSince(cp.CreatedAt()) {
			ids = append(ids, qualified(ps[i], ps[0].Name(), id))
		}
	}
	return ids, nil
}

// unrevert gives back the status they had to the attempts operation op reverted, in every plan
// (the undo of op), and lists the decisions it changed as revertAfter does.
func (o *Operations) unrevert(ctx context.Context, op string) ([]string, error) {
	ps, err := o.plans.List(ctx)
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	return o.changePlans(ctx, ps, ps[0].Name(), func(p *plan.Plan) []string { return p.Unrevert(op) })
}

// changePlans applies change to every plan of ps (the current one first) and saves those it
// changed, oldest first and the current plan last, so the current plan stays current. Decisions of
// plans other than planName are named plan/decision.
func (o *Operations) changePlans(ctx context.Context, ps []*plan.Plan, planName string, change func(*plan.Plan) []string) ([]string, error) {
	var ids []string
	saved := false
	for i := len(ps) - 1; i >= 0; i-- {
		p := ps[i]
		changed := change(p)
		if len(changed) == 0 && (i > 0 || !saved) {
			continue
		}
		if err := o.plans.Save(ctx, p); err != nil {
			return nil, err
		}
		saved = true
		for _, id := range changed {
			ids = append(ids, qualified(p, planName, id))
		}
	}
	return ids, nil
}

// protected maps checkpoints that must not be pruned to the reason.
func (o *Operations) protected(ctx context.Context) (map[checkpoint.ID]string, error) {
	out := map[checkpoint.ID]string{}
	ps, err := o.plans.List(ctx) // every plan's live decisions, not only the current plan's
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		for _, d := range p.Decisions() {
			a, ran := d.Latest()
			if !ran || a.CheckpointID == "" || a.Status == plan.Reverted {
				continue
			}
			name := d.ID()
			if p != ps[0] {
				name = p.Name() + "/" + name
			}
			out[a.CheckpointID] = fmt.Sprintf("pre_decision checkpoint of live decision %s (attempt %d): a correction rolls back to it", name, a.Number)
		}
	}
	cs, err := o.corrections.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		if c.Status() != correction.Reverted && c.Status() != correction.Reexecuting {
			continue
		}
		p := c.Params()
		out[checkpoint.ID(p.SafetyCheckpointID)] = fmt.Sprintf("safety checkpoint of unfinished correction %s", p.ID)
		out[checkpoint.ID(p.RollbackCheckpointID)] = fmt.Sprintf("rollback checkpoint of unfinished correction %s", p.ID)
	}
	return out, o.undoNeeds(ctx, out)
}

// undoNeeds adds to out the checkpoints the next `plan undo` and `plan redo` roll back to: the
// safety checkpoint of the newest operation that stands, and the one the newest undo took before it
// changed anything while a redo can still take it back. Older safety checkpoints may go: undo steps
// past an operation whose checkpoint is gone, and prune says which it made so (PruneResult.UndoLost).
func (o *Operations) undoNeeds(ctx context.Context, out map[checkpoint.ID]string) error {
	if o.oplog == nil {
		return nil
	}
	ops, err := o.oplog.List(ctx, 0, "")
	if err != nil {
		return err
	}
	for _, op := range ops {
		if undoable(op) {
			if _, ok := out[op.UndoCheckpoint]; !ok {
				out[op.UndoCheckpoint] = fmt.Sprintf("safety checkpoint of %s %s: the next `plan undo` rolls back to it", op.Kind, op.ID)
			}
			break
		}
	}
	if u, err := chooseRedo(ops); err == nil && len(u.Checkpoints) == 2 {
		if _, ok := out[u.Checkpoints[1]]; !ok {
			out[u.Checkpoints[1]] = fmt.Sprintf("taken by undo %s before it changed anything: `plan redo` rolls forward to it", u.ID)
		}
	}
	return nil
}

// rollbackMode reads a rollback's restore mode from its journal detail; a rollback journaled
// before modes existed restores both.
func rollbackMode(op port.Operation) RestoreMode {
	var d rollbackDetail
	if len(op.Detail) == 0 || json.Unmarshal(op.Detail, &d) != nil || d.Mode == "" {
		return RestoreBoth
	}
	return d.Mode
}

// plan is the plan called name, or the current plan when name is "".
func (o *Operations) plan(ctx context.Context, name string) (*plan.Plan, error) {
	if name == "" {
		return o.plans.Current(ctx)
	}
	return o.plans.ByName(ctx, name)
}

// loggedKinds are the operation log's kinds of the journaled operations a command logs once it
// returns.
var loggedKinds = map[string]string{kindRollback: "rollback", kindCorrection: "correct", kindRevert: "revert"}

// logRecovered enters in the operation log an operation recovery finished for a command a crash
// stopped before it could log it (a rollback, a correction, a revert), with its safety checkpoint
// as the undo's: `plan undo` then takes it back as it would have. A step of another operation
// (undo's, redo's) is logged by its finisher; one without a safety checkpoint (a clone's) has no
// undo; one logged already is left as it is.
func (o *Operations) logRecovered(ctx context.Context, op port.Operation) error {
	kind, ok := loggedKinds[op.Kind]
	if !ok || op.BackupCheckpoint == "" || stepOf(op) != nil || o.oplog == nil {
		return nil
	}
	logged, err := o.oplog.List(ctx, 0, "")
	if err != nil {
		return err
	}
	for _, e := range logged {
		if e.ID == op.ID {
			return nil
		}
	}
	var used []checkpoint.ID
	for _, id := range []checkpoint.ID{op.TargetCheckpoint, op.BackupCheckpoint} {
		if id != "" {
			used = append(used, id)
		}
	}
	return o.oplog.Add(ctx, port.LoggedOperation{
		ID: op.ID, Kind: kind, Args: []string{"(finished by plan recover)"}, Plan: operationPlan(op),
		StartedAt: op.StartedAt, FinishedAt: o.clock.Now(), Outcome: OutcomeOK, Checkpoints: used,
		UndoCheckpoint: op.BackupCheckpoint,
	})
}

// operationPlan names the plan a journaled operation's decisions belong to: a correction's own
// plan, which need not be the current one; "" (the current plan) for a rollback.
func operationPlan(op port.Operation) string {
	if op.Kind != kindCorrection {
		return ""
	}
	var d correctionDetail
	if json.Unmarshal(op.Detail, &d) != nil {
		return ""
	}
	return d.Plan
}
