package application

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

// A full correction of a decision older than a surgical revert would roll the surgically reverted
// decision's changes back in while it stays reverted: it is refused, and nothing changes.
func TestCorrectRefusesToRollBackPastASurgicalRevert(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	rev, err := e.cs.RevertDecision(context.Background(), revertReq("b", nil))
	if err != nil {
		t.Fatal(err)
	}
	cps, writes := len(e.repo.cps), len(e.j.writes)
	for _, dry := range []bool{true, false} {
		_, err := e.cs.Correct(context.Background(), CorrectRequest{DecisionID: "a", Reason: "a too", DryRun: dry})
		if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "surgically reverted (correction "+rev.Correction.ID()+")") ||
			!strings.Contains(err.Error(), "plan revert --decision a") {
			t.Errorf("dry %v: err = %v", dry, err)
		}
	}
	if len(e.repo.cps) != cps || len(e.j.writes) != writes || len(e.corrections.cs) != 1 || decisionStatus(t, e, "a") != plan.Succeeded {
		t.Error("a refused correction changed something")
	}
	e.corrections.listErr = errors.New("db down")
	if _, err := e.cs.Correct(context.Background(), CorrectRequest{DecisionID: "a", Reason: "a too"}); !errors.Is(err, e.corrections.listErr) {
		t.Errorf("corrections unreadable: %v", err)
	}
}

// A surgical revert older than the corrected decision is not in the way: rolling back to the
// decision's checkpoint keeps it.
func TestCorrectAfterAnOlderSurgicalRevert(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	if _, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil)); err != nil {
		t.Fatal(err)
	}
	e.clock.t = e.clock.t.Add(60e9)
	if _, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b", "c")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.Correct(context.Background(), CorrectRequest{DecisionID: "c", Reason: "c", NoReexecute: true}); err != nil {
		t.Errorf("correcting c, run after the surgical revert: %v", err)
	}
}

func TestCorrectValidate(t *testing.T) {
	e := newUseCaseEnv(t)
	ranABC(t, e)
	e.exec.run = nil
	e.exec.results[""] = port.ExecResult{ExitCode: 4}
	res, err := correctB(e, func(r *CorrectRequest) { r.NoReexecute = true; r.Validate = "make test" })
	var vf *ValidationFailedError
	if !errors.As(err, &vf) || *vf.ExitCode != 4 || vf.Undo != checkpoint.ID(res.Correction.Params().SafetyCheckpointID) {
		t.Fatalf("err = %v", err)
	}
	// The correction stands: the workspace is left corrected, the correction recorded.
	if e.livePaths() != "a.txt" || len(e.corrections.cs) != 1 {
		t.Errorf("workspace %q, %d corrections", e.livePaths(), len(e.corrections.cs))
	}
	// Rolling back to the named checkpoint undoes it.
	if _, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(vf.Undo)}); err != nil || e.livePaths() != "a.txt b.txt c.txt" {
		t.Errorf("undo: %v, workspace %q", err, e.livePaths())
	}

	// Dry, nothing is validated.
	e = newUseCaseEnv(t)
	ranABC(t, e)
	calls := len(e.exec.calls)
	if _, err := correctB(e, func(r *CorrectRequest) { r.DryRun = true; r.Validate = "make test" }); err != nil {
		t.Errorf("dry: %v", err)
	}
	if len(e.exec.calls) != calls {
		t.Error("a dry correction ran the validation")
	}
}

func TestCorrectNamesAnUnknownPlan(t *testing.T) {
	e := newUseCaseEnv(t)
	ranABC(t, e)
	_, err := correctB(e, func(r *CorrectRequest) { r.Plan = "other" })
	if !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), `no plan "other"`) {
		t.Errorf("err = %v", err)
	}
	_, err = e.ps.StatusOf(context.Background(), "other")
	if !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), `no plan "other"`) {
		t.Errorf("status of an unknown plan: %v", err)
	}
}
