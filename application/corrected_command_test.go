package application

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
)

// A corrected decision's command is its definition until the plan file changes that decision.

// correctedB runs a, b and c, then corrects b with the command "fixed b"; it returns the correction.
func correctedB(t *testing.T, e *useCaseEnv) CorrectResult {
	t.Helper()
	withTrees(e)
	ranABC(t, e)
	res, err := correctB(e, func(r *CorrectRequest) { r.Run = "fixed b" })
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func commandsRun(e *useCaseEnv, from int) []string {
	var out []string
	for _, c := range e.exec.calls[from:] {
		out = append(out, c.DecisionID+": "+c.Script)
	}
	return out
}

func TestRunKeepsACorrectedCommandTheFileDidNotChange(t *testing.T) {
	e := newUseCaseEnv(t)
	correctedB(t, e)
	e.warnings = nil
	calls := len(e.exec.calls)
	for _, rerun := range []bool{false, true} {
		res, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b", "c"), RerunChanged: rerun})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Changed) != 0 || res.Rerun != nil || len(res.Ran) != 0 {
			t.Fatalf("rerun %v: changed %+v, rerun %v, ran %v: the unchanged plan file reads as changed", rerun, res.Changed, res.Rerun, res.Ran)
		}
	}
	if len(e.warnings) != 0 || len(e.exec.calls) != calls {
		t.Fatalf("warnings %v, ran %v", e.warnings, commandsRun(e, calls))
	}
	b, _ := e.stored(t, "p").Decision("b")
	if by, file, ok := b.Corrected(); !ok || b.Definition().Run != "fixed b" || file != "make b" || by == "" {
		t.Fatalf("b runs %q (corrected by %q over %q, %v)", b.Definition().Run, by, file, ok)
	}
}

func TestRunNamesTheCorrectionAChangedFileSupersedes(t *testing.T) {
	e := newUseCaseEnv(t)
	fix := correctedB(t, e).Correction.ID()
	changed := defs("a", "b", "c")
	changed[1].Run = "make B"
	for range 2 { // every run names it again
		e.warnings = nil
		res, err := e.runPlan(t, RunRequest{Decisions: changed})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Changed) != 1 || res.Changed[0].ID != "b" || res.Changed[0].Supersedes != fix {
			t.Fatalf("changed %+v, want b superseding %s", res.Changed, fix)
		}
		if len(e.warnings) != 1 || !strings.Contains(e.warnings[0], "b (command; the file's command supersedes correction "+fix+")") {
			t.Fatalf("warnings %v", e.warnings)
		}
	}
	e.warnings = nil
	calls := len(e.exec.calls)
	res, err := e.runPlan(t, RunRequest{Decisions: changed, RerunChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := commandsRun(e, calls); !slices.Equal(got, []string{"b: make B", "c: make c"}) || res.Rerun == nil {
		t.Fatalf("the re-run ran %v", got)
	}
	if len(e.warnings) != 1 || !strings.Contains(e.warnings[0], "re-run with the plan file's command, which supersedes correction "+fix) {
		t.Fatalf("warnings %v", e.warnings)
	}
	b, _ := e.stored(t, "p").Decision("b")
	if _, _, ok := b.Corrected(); ok || b.Definition().Run != "make B" {
		t.Fatalf("b runs %q (corrected %v), want the file's make B", b.Definition().Run, ok)
	}
}

// A decision reverted after its correction runs again with the corrected command; when the plan file
// changed it meanwhile, the run says the file's command supersedes the correction.
func TestRunAfterARevertOfACorrectedDecision(t *testing.T) {
	for _, fileChanged := range []bool{false, true} {
		e := newUseCaseEnv(t)
		fix := correctedB(t, e).Correction.ID()
		if _, err := e.cs.RevertDecision(context.Background(), RevertRequest{DecisionID: "c", Reason: "c too"}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.cs.RevertDecision(context.Background(), RevertRequest{DecisionID: "b", Reason: "b again"}); err != nil {
			t.Fatal(err)
		}
		file, want := defs("a", "b", "c"), []string{"b: fixed b", "c: make c"}
		if fileChanged {
			file[1].Run, want[0] = "make B", "b: make B"
		}
		e.warnings = nil
		calls := len(e.exec.calls)
		if _, err := e.runPlan(t, RunRequest{Decisions: file}); err != nil {
			t.Fatal(err)
		}
		if got := commandsRun(e, calls); !slices.Equal(got, want) {
			t.Errorf("file changed %v: ran %v, want %v", fileChanged, got, want)
		}
		switch {
		case !fileChanged && len(e.warnings) != 0:
			t.Errorf("warnings %v", e.warnings)
		case fileChanged && (len(e.warnings) != 1 || !strings.Contains(e.warnings[0], "decision b: the plan file changed its command since correction "+fix)):
			t.Errorf("warnings %v", e.warnings)
		}
	}
}

// `plan revert --run` gives the decision its command as `plan correct --run` does, and ends with the
// end-of-run checkpoint.
func TestRevertRunCorrectsTheCommandAndRecordsTheEnd(t *testing.T) {
	e := newUseCaseEnv(t)
	withTrees(e)
	ranABC(t, e)
	res, err := e.cs.RevertDecision(context.Background(), RevertRequest{DecisionID: "b", Reason: "wrong", Run: "fixed b"})
	if err != nil {
		t.Fatal(err)
	}
	if res.End == nil || res.End.Type() != checkpoint.PostRun || res.End.DecisionID() != "b" {
		t.Fatalf("end %+v, want a post_run checkpoint after b", res.End)
	}
	e.warnings = nil
	if run, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b", "c")}); err != nil || len(run.Changed) != 0 || len(e.warnings) != 0 {
		t.Fatalf("changed %+v, warnings %v, %v", run.Changed, e.warnings, err)
	}
}

// A correction recorded with --run and --no-reexecute gives the decision its command already: the
// run that re-executes it later runs the corrected command, not the one it replaced.
func TestNoReexecuteCorrectionDefinesTheCommand(t *testing.T) {
	e := newUseCaseEnv(t)
	withTrees(e)
	ranABC(t, e)
	if _, err := correctB(e, func(r *CorrectRequest) { r.Run, r.NoReexecute = "fixed b", true }); err != nil {
		t.Fatal(err)
	}
	calls := len(e.exec.calls)
	if _, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b", "c")}); err != nil {
		t.Fatal(err)
	}
	if got := commandsRun(e, calls); !slices.Equal(got, []string{"b: fixed b", "c: make c"}) {
		t.Fatalf("ran %v", got)
	}
}

