package application

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// fakeTrees stores a surgical revert's (or a per-path restore's) target tree in the fake store.
type fakeTrees struct {
	store *fakeStore
	err   error
	calls int
}

func (w *fakeTrees) StoreEntries(entries []tree.Entry, blobs map[tree.Hash][]byte) (tree.Hash, error) {
	w.calls++
	if w.err != nil {
		return tree.Hash{}, w.err
	}
	for h, b := range blobs {
		w.store.blobs[h] = b
	}
	return w.store.put(entries), nil
}

func (w *fakeTrees) Adopt(root tree.Hash) (files, size int64, err error) {
	w.calls++
	if w.err != nil {
		return 0, 0, w.err
	}
	entries, err := w.store.Flatten(root)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		if e.Kind != tree.KindDir {
			files++
			size += e.Size
		}
	}
	return files, size, nil
}

// withTrees wires a TreeWriter into e's Operations, which every service shares.
func withTrees(e *useCaseEnv) *fakeTrees {
	w := &fakeTrees{store: e.store}
	e.ops.trees = w
	e.rewire()
	return w
}

// putLive sets a live file that the workspace can also be read from (OpenLive).
func (e *useCaseEnv) putLive(path, content string) {
	e.setFile(path, content)
	e.snap.content[path] = []byte(content)
}

// liveContent reads a live file's content through its hash.
func (e *useCaseEnv) liveContent(t *testing.T, path string) string {
	t.Helper()
	for _, x := range e.snap.live {
		if x.Path == path {
			return string(e.store.blobs[x.Hash])
		}
	}
	t.Fatalf("no live %s (live: %s)", path, e.livePaths())
	return ""
}

const fBefore = "one\ntwo\nthree\nfour\nfive\n"

// ranEditsAB starts from f.txt, then runs a (rewrites f.txt's first line) and b (rewrites its last
// line and adds b.txt): reverting a alone must merge, keeping b's line.
func ranEditsAB(t *testing.T, e *useCaseEnv) {
	t.Helper()
	withTrees(e)
	e.putLive("f.txt", fBefore)
	e.exec.run = func(c port.Command) {
		switch c.DecisionID {
		case "a":
			e.putLive("f.txt", "ONE\ntwo\nthree\nfour\nfive\n")
		case "b":
			e.putLive("f.txt", "ONE\ntwo\nthree\nfour\nFIVE\n")
			e.putLive("b.txt", "b")
		default:
			e.putLive(c.DecisionID+".txt", c.Script)
		}
	}
	if _, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b")}); err != nil {
		t.Fatal(err)
	}
}

func revertReq(id string, mod func(*RevertRequest)) RevertRequest {
	r := RevertRequest{DecisionID: id, Reason: id + " was wrong"}
	if mod != nil {
		mod(&r)
	}
	return r
}

func TestRevertDecisionMergesWithLaterWork(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	res, err := e.cs.RevertDecision(context.Background(), revertReq("a", func(r *RevertRequest) { r.Warn = e.warn }))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.liveContent(t, "f.txt"); got != "one\ntwo\nthree\nfour\nFIVE\n" {
		t.Errorf("f.txt after reverting a: %q, want a's line out and b's kept", got)
	}
	if got := e.livePaths(); got != "b.txt f.txt" {
		t.Errorf("workspace: %q", got)
	}
	if len(res.Paths) != 1 || res.Paths[0].Path != "f.txt" || res.Paths[0].Action != RevertMerge || res.Counts.Modified != 1 {
		t.Errorf("paths %+v counts %+v", res.Paths, res.Counts)
	}
	if res.Backup == nil || res.Backup.Type() != checkpoint.PreCorrection || res.Refused || res.DryRun {
		t.Errorf("result %+v", res)
	}
	if st := decisionStatus(t, e, "a"); st != plan.Reverted {
		t.Errorf("a is %s, want reverted", st)
	}
	if st := decisionStatus(t, e, "b"); st != plan.Succeeded {
		t.Errorf("b is %s: a surgical revert must keep later decisions", st)
	}
	c := res.Correction
	if c == nil || c.Kind() != correction.Surgical || c.Status() != correction.Succeeded || c.NeedsAttention() ||
		c.Params().SafetyCheckpointID != string(res.Backup.ID()) || c.Params().ArchiveDir != e.archiver.Dir(c.ID()) {
		t.Fatalf("correction %+v", c)
	}
	rec, err := e.history.Get(context.Background(), c.ID())
	if err != nil || rec.Kind != kindRevert || len(rec.Reverted) != 1 || rec.Reverted[0] != "a" || rec.Modified != 1 {
		t.Errorf("history %+v, %v", rec, err)
	}
	if !e.archiver.published[c.ID()] || e.j.op != nil || e.l.held {
		t.Errorf("published %v, journal %+v, lock held %v", e.archiver.published, e.j.op, e.l.held)
	}
	// Reverted, a cannot be reverted again before it runs again.
	if _, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil)); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("reverting a twice: %v", err)
	}
}

