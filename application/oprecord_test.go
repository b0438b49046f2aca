package application

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

func TestOutcomeNamesHowAnOperationEnded(t *testing.T) {
	code := 2
	cases := map[error]string{
		nil:                    "ok",
		context.Canceled:       "interrupted",
		fault.Integrity("x"):   "integrity",
		fault.Invalid("x"):     "invalid",
		fault.NotFound("x"):    "not_found",
		fault.Conflict("x"):    "conflict",
		fault.Denied("x"):      "denied",
		fault.Unavailable("x"): "unavailable",
		errors.New("disk"):     "internal",
		fmt.Errorf("w: %w", &ValidationFailedError{Command: "t", ExitCode: &code}): "validation_failed",
		fmt.Errorf("w: %w", &NotValidError{}):                                      "validation_failed",
		&DecisionFailedError{DecisionID: "d", Status: plan.Failed}:                 "decision_failed",
		// The kind of a classified error wins over what else it carries; an interruption over both.
		errors.Join(&NotValidError{}, fault.Conflict("busy")):                         "conflict",
		errors.Join(&DecisionFailedError{DecisionID: "d"}, fault.Integrity("x")):      "integrity",
		errors.Join(fault.Unavailable("down"), fault.Integrity("x")):                  "integrity",
		fmt.Errorf("%w: %w", &DecisionFailedError{DecisionID: "d"}, context.Canceled): "interrupted",
	}
	produced := map[string]bool{}
	for err, want := range cases {
		got := Outcome(err)
		if got != want {
			t.Errorf("Outcome(%v) = %q, want %q", err, got, want)
		}
		produced[got] = true
	}
	// Outcomes lists exactly the names Outcome returns, each once.
	listed := map[string]bool{}
	for _, name := range Outcomes() {
		if listed[name] {
			t.Errorf("Outcomes() lists %q twice", name)
		}
		listed[name] = true
	}
	if !maps.Equal(listed, produced) {
		t.Errorf("Outcomes() = %v, but Outcome returns %v", Outcomes(), slices.Sorted(maps.Keys(produced)))
	}
}

// withLog wires an operation log into e, as the bootstrap does.
func withLog(e *useCaseEnv) (*fakeOpLog, *HistoryService) {
	log := &fakeOpLog{}
	return log, NewHistoryService(e.ops, log)
}

func kinds(ops []port.LoggedOperation) string {
	var out []string
	for _, op := range ops {
		out = append(out, op.Kind+"("+strings.Join(op.Args, " ")+")")
	}
	return strings.Join(out, " ")
}

// A host's calls are logged by the services themselves, newest first, as the CLI's commands are.
func TestServicesLogTheirOwnOperations(t *testing.T) {
	e := newUseCaseEnv(t)
	log, _ := withLog(e)
	e.writes()
	ctx := context.Background()
	res, err := e.ps.Exec(ctx, ExecRequest{ID: "a", Command: "make a"})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := res.Plan.Decision("a")
	if kinds(log.ops) != "decision(a) exec(exec -- make a)" {
		t.Fatalf("log: %s", kinds(log.ops))
	}
	ex, dec := log.ops[1], log.ops[0]
	if ex.Plan != AdhocPlan || ex.Outcome != "ok" || len(ex.Checkpoints) != 2 || ex.UndoCheckpoint != "" || ex.ID == "" {
		t.Errorf("exec entry %+v", ex)
	}
	if dec.UndoCheckpoint != latestOf(a).CheckpointID || dec.Outcome != "ok" || dec.Plan != AdhocPlan {
		t.Errorf("decision entry %+v", dec)
	}

	cp, err := e.cps.Create(ctx, CreateRequest{Note: "n"})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { _, err := e.cps.SetPinned(ctx, string(cp.ID()), true); return err },
		func() error { _, err := e.cps.SetPinned(ctx, string(cp.ID()), false); return err },
		func() error { _, err := e.cps.Delete(ctx, string(cp.ID()), false); return err },
		func() error { _, err := e.ms.Prune(ctx, PruneRequest{Keep: 10}); return err },
		func() error { _, err := e.ms.Prune(ctx, PruneRequest{Keep: 10, DryRun: true}); return err },
		func() error { _, err := e.ms.PruneArchives(ctx, PruneRequest{Keep: 10}); return err },
		func() error { _, err := e.ms.PruneArchives(ctx, PruneRequest{Keep: 10, DryRun: true}); return err },
		func() error { _, err := e.ms.GC(ctx, port.GCRequest{}); return err },
		func() error {
			_, err := e.cps.Rollback(ctx, RollbackRequest{Ref: string(latestOf(a).CheckpointID), DryRun: true})
			return err
		},
		func() error {
			_, err := e.cps.Rollback(ctx, RollbackRequest{Ref: string(latestOf(a).CheckpointID)})
			return err
		},
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	got := kinds(log.ops)
	want := fmt.Sprintf("rollback(rollback %s) gc(gc) prune(prune archives) prune(prune checkpoints) delete(delete %s) unpin(unpin %s) pin(pin %s) checkpoint(checkpoint) decision(a) exec(exec -- make a)",
		latestOf(a).CheckpointID, cp.ID(), cp.ID(), cp.ID())
	if got != want {
		t.Fatalf("log:\n %s\nwant\n %s", got, want)
	}
	rb := log.ops[0]
	if rb.UndoCheckpoint == "" || !slices.Contains(rb.Checkpoints, latestOf(a).CheckpointID) || rb.ID == "" {
		t.Errorf("rollback entry %+v", rb)
	}
}

