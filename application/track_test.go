package application

import (
	"context"
	"testing"
)

// TestDecisionCommandsTrackTheWorkspace: the commands that run decisions (run, exec, a
// correction's re-execution) have the snapshotter follow the workspace for their whole span, so
// every snapshot of a decision is taken while tracking, and tracking ends with the command.
func TestDecisionCommandsTrackTheWorkspace(t *testing.T) {
	e := newUseCaseEnv(t)
	e.writes()
	if _, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b", "c")}); err != nil {
		t.Fatal(err)
	}
	// Two snapshots per decision (its pre_decision checkpoint and its result), and the run's end.
	if e.snap.snaps != 7 || e.snap.tracked != 7 || e.snap.tracking != 0 {
		t.Fatalf("run: %d snapshots, %d tracked, tracking left %d", e.snap.snaps, e.snap.tracked, e.snap.tracking)
	}
	if _, err := e.ps.Exec(context.Background(), ExecRequest{ID: "x", Command: "x"}); err != nil {
		t.Fatal(err)
	}
	if e.snap.snaps != 10 || e.snap.tracked != 10 || e.snap.tracking != 0 {
		t.Fatalf("exec: %d snapshots, %d tracked, tracking left %d", e.snap.snaps, e.snap.tracked, e.snap.tracking)
	}

	// A rollback alone takes one snapshot: nothing to follow.
	rev, err := e.cs.RevertDecisions(context.Background(), CorrectRequest{DecisionID: "b", Reason: "r"})
	if err != nil {
		t.Fatal(err)
	}
	before, tracked := e.snap.snaps, e.snap.tracked
	if tracked != 10 {
		t.Errorf("the revert's safety checkpoint was tracked (%d tracked)", tracked)
	}
	if _, _, err := e.cs.ApplyCorrection(context.Background(), rev.Correction.ID(), CorrectRequest{}); err != nil {
		t.Fatal(err)
	}
	if n := e.snap.snaps - before; n == 0 || e.snap.tracked-tracked != n || e.snap.tracking != 0 {
		t.Fatalf("re-execution: %d snapshots, %d tracked, tracking left %d", n, e.snap.tracked-tracked, e.snap.tracking)
	}
}