func TestRevertDecisionDryRunChangesNothing(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	cps, writes := len(e.repo.cps), len(e.j.writes)
	res, err := e.cs.RevertDecision(context.Background(), revertReq("b", func(r *RevertRequest) { r.DryRun = true }))
	if err != nil {
		t.Fatal(err)
	}
	if !res.DryRun || res.Correction != nil || res.Backup != nil || res.Counts.Deleted != 1 || res.Counts.Modified != 1 {
		t.Errorf("preview %+v", res)
	}
	if len(e.repo.cps) != cps || len(e.j.writes) != writes || len(e.corrections.cs) != 0 || e.livePaths() != "b.txt f.txt" {
		t.Error("a dry revert changed something")
	}
	if e.l.held {
		t.Error("a dry revert kept the lock")
	}
}

func TestRevertDecisionRefusesBadInputBeforeLocking(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	locks := e.l.locks
	for _, req := range []RevertRequest{
		revertReq("a", func(r *RevertRequest) { r.Reason = " " }),
		revertReq("A.b", nil),
		revertReq("../a", nil),
		revertReq("a", func(r *RevertRequest) { r.Conflicts = "ours" }),
	} {
		if _, err := e.cs.RevertDecision(context.Background(), req); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%+v: err = %v, want invalid input", req, err)
		}
	}
	e.ops.trees = nil
	e.rewire()
	if _, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil)); err == nil || !strings.Contains(err.Error(), "not wired") {
		t.Errorf("no TreeWriter: %v", err)
	}
	if e.l.locks != locks {
		t.Error("refused input took the workspace lock")
	}
}

func TestRevertDecisionLookupErrors(t *testing.T) {
	e := newUseCaseEnv(t)
	withTrees(e)
	if _, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil)); !errors.Is(err, fault.ErrNotFound) ||
		!strings.Contains(err.Error(), "no plan has run") {
		t.Errorf("no plan: %v", err)
	}
	ranEditsAB(t, e)
	if _, err := e.cs.RevertDecision(context.Background(), revertReq("a", func(r *RevertRequest) { r.Plan = "other" })); !errors.Is(err, fault.ErrNotFound) ||
		!strings.Contains(err.Error(), `no plan "other"`) {
		t.Errorf("unknown plan: %v", err)
	}
	if _, err := e.cs.RevertDecision(context.Background(), revertReq("zzz", nil)); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown decision: %v", err)
	}
	e.plans.currentErr = errors.New("db down")
	if _, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil)); !errors.Is(err, e.plans.currentErr) || errors.Is(err, fault.ErrNotFound) {
		t.Errorf("plans failing: %v", err)
	}
	e.plans.currentErr = nil

	p, _ := e.plans.Current(context.Background())
	a, _ := p.Decision("a")
	pre := latestOf(a).CheckpointID
	saved := e.repo.cps[pre]
	delete(e.repo.cps, pre)
	if _, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil)); !errors.Is(err, fault.ErrConflict) ||
		!strings.Contains(err.Error(), "was deleted") {
		t.Errorf("pre_decision checkpoint deleted: %v", err)
	}
	e.repo.cps[pre] = saved

	// An attempt whose result tree was not recorded cannot be reverted alone.
	var ds []plan.DecisionState
	for _, d := range p.Decisions() {
		var as []*plan.Attempt
		for _, x := range d.Attempts() {
			x.ResultTree = tree.Hash{}
			as = append(as, &x)
		}
		ds = append(ds, plan.DecisionState{Def: d.Definition(), Attempts: as})
	}
	e.plans.byName["p"] = plan.Rehydrate(p.ID(), p.Name(), p.Source(), p.Checkpoints(), p.CreatedAt(), ds)
	if _, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil)); !errors.Is(err, fault.ErrConflict) ||
		!strings.Contains(err.Error(), "no result tree") {
		t.Errorf("no result tree: %v", err)
	}
	if len(e.corrections.cs) != 0 || e.j.op != nil || e.l.held {
		t.Error("a failed lookup left something behind")
	}
}