// The re-execution of a correction ends with a post_run checkpoint of the state it left, as a run
// does.
func TestCorrectionRecordsTheEndOfItsReexecution(t *testing.T) {
	e := newUseCaseEnv(t)
	res := correctedB(t, e)
	if res.End == nil || res.End.Type() != checkpoint.PostRun || res.End.DecisionID() != "c" {
		t.Fatalf("end %+v, want a post_run checkpoint after c", res.End)
	}
	c, _ := e.stored(t, "p").Decision("c")
	if res.End.Root() != latestOf(c).ResultTree {
		t.Errorf("the end checkpoint holds %s, c left %s", res.End.Root(), latestOf(c).ResultTree)
	}
}

// Undoing a correction gives the decision the plan file's command back; redoing it, the corrected one.
func TestUndoAndRedoOfACorrectionMoveItsCommand(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	correctedB(t, e)
	run := func() string {
		b, _ := e.stored(t, "p").Decision("b")
		return b.Definition().Run
	}
	if _, err := hs.Undo(context.Background(), UndoRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := run(); got != "make b" {
		t.Fatalf("after the undo b runs %q, want the file's make b", got)
	}
	if _, err := hs.Redo(context.Background(), RedoRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := run(); got != "fixed b" {
		t.Fatalf("after the redo b runs %q, want the corrected fixed b", got)
	}
	b, _ := e.stored(t, "p").Decision("b")
	if _, file, ok := b.Corrected(); !ok || file != "make b" {
		t.Fatalf("after the redo b is corrected %v over %q", ok, file)
	}
}

// UndoneBy says which corrections an undo took back, as the log marks them, until a redo.
func TestUndoneByFollowsTheLog(t *testing.T) {
	e := newUseCaseEnv(t)
	if got, err := e.cs.UndoneBy(context.Background()); err != nil || len(got) != 0 {
		t.Fatalf("without a log: %v, %v", got, err)
	}
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	fix := correctedB(t, e).Correction.ID()
	if got, err := e.cs.UndoneBy(context.Background()); err != nil || len(got) != 0 {
		t.Fatalf("before the undo: %v, %v", got, err)
	}
	u, err := hs.Undo(context.Background(), UndoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.cs.UndoneBy(context.Background()); err != nil || len(got) != 1 || got[fix] != u.Operation.ID {
		t.Fatalf("after the undo: %v, %v; want %s undone by %s", got, err, fix, u.Operation.ID)
	}
	if _, err := hs.Redo(context.Background(), RedoRequest{}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.cs.UndoneBy(context.Background()); err != nil || len(got) != 0 {
		t.Fatalf("after the redo: %v, %v", got, err)
	}
	log.listErr = errors.New("log unreadable")
	if _, err := e.cs.UndoneBy(context.Background()); !errors.Is(err, log.listErr) {
		t.Fatalf("a failing log: %v", err)
	}
}

// A command that names a decision without --plan means the plan that has it, not whichever plan
// ran last; a decision ID two plans have is ambiguous.
func TestDecisionCommandsFindTheDecisionsPlan(t *testing.T) {
	e := newUseCaseEnv(t)
	withTrees(e)
	ranABC(t, e)
	if _, err := e.ps.Exec(context.Background(), ExecRequest{ID: "x", Command: "make x"}); err != nil {
		t.Fatal(err)
	}
	if cur, _ := e.plans.Current(context.Background()); cur.Name() != AdhocPlan {
		t.Fatalf("current plan %s", cur.Name())
	}
	res, err := correctB(e, func(r *CorrectRequest) { r.Run = "fixed b" })
	if err != nil || !slices.Equal(res.Reexecuted, []string{"b", "c"}) {
		t.Fatalf("correct b after an exec: re-executed %v, %v", res.Reexecuted, err)
	}
	if x, _ := e.stored(t, AdhocPlan).Decision("x"); x.Status() != "reverted" {
		t.Errorf("the ad-hoc decision after b is %s, want reverted (and not re-executed)", x.Status())
	}
	if _, err := e.ps.Exec(context.Background(), ExecRequest{ID: "b", Command: "make b", Plan: "other"}); err != nil {
		t.Fatal(err)
	}
	_, err = correctB(e, nil)
	if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), `decision "b" is in 2 plans`) || !strings.Contains(err.Error(), "--plan NAME") {
		t.Fatalf("an ambiguous decision: %v", err)
	}
	if _, err := e.cs.RevertDecision(context.Background(), RevertRequest{DecisionID: "b", Reason: "r"}); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("an ambiguous revert: %v", err)
	}
	if _, err := correctB(e, func(r *CorrectRequest) { r.Plan = "other"; r.NoReexecute = true }); err != nil {
		t.Fatalf("--plan chooses: %v", err)
	}
}

// The bookkeeping of corrected commands refuses what it cannot do and passes on what fails.
func TestCorrectedCommandBookkeepingFailures(t *testing.T) {
	e := newUseCaseEnv(t)
	ctx := context.Background()
	if err := e.ops.redefine(ctx, "nope", "b", "x", "fix"); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("redefine in a plan that is not there: %v", err)
	}
	ranABC(t, e)
	if err := e.ops.redefine(ctx, "p", "zzz", "x", "fix"); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("redefine of a decision that is not there: %v", err)
	}
	if err := e.ops.uncorrect(ctx, "fix"); err != nil {
		t.Errorf("uncorrect of nothing: %v", err)
	}
	for _, op := range []stepEntry{{ID: "r", Kind: "rollback"}, {ID: "unknown", Kind: "correct"}} {
		if err := e.ops.recorrect(ctx, op); err != nil {
			t.Errorf("recorrect %+v: %v", op, err)
		}
	}
	rev, err := e.cs.RevertDecisions(ctx, CorrectRequest{DecisionID: "b", Reason: "no command"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ops.recorrect(ctx, stepEntry{ID: rev.Correction.ID(), Kind: "correct"}); err != nil {
		t.Errorf("recorrect of a correction without a command: %v", err)
	}
	boom := errors.New("db down")
	e.plans.currentErr = boom
	if err := e.ops.uncorrect(ctx, "fix"); !errors.Is(err, boom) {
		t.Errorf("uncorrect with the plans failing: %v", err)
	}
	if _, err := e.ops.decisionPlan(ctx, "", "b"); !errors.Is(err, boom) {
		t.Errorf("decisionPlan with the plans failing: %v", err)
	}
	e.plans.currentErr = nil
	if err := e.ops.uncorrect(ctx, "fix"); err != nil {
		t.Errorf("uncorrect: %v", err)
	}
	e2 := newUseCaseEnv(t)
	if err := e2.ops.uncorrect(ctx, "fix"); err != nil {
		t.Errorf("uncorrect without plans: %v", err)
	}
}
