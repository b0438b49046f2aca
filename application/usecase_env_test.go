package application

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
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

// The use cases' test environment: useCaseEnv wires every service on fakes that share one clock,
// and the fakes below stand in for the adapters of the plan, correction and maintenance use cases
// (plans, corrections, the executor, the archive, store health, settings and metrics; those of
// checkpoints are in fakes_test.go). Like those, they keep state in memory and record calls.

// fakePlans keeps a copy of each saved plan, as a database does: a plan a use case changed but did
// not save is not stored, and Partial and Save read and write only the decisions asked for
// (plan.Changes), as the gorm adapter does (domain/plan/plantest holds both to that).
type fakePlans struct {
	byName     map[string]*plan.Plan
	seq        map[string]int // the save that made each plan current last: List's order
	saved      int
	current    string
	currentErr error
	byNameErr  error
	saveErr    error
	failSaveAt int // with saveErr: fail from this save on (1-based); 0 fails every save
	saves      int
}

func newFakePlans() *fakePlans {
	return &fakePlans{byName: map[string]*plan.Plan{}, seq: map[string]int{}}
}

// copyPlan is a copy of p sharing nothing with it, whole (not partial) and with no changes to save.
func copyPlan(p *plan.Plan) *plan.Plan {
	c := plan.Rehydrate(p.ID(), p.Name(), p.Source(), p.Checkpoints(), p.CreatedAt(), statesOf(p.Decisions()))
	c.SetTurns(p.Turns())
	c.Saved()
	return c
}

// statesOf is ds as they would be stored: copies of their definitions and attempts.
func statesOf(ds []*plan.Decision) []plan.DecisionState {
	out := make([]plan.DecisionState, 0, len(ds))
	for _, d := range ds {
		attempts := d.Attempts()
		ptrs := make([]*plan.Attempt, len(attempts))
		for i := range attempts {
			ptrs[i] = &attempts[i]
		}
		by, fileRun, _ := d.Corrected()
		out = append(out, plan.DecisionState{Def: d.Definition(), Skipped: d.Status() == plan.Skipped, Attempts: ptrs, CorrectedBy: by, FileRun: fileRun})
	}
	return out
}

func (r *fakePlans) Current(context.Context) (*plan.Plan, error) {
	if r.currentErr != nil {
		return nil, r.currentErr
	}
	if r.current == "" {
		return nil, fault.NotFound("no plan yet")
	}
	return copyPlan(r.byName[r.current]), nil
}

func (r *fakePlans) ByName(_ context.Context, name string) (*plan.Plan, error) {
	if r.byNameErr != nil {
		return nil, r.byNameErr
	}
	p, ok := r.byName[name]
	if !ok {
		return nil, fault.NotFound("plan %q not found", name)
	}
	return copyPlan(p), nil
}

