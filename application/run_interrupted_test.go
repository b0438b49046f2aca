package application

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

// A decision under on_failure rollback whose attempt was interrupted (a killed run) is undone from
// that attempt's own pre_decision checkpoint before it runs again: the new attempt does not start
// from the killed one's partial changes, and its own rollback does not keep them.
func TestRunUndoesAnInterruptedAttemptUnderRollback(t *testing.T) {
	rollback := func(d *plan.Definition) { d.OnFailure = string(RollbackOnFailure) }

	// The re-run succeeds: the killed attempt's half.txt is gone, everything else ran.
	e := newUseCaseEnv(t)
	_, pre := runningPlan(t, e)
	e.writes()
	res, err := e.runPlan(t, RunRequest{Decisions: withDef(defs("a", "b"), "a", rollback)})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.livePaths(); got != "a.txt b.txt before.txt" {
		t.Errorf("workspace: %q, want the killed attempt's half.txt undone", got)
	}
	a, _ := res.Plan.Decision("a")
	if as := a.Attempts(); len(as) != 2 || as[0].Status != plan.Reverted || as[1].Status != plan.Succeeded {
		t.Errorf("a's attempts: %+v", as)
	}
	if len(e.warnings) != 1 || !strings.Contains(e.warnings[0], `decision "a": its attempt 1 was interrupted; on_failure rollback restored its pre_decision checkpoint `+string(pre.ID())) {
		t.Errorf("warnings: %q", e.warnings)
	}

	// The re-run fails too (the run's policy this time): its rollback ends where the killed attempt began.
	e = newUseCaseEnv(t)
	runningPlan(t, e)
	e.writes()
	e.exec.results["a"] = port.ExecResult{ExitCode: 1}
	res, err = e.runPlan(t, RunRequest{Decisions: defs("a", "b"), OnFailure: RollbackOnFailure})
	var df *DecisionFailedError
	if !errors.As(err, &df) || df.DecisionID != "a" {
		t.Fatalf("err = %v", err)
	}
	if got := e.livePaths(); got != "before.txt" {
		t.Errorf("workspace: %q, want it as before the killed attempt", got)
	}
	if a, _ := res.Plan.Decision("a"); a.Status() != plan.Reverted {
		t.Errorf("a is %s", a.Status())
	}

	// Under stop, an interrupted attempt's changes stay, as they always did (nothing undoes them).
	e = newUseCaseEnv(t)
	runningPlan(t, e)
	e.writes()
	if _, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b")}); err != nil {
		t.Fatal(err)
	}
	if got := e.livePaths(); got != "a.txt b.txt before.txt half.txt" {
		t.Errorf("workspace under stop: %q", got)
	}

	// The attempt's checkpoint is gone: the decision does not run again, and the error says why.
	e = newUseCaseEnv(t)
	_, pre = runningPlan(t, e)
	delete(e.repo.cps, pre.ID())
	e.writes()
	_, err = e.runPlan(t, RunRequest{Decisions: withDef(defs("a", "b"), "a", rollback)})
	if !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), `decision "a": undo its interrupted attempt 1 (on_failure rollback)`) {
		t.Errorf("checkpoint gone: %v", err)
	}
	if len(e.exec.calls) != 0 || !slices.Contains(strings.Fields(e.livePaths()), "half.txt") {
		t.Errorf("ran %d commands; workspace %q", len(e.exec.calls), e.livePaths())
	}

	// Reading the plan back after the undo fails (the database goes away as it warns): reported,
	// nothing runs.
	e = newUseCaseEnv(t)
	runningPlan(t, e)
	e.writes()
	down := errors.New("db down")
	_, err = e.ps.Run(context.Background(), RunRequest{Name: "p", Decisions: withDef(defs("a", "b"), "a", rollback),
		Warn: func(string) { e.plans.byNameErr = down }})
	if !errors.Is(err, down) || len(e.exec.calls) != 0 {
		t.Errorf("plan unreadable after the undo: %v, %d calls", err, len(e.exec.calls))
	}
}