// An operation refused before it changed anything is not logged; a failed one is, with its kind.
func TestRefusedOperationsAreNotLogged(t *testing.T) {
	e := newUseCaseEnv(t)
	log, _ := withLog(e)
	ctx := context.Background()
	if _, err := e.cps.Rollback(ctx, RollbackRequest{Ref: "0123456789abcdef01234567"}); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
	if _, err := e.cps.Delete(ctx, "0123456789abcdef01234567", false); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
	if len(log.ops) != 0 {
		t.Fatalf("refusals were logged: %s", kinds(log.ops))
	}
	e.exec.results["f"] = port.ExecResult{ExitCode: 3}
	if _, err := e.ps.Exec(ctx, ExecRequest{ID: "f", Command: "false"}); err == nil {
		t.Fatal("the failing decision succeeded")
	}
	if kinds(log.ops) != "decision(f) exec(exec -- false)" || log.ops[0].Outcome != "failed" || log.ops[1].Outcome != "decision_failed" {
		t.Errorf("log: %+v", log.ops)
	}
}

// A host's checkpoint that validation refuses (CreateRequest.Check) changed nothing: it is not
// logged, as the CLI's `checkpoint create --validate` is not. It once was, as outcome "internal".
func TestCheckpointRefusedByValidationIsNotLogged(t *testing.T) {
	e := newUseCaseEnv(t)
	log, _ := withLog(e)
	e.setFile("a.txt", "a")
	ctx := context.Background()
	e.exec.results[""] = port.ExecResult{ExitCode: 1}
	_, err := e.cps.Create(ctx, CreateRequest{Note: "n", Check: &CheckRequest{Command: "false"}})
	var nv *NotValidError
	if !errors.As(err, &nv) || len(e.repo.cps) != 0 {
		t.Fatalf("err = %v, %d checkpoints", err, len(e.repo.cps))
	}
	if len(log.ops) != 0 {
		t.Fatalf("the refused checkpoint was logged: %+v", log.ops)
	}
	// The same checkpoint once the check passes is.
	e.exec.results[""] = port.ExecResult{}
	if _, err := e.cps.Create(ctx, CreateRequest{Note: "n", Check: &CheckRequest{Command: "true"}}); err != nil {
		t.Fatal(err)
	}
	if kinds(log.ops) != "checkpoint(checkpoint)" || log.ops[0].Outcome != "ok" {
		t.Errorf("log: %+v", log.ops)
	}
}