// List returns every plan, most recently saved first (plans a test put in byName directly, never
// saved, after those, by name).
func (r *fakePlans) List(context.Context) ([]*plan.Plan, error) {
	if r.currentErr != nil {
		return nil, r.currentErr
	}
	names := slices.Collect(maps.Keys(r.byName))
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(r.seq[b], r.seq[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	if i := slices.Index(names, r.current); i > 0 {
		names = slices.Insert(slices.Delete(names, i, i+1), 0, r.current)
	}
	out := make([]*plan.Plan, 0, len(names))
	for _, n := range names {
		out = append(out, copyPlan(r.byName[n]))
	}
	return out, nil
}

// Partial returns the stored plan with only those of ids it has, in plan order, and its turns.
func (r *fakePlans) Partial(_ context.Context, name string, ids []string) (*plan.Plan, error) {
	if r.byNameErr != nil {
		return nil, r.byNameErr
	}
	p, ok := r.byName[name]
	if !ok {
		return nil, fault.NotFound("plan %q not found", name)
	}
	var ds []*plan.Decision
	for _, d := range p.Decisions() {
		if slices.Contains(ids, d.ID()) {
			ds = append(ds, d)
		}
	}
	c := plan.RehydratePartial(p.ID(), p.Name(), p.Source(), p.Checkpoints(), p.CreatedAt(), statesOf(ds), p.Turns())
	c.Saved()
	return c, nil
}

func (r *fakePlans) RunningExecuted(context.Context) ([]string, error) {
	if r.currentErr != nil {
		return nil, r.currentErr
	}
	var names []string
	for n, p := range r.byName {
		if p.Running() != nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Save stores a copy of p: all of it when its list of decisions changed or it is new, else its own
// fields and the decisions that changed, as the gorm adapter does.
func (r *fakePlans) Save(_ context.Context, p *plan.Plan) error {
	r.saves++
	if r.saveErr != nil && r.saves >= r.failSaveAt {
		return r.saveErr
	}
	whole, changed := p.Changes()
	stored, ok := r.byName[p.Name()]
	switch {
	case !ok && p.Partial():
		return fault.Conflict("plan %s was loaded with some of its decisions but is not stored: nothing to add them to", p.Name())
	case whole || !ok:
		if p.Partial() {
			return fault.Conflict("plan %s was loaded with some of its decisions: it cannot be rewritten whole", p.Name())
		}
		r.byName[p.Name()] = copyPlan(p)
	default:
		states := statesOf(stored.Decisions())
		for _, id := range changed {
			d, err := p.Decision(id)
			if err != nil {
				return err
			}
			s := statesOf([]*plan.Decision{d})[0]
			if i := slices.IndexFunc(states, func(x plan.DecisionState) bool { return x.Def.ID == id }); i >= 0 {
				states[i] = s
			} else {
				states = append(states, s)
			}
		}
		c := plan.Rehydrate(p.ID(), p.Name(), p.Source(), p.Checkpoints(), p.CreatedAt(), states)
		c.SetTurns(p.Turns())
		c.Saved()
		r.byName[p.Name()] = c
	}
	p.Saved()
	r.saved++
	r.seq[p.Name()] = r.saved
	r.current = p.Name()
	return nil
}

// fakeCorrections keeps a copy of each correction, as a database does: a change reaches it through
// Update alone, and only when the update succeeds (domain/correction/correctiontest holds it and
// the gorm adapter to that).
type fakeCorrections struct {
	cs        map[string]*correction.Correction
	listErr   error
	addErr    error
	updateErr error
}

func newFakeCorrections() *fakeCorrections {
	return &fakeCorrections{cs: map[string]*correction.Correction{}}
}

// copyCorrection is a copy of c sharing nothing with it, its times in UTC as a database gives them.
func copyCorrection(c *correction.Correction) *correction.Correction {
	p := c.Params()
	p.CreatedAt = p.CreatedAt.UTC()
	p.Scope = slices.Clone(p.Scope)
	for i := range p.Scope {
		p.Scope[i].StartedAt = p.Scope[i].StartedAt.UTC()
		p.Scope[i].Artifacts = slices.Clone(p.Scope[i].Artifacts)
	}
	p.Conflicts = slices.Clone(p.Conflicts)
	for i := range p.Conflicts {
		if !p.Conflicts[i].ResolvedAt.IsZero() {
			p.Conflicts[i].ResolvedAt = p.Conflicts[i].ResolvedAt.UTC()
		}
	}
	p.Kind = c.Kind()
	finished := c.FinishedAt()
	if !finished.IsZero() {
		finished = finished.UTC()
	}
	return correction.Rehydrate(p, c.Status(), slices.Clone(c.Reexecuted()), finished)
}

func (r *fakeCorrections) Add(_ context.Context, c *correction.Correction) error {
	if r.addErr != nil {
		return r.addErr
	}
	if _, dup := r.cs[c.ID()]; dup {
		return fault.Conflict("duplicate correction %s", c.ID())
	}
	r.cs[c.ID()] = copyCorrection(c)
	return nil
}

func (r *fakeCorrections) Get(_ context.Context, id string) (*correction.Correction, error) {
	c, ok := r.cs[id]
	if !ok {
		return nil, fault.NotFound("correction %s not found", id)
	}
	return copyCorrection(c), nil
}

func (r *fakeCorrections) Resolve(ctx context.Context, ref string) (*correction.Correction, error) {
	var found []string
	for id := range r.cs {
		if strings.HasPrefix(id, ref) {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 0:
		return nil, fault.NotFound("correction %s not found", ref)
	case 1:
		return r.Get(ctx, found[0])
	}
	return nil, fault.Invalid("ambiguous correction %s", ref)
}

// List returns the corrections newest first (by creation, then ID), as the gorm adapter does.
func (r *fakeCorrections) List(context.Context) ([]*correction.Correction, error) {
	if r.listErr != nil {
		return nil, r.listErr
	}
	out := make([]*correction.Correction, 0, len(r.cs))
	for _, c := range r.cs {
		out = append(out, copyCorrection(c))
	}
	slices.SortFunc(out, func(a, b *correction.Correction) int {
		if c := b.Params().CreatedAt.Compare(a.Params().CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID(), a.ID())
	})
	return out, nil
}

// Update changes a copy and keeps it only when fn succeeds, as the database adapter's transaction
// does.
func (r *fakeCorrections) Update(ctx context.Context, id string, fn func(*correction.Correction) error) error {
	if r.updateErr != nil {
		return r.updateErr
	}
	c, err := r.Get(ctx, id)
	if err != nil {
		return err
	}
	if err := fn(c); err != nil {
		return err
	}
	r.cs[id] = c
	return nil
}

// fakeExecutor "runs" a decision by calling run (which may change the fake workspace) and returning
// the result configured for its ID (exit 0 when none is).
type fakeExecutor struct {
	run      func(c port.Command)
	results  map[string]port.ExecResult
	startErr map[string]error
	logs     map[string]string
	openErr  error
	reapErr  error
	reaped   []string
	calls    []port.Command
}

func newFakeExecutor() *fakeExecutor {
	return &fakeExecutor{results: map[string]port.ExecResult{}, startErr: map[string]error{}, logs: map[string]string{}}
}

func (x *fakeExecutor) Execute(_ context.Context, c port.Command, live io.Writer) (port.ExecResult, error) {
	x.calls = append(x.calls, c)
	if err := x.startErr[c.DecisionID]; err != nil {
		return port.ExecResult{}, err
	}
	if x.run != nil {
		x.run(c)
	}
	x.logs[c.LogPath] = "output of " + c.DecisionID + "\n"
	if live != nil {
		_, _ = io.WriteString(live, x.logs[c.LogPath])
	}
	return x.results[c.DecisionID], nil
}

func (x *fakeExecutor) OpenLog(path string) (io.ReadCloser, error) {
	if x.openErr != nil {
		return nil, x.openErr
	}
	s, ok := x.logs[path]
	if !ok {
		return nil, fault.NotFound("log %s not found", path)
	}
	return io.NopCloser(strings.NewReader(s)), nil
}

func (x *fakeExecutor) Reap(token string) (int, error) {
	x.reaped = append(x.reaped, token)
	return 0, x.reapErr
}

type fakeArchiver struct {
	removed     []string
	removeErr   error
	hasErr      error
	usage       int64
	usageErr    error
	staged      map[string][]port.ArchiveItem
	published   map[string]bool
	stageErr    error
	publishErr  error
	cleanErr    error
	discards    []string
	unpublishes []string
	cleans      int
}

func newFakeArchiver() *fakeArchiver {
	return &fakeArchiver{staged: map[string][]port.ArchiveItem{}, published: map[string]bool{}}
}

func (a *fakeArchiver) Stage(_ context.Context, id string, items []port.ArchiveItem) error {
	if a.stageErr != nil {
		return a.stageErr
	}
	a.staged[id] = items
	return nil
}

func (a *fakeArchiver) Publish(id string) (string, error) {
	if a.publishErr != nil {
		return "", a.publishErr
	}
	a.published[id] = true
	return a.Dir(id), nil
}

func (a *fakeArchiver) Unpublish(id string) error {
	a.unpublishes = append(a.unpublishes, id)
	delete(a.published, id)
	return nil
}

func (a *fakeArchiver) Remove(id string) (int64, error) {
	if a.removeErr != nil {
		return 0, a.removeErr
	}
	a.removed = append(a.removed, id)
	delete(a.published, id)
	return 100, nil
}

func (a *fakeArchiver) Has(id string) (bool, error) {
	if a.hasErr != nil {
		return false, a.hasErr
	}
	return a.published[id], nil
}

func (a *fakeArchiver) Usage() (int64, error) { return a.usage, a.usageErr }

func (a *fakeArchiver) Discard(id string) error {
	a.discards = append(a.discards, id)
	delete(a.staged, id)
	return nil
}

func (a *fakeArchiver) Dir(id string) string { return "/archive/" + id }

func (a *fakeArchiver) CleanStaged() error {
	a.cleans++
	return a.cleanErr
}

// fakeHealth is a store of trees (entry lists whose Path is the bare name) and objects, some of
// them damaged for good, some failing a number of times with an I/O error before they read fine.
type fakeHealth struct {
	trees      map[tree.Hash][]tree.Entry
	damaged    map[tree.Hash]error
	flaky      map[tree.Hash]int
	listErr    map[tree.Hash]error
	checks     map[tree.Hash]int
	roots      [][]tree.Hash
	collectErr error
	repacked   int
	usage      port.StoreUsage
	written    map[string]int64
	writtenErr error
	scan       []port.ObjectProblem // what ScanStore reports
	scanErr    error
	scans      int
	missing    []string // what MissingRecords reports
	missingErr error
	// consolidateDue is what ConsolidationDue says; Consolidate counts its calls and returns
	// consolidation, consolidateErr.
	consolidateDue bool
	consolidations int
	consolidation  port.ConsolidationReport
	consolidateErr error
}

func (h *fakeHealth) MissingRecords(context.Context) ([]string, error) {
	return h.missing, h.missingErr
}

func (h *fakeHealth) ScanStore() ([]port.ObjectProblem, error) {
	h.scans++
	return h.scan, h.scanErr
}

func newFakeHealth() *fakeHealth {
	return &fakeHealth{trees: map[tree.Hash][]tree.Entry{}, damaged: map[tree.Hash]error{}, flaky: map[tree.Hash]int{},
		listErr: map[tree.Hash]error{}, checks: map[tree.Hash]int{}}
}

// dir stores a directory listing and returns its hash.
func (h *fakeHealth) dir(entries ...tree.Entry) tree.Hash {
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e.Path + "|" + e.Hash.String() + "|" + e.Target + "\n")
	}
	hash := tree.Sum([]byte("dir\n" + b.String()))
	h.trees[hash] = entries
	return hash
}

func (h *fakeHealth) ListTree(hash tree.Hash) ([]tree.Entry, error) {
	if err := h.listErr[hash]; err != nil {
		return nil, err
	}
	e, ok := h.trees[hash]
	if !ok {
		return nil, fault.Integrity("tree %s is missing", hash)
	}
	return e, nil
}

func (h *fakeHealth) CheckObject(hash tree.Hash, _ bool) error {
	h.checks[hash]++
	if err := h.damaged[hash]; err != nil {
		return err
	}
	if h.flaky[hash] > 0 {
		h.flaky[hash]--
		return errors.New("input/output error")
	}
	return nil
}

func (h *fakeHealth) Collect(roots []tree.Hash, _ *time.Duration) (port.GCReport, error) {
	h.roots = append(h.roots, roots)
	if h.collectErr != nil {
		return port.GCReport{}, h.collectErr
	}
	return port.GCReport{LiveObjects: len(roots)}, nil
}

func (h *fakeHealth) Repack(roots []tree.Hash, _ port.Progress) (port.GCReport, error) {
	r, err := h.Collect(roots, nil)
	h.repacked++
	r.Repack = &port.RepackReport{Objects: r.LiveObjects}
	return r, err
}

func (h *fakeHealth) Usage() port.StoreUsage { return h.usage }

func (h *fakeHealth) WrittenPerDay() (map[string]int64, error) { return h.written, h.writtenErr }

type fakeSettings struct {
	rule port.RetentionRule
	ok   bool
	err  error
	// check is the configured check command; checkErr what reading it fails with.
	check    string
	checkErr error
}

func (s *fakeSettings) CheckCommand() (string, error) { return s.check, s.checkErr }

type fakeMetrics struct {
	failures []string
	countErr error
}

func (m *fakeMetrics) RecordCheckpointFailure(_ context.Context, _ time.Time, reason string) error {
	m.failures = append(m.failures, reason)
	return nil
}

func (m *fakeMetrics) CheckpointFailures(context.Context) (int, error) {
	return len(m.failures), m.countErr
}

// useCaseEnv wires every service on fakes that share one clock.
type useCaseEnv struct {
	l           *fakeLocker
	j           *fakeJournal
	r           *fakeRestorer
	g           *kernel.Guard
	store       *fakeStore
	snap        *fakeSnap
	repo        *fakeRepo
	history     *fakeHistory
	tx          *fakeTx
	clock       *fakeClock
	plans       *fakePlans
	corrections *fakeCorrections
	exec        *fakeExecutor
	archiver    *fakeArchiver
	health      *fakeHealth
	metrics     *fakeMetrics
	settings    fakeSettings
	ops         *Operations
	cps         *CheckpointService
	ps          *PlanService
	cs          *CorrectionService
	ms          *MaintenanceService
	warnings    []string
}

var baseTime = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func newUseCaseEnv(t *testing.T) *useCaseEnv {
	t.Helper()
	e := &useCaseEnv{
		l: &fakeLocker{}, j: &fakeJournal{}, store: newFakeStore(), repo: newFakeRepo(),
		history: &fakeHistory{recs: map[string]port.HistoryRecord{}}, tx: &fakeTx{}, clock: &fakeClock{t: baseTime},
		plans: newFakePlans(), corrections: newFakeCorrections(), exec: newFakeExecutor(), archiver: newFakeArchiver(),
		health: newFakeHealth(), metrics: &fakeMetrics{},
	}
	e.snap = &fakeSnap{store: e.store, content: map[string][]byte{}}
	e.r = &fakeRestorer{snap: e.snap}
	e.ops = NewOperations(OperationsParams{
		Checkpoints: e.repo, Plans: e.plans, Corrections: e.corrections, Snapshotter: e.snap, Store: e.store,
		Locker: e.l, Journal: e.j, Restorer: e.r, Tx: e.tx, History: e.history, Clock: e.clock, Git: fakeGit{}, Metrics: e.metrics,
		Executor: e.exec, Archiver: e.archiver,
	})
	e.g = e.ops.guard
	e.rewire()
	return e
}

// rewire builds the services again from e.ops: a service takes the parts of the shared core it
// uses when it is built, so a test that replaces one of them (a failing fake) rewires.
func (e *useCaseEnv) rewire() {
	e.cps = NewCheckpointService(e.ops)
	e.ps = NewPlanService(e.ops)
	e.cs = NewCorrectionService(e.ops)
	e.ms = NewMaintenanceService(MaintenanceParams{Ops: e.ops, Store: e.health, Settings: &e.settings})
}

func (s *fakeSettings) Retention() (port.RetentionRule, bool, error) { return s.rule, s.ok, s.err }

func (e *useCaseEnv) warn(msg string) { e.warnings = append(e.warnings, msg) }

// writes makes the fake executor add or replace one file per decision: <decision>.txt.
func (e *useCaseEnv) writes() {
	e.exec.run = func(c port.Command) {
		e.setFile(c.DecisionID+".txt", c.Script)
	}
}

// setFile puts a file into the fake live workspace, replacing one at the same path.
func (e *useCaseEnv) setFile(path, content string) {
	live := slices.DeleteFunc(slices.Clone(e.snap.live), func(x tree.Entry) bool { return x.Path == path })
	live = append(live, fe(path, content))
	slices.SortFunc(live, func(a, b tree.Entry) int { return strings.Compare(a.Path, b.Path) })
	e.snap.live = live
	e.store.blobs[tree.Sum([]byte(content))] = []byte(content)
}

func (e *useCaseEnv) livePaths() string {
	var b bytes.Buffer
	for _, x := range e.snap.live {
		b.WriteString(x.Path + " ")
	}
	return strings.TrimSpace(b.String())
}

// runPlan runs decisions (ID and command pairs) as plan "p".
func (e *useCaseEnv) runPlan(t *testing.T, req RunRequest) (RunResult, error) {
	t.Helper()
	if req.Name == "" {
		req.Name = "p"
	}
	if req.OnFailure == "" {
		req.OnFailure = StopOnFailure
	}
	req.Warn = e.warn
	return e.ps.Run(context.Background(), req)
}

func defs(ids ...string) []plan.Definition {
	out := make([]plan.Definition, len(ids))
	for i, id := range ids {
		out[i] = plan.Definition{ID: id, Run: "make " + id}
	}
	return out
}

// checkpointAt adds a checkpoint created at t with the given stats directly to the repository.
func (e *useCaseEnv) checkpointAt(t *testing.T, at time.Time, root tree.Hash, st checkpoint.Stats) *checkpoint.Checkpoint {
	t.Helper()
	cp, err := checkpoint.New(checkpoint.Params{
		ID: ident.New(at), Type: checkpoint.Manual, CreatedAt: at, Root: root, Stats: st,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.repo.Add(context.Background(), cp); err != nil {
		t.Fatal(err)
	}
	return cp
}

func (h *fakeHealth) ConsolidationDue() bool { return h.consolidateDue }

func (h *fakeHealth) Consolidate() (port.ConsolidationReport, error) {
	h.consolidations++
	return h.consolidation, h.consolidateErr
}

// stored is plan name as the repository has it now: a plan a use case returned or loaded earlier
// is a copy, which later use cases do not change.
func (e *useCaseEnv) stored(t *testing.T, name string) *plan.Plan {
	t.Helper()
	p, err := e.plans.ByName(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