// b created b.txt, which the user changed since: reverting b conflicts there.
func conflictedB(t *testing.T, e *useCaseEnv) {
	t.Helper()
	ranEditsAB(t, e)
	e.putLive("b.txt", "the user's b")
}

func TestRevertDecisionRefusesConflictsAndChangesNothing(t *testing.T) {
	e := newUseCaseEnv(t)
	conflictedB(t, e)
	cps, writes := len(e.repo.cps), len(e.j.writes)

	res, err := e.cs.RevertDecision(context.Background(), revertReq("b", func(r *RevertRequest) { r.DryRun = true }))
	if err != nil || !res.Refused {
		t.Errorf("dry run: refused %v, err %v; want a refusal reported without an error", res.Refused, err)
	}

	res, err = e.cs.RevertDecision(context.Background(), revertReq("b", nil))
	if !errors.Is(err, fault.ErrConflict) || !res.Refused {
		t.Fatalf("err = %v, refused %v", err, res.Refused)
	}
	if !strings.Contains(err.Error(), "b.txt: created by the decision and changed since") || !strings.Contains(err.Error(), "--conflicts markers") {
		t.Errorf("message %q should name the path, why, and the way out", err)
	}
	if len(e.repo.cps) != cps || len(e.j.writes) != writes || len(e.corrections.cs) != 0 || res.Backup != nil {
		t.Error("a refused revert changed something")
	}
	if e.liveContent(t, "b.txt") != "the user's b" || decisionStatus(t, e, "b") != plan.Succeeded {
		t.Error("a refused revert touched the workspace or the plan")
	}
}

func TestRevertDecisionWithMarkersRecordsTheConflicts(t *testing.T) {
	e := newUseCaseEnv(t)
	conflictedB(t, e)
	res, err := e.cs.RevertDecision(context.Background(), revertReq("b", func(r *RevertRequest) { r.Conflicts = ConflictMarkers }))
	if err != nil {
		t.Fatal(err)
	}
	// b's line in f.txt is taken out; b.txt, which the user changed, stays as the user left it.
	if e.liveContent(t, "f.txt") != "ONE\ntwo\nthree\nfour\nfive\n" || e.liveContent(t, "b.txt") != "the user's b" {
		t.Errorf("f.txt %q, b.txt %q", e.liveContent(t, "f.txt"), e.liveContent(t, "b.txt"))
	}
	c := res.Correction
	if c == nil || !c.NeedsAttention() || len(c.Params().Conflicts) != 1 || c.Params().Conflicts[0].Path != "b.txt" {
		t.Fatalf("correction %+v: want it to need attention for b.txt", c)
	}
	if decisionStatus(t, e, "b") != plan.Reverted {
		t.Error("b is not reverted")
	}
}

func TestRefusalNamesTheFirstConflicts(t *testing.T) {
	var paths []RevertPath
	for _, p := range []string{"a", "b", "c", "d", "e"} {
		paths = append(paths, RevertPath{Path: p, Action: RevertConflict, Why: "why " + p})
	}
	err := refusal("x", paths)
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "in 5 path(s) (a: why a; b: why b; c: why c; and 2 more)") {
		t.Errorf("err = %v", err)
	}
}