// Under a caller's Recording the services add to it and write nothing; the caller finishes it once.
func TestARecordingInTheContextIsFinishedByItsOwner(t *testing.T) {
	e := newUseCaseEnv(t)
	log, hs := withLog(e)
	e.writes()
	rec := NewRecording("exec", []string{"exec", "--id", "a", "--", "make", "a"}, "", baseTime)
	ctx := WithRecording(context.Background(), rec)
	if _, err := e.ps.Exec(ctx, ExecRequest{ID: "a", Command: "make a"}); err != nil {
		t.Fatal(err)
	}
	if len(log.ops) != 0 {
		t.Fatalf("the service wrote its own entry: %s", kinds(log.ops))
	}
	if err := hs.Finish(ctx, rec, "ok"); err != nil {
		t.Fatal(err)
	}
	if err := hs.Finish(ctx, rec, "ok"); err != nil {
		t.Fatal(err)
	}
	if kinds(log.ops) != "decision(a) exec(exec --id a -- make a)" || log.ops[1].Plan != AdhocPlan {
		t.Fatalf("log: %+v", log.ops)
	}

	// Unrecorded: nothing at all.
	if _, err := e.ps.Exec(Unrecorded(context.Background()), ExecRequest{ID: "b", Command: "make b"}); err != nil {
		t.Fatal(err)
	}
	if err := hs.Finish(ctx, NewRecording("usage", nil, "", baseTime.Add(1e12)), "usage"); err != nil {
		t.Fatal(err)
	}
	if len(log.ops) != 2 {
		t.Errorf("log: %s", kinds(log.ops))
	}
}

func TestFinishReportsWhatItCannotWrite(t *testing.T) {
	e := newUseCaseEnv(t)
	log, hs := withLog(e)
	e.writes()
	ctx := context.Background()
	if _, err := e.ps.Exec(Unrecorded(ctx), ExecRequest{ID: "a", Command: "make a"}); err != nil {
		t.Fatal(err)
	}
	e.repo.listErr = errors.New("db down")
	if err := hs.Finish(ctx, NewRecording("exec", nil, "", baseTime), "ok"); !errors.Is(err, e.repo.listErr) {
		t.Errorf("list failure: %v", err)
	}
	e.repo.listErr = nil
	log.addErr = errors.New("full")
	if err := hs.Finish(ctx, NewRecording("exec", nil, "", baseTime), "ok"); !errors.Is(err, log.addErr) {
		t.Errorf("write failure: %v", err)
	}
	// The decision entries fail after the operation's own.
	log.addErr = nil
	fails := &failAfter{fakeOpLog: log, n: 1}
	e.ops.oplog = fails
	if err := hs.Finish(ctx, NewRecording("exec", nil, "", baseTime), "ok"); err == nil || !strings.Contains(err.Error(), "log full") {
		t.Errorf("decision entry failure: %v", err)
	}
	// A plan that cannot be read leaves the decisions out, not the operation.
	e.ops.oplog = log
	log.ops = nil
	e.plans.currentErr = errors.New("plans unreadable")
	if err := hs.Finish(ctx, NewRecording("run", nil, "", baseTime), "ok"); err != nil || kinds(log.ops) != "run()" {
		t.Errorf("unreadable plan: %v, log %s", err, kinds(log.ops))
	}
}

// failAfter is an operation log whose writes fail after the first n.
type failAfter struct {
	*fakeOpLog
	n int
}

func (l *failAfter) Add(ctx context.Context, op port.LoggedOperation) error {
	if l.n == 0 {
		return errors.New("log full")
	}
	l.n--
	return l.fakeOpLog.Add(ctx, op)
}

// Without an operation log nothing is recorded, and nothing fails for it.
func TestNoOperationLogRecordsNothing(t *testing.T) {
	e := newUseCaseEnv(t)
	e.writes()
	rec := NewRecording("exec", nil, "", baseTime)
	if _, err := e.ps.Exec(WithRecording(context.Background(), rec), ExecRequest{ID: "a", Command: "make a"}); err != nil {
		t.Fatal(err)
	}
	if err := e.ops.finish(context.Background(), rec, "ok"); err != nil {
		t.Error(err)
	}
}

