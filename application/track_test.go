package application

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
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

// plainSnap is a Snapshotter that cannot follow changes (no Track): every snapshot reads it all.
type plainSnap struct{ s *fakeSnap }

func (p plainSnap) Snapshot(ctx context.Context, pr port.Progress, also ...tree.Hash) (port.Snapshot, error) {
	return p.s.Snapshot(ctx, pr, also...)
}
func (p plainSnap) Scan(ctx context.Context, pr port.Progress) ([]tree.Entry, error) {
	return p.s.Scan(ctx, pr)
}
func (p plainSnap) OpenLive(path string) (io.ReadCloser, error) { return p.s.OpenLive(path) }

// A run on a snapshotter that cannot track changes records the same thing as one that can: each
// decision's pre_decision checkpoint, its own artifacts and result tree; only slower.
func TestRunWithoutChangeTracking(t *testing.T) {
	e := newUseCaseEnv(t)
	e.writes()
	if _, ok := any(plainSnap{e.snap}).(port.ChangeTracker); ok {
		t.Fatal("plainSnap must not be a ChangeTracker")
	}
	e.ops = NewOperations(OperationsParams{
		Checkpoints: e.repo, Plans: e.plans, Corrections: e.corrections, Snapshotter: plainSnap{e.snap}, Store: e.store,
		Locker: e.l, Journal: e.j, Restorer: e.r, Tx: e.tx, History: e.history, Clock: e.clock, Git: fakeGit{}, Metrics: e.metrics,
		Executor: e.exec, Archiver: e.archiver,
	})
	e.g = e.ops.guard
	e.ps = NewPlanService(e.ops)
	res, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b")})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Ran, []string{"a", "b"}) {
		t.Fatalf("ran %v", res.Ran)
	}
	for _, id := range []string{"a", "b"} {
		d, _ := res.Plan.Decision(id)
		a := latestOf(d)
		if d.Status() != plan.Succeeded || a.ResultTree.IsZero() || len(a.Artifacts) != 1 || a.Artifacts[0].Path != id+".txt" {
			t.Errorf("decision %s: status %s, attempt %+v", id, d.Status(), a)
		}
		cp, err := e.repo.Get(context.Background(), a.CheckpointID)
		if err != nil || cp.Type() != checkpoint.PreDecision || cp.DecisionID() != id {
			t.Errorf("pre_decision checkpoint of %s: %v %v", id, cp, err)
		}
	}
	if e.snap.snaps != 5 || e.snap.tracked != 0 {
		t.Errorf("%d snapshots (%d tracked), want 5 untracked: one before and one after each decision, and the run's end", e.snap.snaps, e.snap.tracked)
	}
}