func TestRevertDecisionFailuresLeaveNothingHalfDone(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name    string
		arrange func(e *useCaseEnv)
		msg     string
		discard bool // the staged archive must be discarded
		// The finisher changed the plan (in place) before failing: fakeTx does not roll that back as a
		// database would, so only the unpublished archive is checked.
		txWritten bool
	}{
		{"scanning the workspace", func(e *useCaseEnv) { e.snap.err = boom }, "scan the workspace", false, false},
		{"storing the target tree", func(e *useCaseEnv) { e.ops.trees.(*fakeTrees).err = boom }, "store the reverted tree", false, false},
		{"staging the archive", func(e *useCaseEnv) { e.archiver.stageErr = boom }, "archive the decision's artifacts", true, false},
		{"restoring the workspace", func(e *useCaseEnv) { e.r.applyErr = boom }, "revert a:", true, false},
		{"publishing the archive", func(e *useCaseEnv) { e.archiver.publishErr = boom }, "publish archive", true, false},
		{"saving the plan", func(e *useCaseEnv) { e.plans.saveErr = boom }, "revert a:", true, true},
		{"recording the correction", func(e *useCaseEnv) { e.corrections.addErr = boom }, "revert a:", true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newUseCaseEnv(t)
			ranEditsAB(t, e)
			c.arrange(e)
			res, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil))
			if !errors.Is(err, boom) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err = %v, want %q", err, c.msg)
			}
			if res.Correction != nil || len(e.corrections.cs) != 0 {
				t.Error("a failed revert was recorded")
			}
			if got := e.liveContent(t, "f.txt"); got != "ONE\ntwo\nthree\nfour\nFIVE\n" || e.livePaths() != "b.txt f.txt" {
				t.Errorf("workspace after a failed revert: %s, f.txt %q", e.livePaths(), got)
			}
			if e.j.op != nil {
				t.Errorf("journal left pending: %+v", e.j.op)
			}
			if discarded := len(e.archiver.discards) == 1; discarded != c.discard {
				t.Errorf("archive discarded = %v, want %v", discarded, c.discard)
			}
			if len(e.archiver.published) != 0 {
				t.Errorf("an archive stays published: %v", e.archiver.published)
			}
			if c.txWritten {
				if len(e.archiver.unpublishes) != 1 {
					t.Errorf("the archive of an unrecorded revert was not unpublished: %q", e.archiver.unpublishes)
				}
				return
			}
			if st := decisionStatus(t, e, "a"); st != plan.Succeeded {
				t.Errorf("a is %s after a failed revert", st)
			}
		})
	}
}

// A crash after the journal named the revert: recovery takes the workspace to the target and
// records the revert, once.
func TestRevertDecisionInterruptedIsFinishedByRecovery(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	e.g.Failpoint = func(name string) error {
		if name == kindRevert+".applied" {
			return errors.New("killed")
		}
		return nil
	}
	if _, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil)); err == nil {
		t.Fatal("the failpoint did not fire")
	}
	e.g.Failpoint = nil
	// What the journal held when the process "died": the forward revert.
	var op *port.Operation
	for i := range e.j.writes {
		if w := e.j.writes[i]; w.Kind == kindRevert && w.Direction == port.Forward {
			op = &w
		}
	}
	if op == nil {
		t.Fatalf("no forward revert was journaled: %+v", e.j.writes)
	}
	e.j.op = op

	res, err := e.g.Recover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != "completed" || e.j.op != nil {
		t.Errorf("recovery: %+v, journal %+v", res, e.j.op)
	}
	if got := e.liveContent(t, "f.txt"); got != "one\ntwo\nthree\nfour\nFIVE\n" {
		t.Errorf("f.txt after recovery: %q", got)
	}
	c, err := e.corrections.Get(context.Background(), op.ID)
	if err != nil || c.Kind() != correction.Surgical || decisionStatus(t, e, "a") != plan.Reverted {
		t.Fatalf("correction %+v, %v; a %s", c, err, decisionStatus(t, e, "a"))
	}

	// Finishing again (a crash after the commit, before the journal was cleared) records nothing twice.
	if err := e.ops.finishRevert(context.Background(), *op); err != nil {
		t.Fatal(err)
	}
	if len(e.corrections.cs) != 1 || len(e.history.recs) != 1 {
		t.Errorf("finishing twice recorded %d corrections, %d history records", len(e.corrections.cs), len(e.history.recs))
	}
}

func TestFinishRevertRejectsDamagedDetail(t *testing.T) {
	e := newUseCaseEnv(t)
	err := e.ops.finishRevert(context.Background(), port.Operation{ID: "0123456789abcdef01234567", Kind: kindRevert, Detail: []byte("{")})
	if !errors.Is(err, fault.ErrIntegrity) || len(e.archiver.published) != 0 {
		t.Errorf("damaged detail: %v", err)
	}
}