// A correction and a surgical revert are logged by their service with their own ID and safety
// checkpoint, so `plan undo` takes them back; a second exec logs only its own attempt.
func TestCorrectionsAndRevertsAreLoggedUndoable(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	log, hs := withLog(e)
	ctx := context.Background()
	res, err := e.cs.RevertDecision(ctx, revertReq("a", func(r *RevertRequest) { r.Plan = "" }))
	if err != nil {
		t.Fatal(err)
	}
	if len(log.ops) != 1 || log.ops[0].Kind != "revert" || log.ops[0].ID != res.Correction.ID() ||
		log.ops[0].UndoCheckpoint != res.Backup.ID() || log.ops[0].Args[0] != "revert" {
		t.Fatalf("log: %+v", log.ops)
	}
	if u, err := hs.Undo(ctx, UndoRequest{DryRun: true}); err != nil || u.Undone.ID != res.Correction.ID() {
		t.Fatalf("undo would take back %+v, %v", u.Undone, err)
	}

	e = newUseCaseEnv(t)
	ranEditsAB(t, e)
	log, _ = withLog(e)
	cr, err := e.cs.Correct(ctx, CorrectRequest{DecisionID: "b", Reason: "wrong", NoReexecute: true})
	if err != nil {
		t.Fatal(err)
	}
	p := cr.Correction.Params()
	if len(log.ops) != 1 || log.ops[0].Kind != "correct" || log.ops[0].ID != p.ID || string(log.ops[0].UndoCheckpoint) != p.SafetyCheckpointID ||
		!slices.Contains(log.ops[0].Checkpoints, cr.Rollback.Target.ID()) ||
		!slices.Equal(log.ops[0].Args, []string{"correct", "--decision", "b", "--reason", "wrong", "--no-reexecute"}) {
		t.Fatalf("log: %+v", log.ops)
	}
	log.ops = nil
	e.writes()
	if _, err := e.ps.Exec(ctx, ExecRequest{ID: "c", Command: "make c"}); err != nil {
		t.Fatal(err)
	}
	if kinds(log.ops) != "decision(c) exec(exec -- make c)" {
		t.Errorf("log: %s", kinds(log.ops))
	}
	log.ops = nil
	if _, _, err := e.cs.ApplyCorrection(ctx, p.ID, CorrectRequest{Run: "make b"}); err != nil {
		t.Fatal(err)
	}
	if len(log.ops) != 1 || log.ops[0].Kind != "correct" || !slices.Equal(log.ops[0].Args, []string{"correct", "--apply", p.ID}) {
		t.Errorf("log: %+v", log.ops)
	}
}

// A step of another operation (a clone's rollback, say) adds no ID or safety checkpoint of its own
// to that operation's entry: only a rollback, correction or revert is undone by `plan undo`.
func TestAStepOfAnotherOperationLeavesItsEntryAlone(t *testing.T) {
	ctx := context.Background()
	for name, step := range map[string]func(e *useCaseEnv, ctx context.Context) error{
		"rollback": func(e *useCaseEnv, ctx context.Context) error {
			p, err := e.plans.Current(ctx)
			if err != nil {
				return err
			}
			a, _ := p.Decision("a")
			_, err = e.cps.Rollback(ctx, RollbackRequest{Ref: string(latestOf(a).CheckpointID)})
			return err
		},
		"correct": func(e *useCaseEnv, ctx context.Context) error {
			_, err := e.cs.Correct(ctx, CorrectRequest{DecisionID: "a", Reason: "r", NoReexecute: true})
			return err
		},
		"revert": func(e *useCaseEnv, ctx context.Context) error {
			_, err := e.cs.RevertDecision(ctx, revertReq("b", nil))
			return err
		},
	} {
		e := newUseCaseEnv(t)
		ranEditsAB(t, e)
		log, hs := withLog(e)
		rec := NewRecording("clone", []string{"clone"}, "", baseTime)
		if err := step(e, WithRecording(ctx, rec)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := hs.Finish(ctx, rec, "ok"); err != nil {
			t.Fatal(err)
		}
		if op := log.ops[0]; len(log.ops) != 1 || op.Kind != "clone" || op.UndoCheckpoint != "" {
			t.Errorf("%s: log %+v", name, log.ops)
		}
		if _, err := hs.Undo(ctx, UndoRequest{DryRun: true}); !errors.Is(err, fault.ErrNotFound) {
			t.Errorf("%s: undo would take back a step of a clone: %v", name, err)
		}
	}
}