func TestRevertDecisionRunsTheReplacement(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	res, err := e.cs.RevertDecision(context.Background(), revertReq("b", func(r *RevertRequest) { r.Run = "make b2" }))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Reexecuted || res.Correction.Status() != correction.Succeeded || len(res.Correction.Reexecuted()) != 1 {
		t.Errorf("result %+v, correction %s", res, res.Correction.Status())
	}
	if last := e.exec.calls[len(e.exec.calls)-1]; last.DecisionID != "b" || last.Script != "make b2" {
		t.Errorf("ran %+v, want b's replacement", last)
	}
	if st := decisionStatus(t, e, "b"); st != plan.Succeeded {
		t.Errorf("b is %s after its replacement succeeded", st)
	}
	stored, _ := e.corrections.Get(context.Background(), res.Correction.ID())
	if stored.Status() != correction.Succeeded {
		t.Errorf("stored correction is %s", stored.Status())
	}
}

func TestRevertDecisionReplacementFails(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	e.exec.results["b"] = port.ExecResult{ExitCode: 2}
	res, err := e.cs.RevertDecision(context.Background(), revertReq("b", func(r *RevertRequest) { r.Run = "make b2" }))
	if err == nil || !strings.Contains(err.Error(), "is recorded, but its replacement did not succeed") {
		t.Fatalf("err = %v", err)
	}
	if !res.Reexecuted || res.Correction == nil || res.Correction.Status() != correction.Failed {
		t.Errorf("result %+v", res)
	}
	// The revert itself stands: b's changes are out of the workspace it found.
	stored, _ := e.corrections.Get(context.Background(), res.Correction.ID())
	if stored.Status() != correction.Failed || decisionStatus(t, e, "b") != plan.Failed {
		t.Errorf("stored %s, b %s", stored.Status(), decisionStatus(t, e, "b"))
	}
}

// Reverting a decision of a plan that is not the current one keeps the current plan current.
func TestRevertDecisionOfAnotherPlanKeepsTheCurrentOne(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	if _, err := e.runPlan(t, RunRequest{Name: "q", Decisions: defs("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.RevertDecision(context.Background(), revertReq("b", func(r *RevertRequest) { r.Plan = "p" })); err != nil {
		t.Fatal(err)
	}
	if e.plans.current != "q" {
		t.Errorf("current plan is %q after reverting p's decision, want q", e.plans.current)
	}
	p, _ := e.plans.ByName(context.Background(), "p")
	if b, _ := p.Decision("b"); b.Status() != plan.Reverted {
		t.Errorf("p/b is %s", b.Status())
	}
}

// The workspace changed between the scan the revert was planned from and its safety checkpoint:
// it is planned again from the checkpoint, and a conflict found only then still refuses, with the
// workspace untouched.
func TestRevertDecisionReplansFromTheSafetyCheckpoint(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	e.snap.onSnapshot = func() {
		e.snap.onSnapshot = nil
		e.putLive("b.txt", "edited meanwhile")
	}
	writes := len(e.j.writes)
	res, err := e.cs.RevertDecision(context.Background(), revertReq("b", nil))
	if !errors.Is(err, fault.ErrConflict) || !res.Refused || !strings.Contains(err.Error(), "b.txt") {
		t.Fatalf("err = %v, refused %v", err, res.Refused)
	}
	if len(e.j.writes) != writes || len(e.corrections.cs) != 0 || e.liveContent(t, "b.txt") != "edited meanwhile" {
		t.Error("a revert refused on re-planning changed something")
	}
	if st := decisionStatus(t, e, "b"); st != plan.Succeeded {
		t.Errorf("b is %s", st)
	}
}

func TestRevertDecisionSafetyCheckpointFails(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	boom := errors.New("disk full")
	e.snap.onSnapshot = func() { e.snap.err = boom }
	_, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "record the workspace before reverting") {
		t.Errorf("err = %v", err)
	}
	if len(e.corrections.cs) != 0 || e.j.op != nil || decisionStatus(t, e, "a") != plan.Succeeded {
		t.Error("a failed revert left something behind")
	}
}

// A store that lost what the decision's attempt recorded fails the revert as an integrity problem,
// before anything is touched.
func TestRevertDecisionOnADamagedStore(t *testing.T) {
	t.Run("result tree missing", func(t *testing.T) {
		e := newUseCaseEnv(t)
		ranEditsAB(t, e)
		p, _ := e.plans.Current(context.Background())
		a, _ := p.Decision("a")
		delete(e.store.trees, latestOf(a).ResultTree)
		_, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil))
		if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "read what a changed") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("old content missing", func(t *testing.T) {
		e := newUseCaseEnv(t)
		ranEditsAB(t, e)
		delete(e.store.blobs, tree.Sum([]byte(fBefore)))
		_, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil))
		if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), `read "f.txt" as it was before the decision`) {
			t.Errorf("err = %v", err)
		}
		if len(e.corrections.cs) != 0 || e.j.op != nil || len(e.j.writes) != 0 {
			t.Error("a failed revert left something behind")
		}
	})
}

// The replacement cannot start (the correction cannot move on): the revert itself stands, and the
// error says so.
func TestRevertDecisionReplacementCannotStart(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	e.corrections.updateErr = errors.New("db down")
	calls := len(e.exec.calls)
	res, err := e.cs.RevertDecision(context.Background(), revertReq("b", func(r *RevertRequest) { r.Run = "make b2" }))
	if !errors.Is(err, e.corrections.updateErr) || res.Reexecuted || len(e.exec.calls) != calls {
		t.Fatalf("err = %v, reexecuted %v, %d new calls", err, res.Reexecuted, len(e.exec.calls)-calls)
	}
	if decisionStatus(t, e, "b") != plan.Reverted || len(e.corrections.cs) != 1 || e.livePaths() != "f.txt" {
		t.Errorf("the revert did not stand: b %s, %d corrections, workspace %q", decisionStatus(t, e, "b"), len(e.corrections.cs), e.livePaths())
	}
}

// unlistable is a store where one tree cannot be read whole (a damaged subtree), while a diff
// against it still works: a real store's diff skips the subtrees both sides share, unread.
type unlistable struct {
	*fakeStore
	bad tree.Hash
}

func (s unlistable) Flatten(root tree.Hash) ([]tree.Entry, error) {
	if root == s.bad {
		return nil, fault.Integrity("tree %s is damaged", root)
	}
	return s.fakeStore.Flatten(root)
}

// A surgical revert whose decision's pre_decision checkpoint cannot be read whole fails with the
// integrity error before it touches anything: the workspace, the decisions' statuses, the records
// of corrections and the archive stay as they were.
func TestRevertDecisionWithAnUnreadablePreDecisionCheckpoint(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	p, err := e.plans.Current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d, _ := p.Decision("a")
	pre, err := e.repo.Get(context.Background(), latestOf(d).CheckpointID)
	if err != nil {
		t.Fatal(err)
	}
	e.ops.store = unlistable{fakeStore: e.store, bad: pre.Root()}
	e.rewire()
	live, content := e.livePaths(), e.liveContent(t, "f.txt")
	cps, _ := e.repo.List(context.Background())

	res, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil))
	if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "is damaged") {
		t.Fatalf("want the integrity error, got %v", err)
	}
	if res.Correction != nil || res.Backup != nil {
		t.Errorf("a failed revert reports a correction or a safety checkpoint: %+v", res)
	}
	if e.livePaths() != live || e.liveContent(t, "f.txt") != content || len(e.r.applies) != 0 {
		t.Errorf("the workspace changed: %q, f.txt %q", e.livePaths(), e.liveContent(t, "f.txt"))
	}
	if st := decisionStatus(t, e, "a"); st != plan.Succeeded {
		t.Errorf("a is %s, want succeeded still", st)
	}
	if after, _ := e.repo.List(context.Background()); len(after) != len(cps) {
		t.Errorf("%d checkpoints, want %d: nothing new", len(after), len(cps))
	}
	if len(e.corrections.cs) != 0 || len(e.archiver.staged) != 0 {
		t.Errorf("records: %d corrections, %d staged archives", len(e.corrections.cs), len(e.archiver.staged))
	}
}
