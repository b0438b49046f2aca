package application

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/plan"
)

// ranTwoPlans runs plan p (a, b) and then plan q (x), which is then the current plan; it returns p.
func ranTwoPlans(t *testing.T, e *useCaseEnv) *plan.Plan {
	t.Helper()
	e.writes()
	res, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.runPlan(t, RunRequest{Name: "q", Decisions: defs("x")}); err != nil {
		t.Fatal(err)
	}
	return res.Plan
}

func statusIn(t *testing.T, e *useCaseEnv, planName, id string) plan.Status {
	t.Helper()
	p, err := e.plans.ByName(context.Background(), planName)
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Decision(id)
	if err != nil {
		t.Fatal(err)
	}
	return d.Status()
}

// The workspace is shared: a rollback past decisions of several plans reverts them all, names
// another plan's decisions plan/decision, and keeps the current plan current; undo gives them all
// their status back.
func TestRollbackAcrossPlans(t *testing.T) {
	e := newUseCaseEnv(t)
	p := ranTwoPlans(t, e)
	b, _ := p.Decision("b")
	res, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(latestOf(b).CheckpointID)})
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(res.RevertedDecisions)
	slices.Sort(got)
	if !slices.Equal(got, []string{"p/b", "x"}) {
		t.Errorf("reverted %v, want x (current plan q) and p/b", res.RevertedDecisions)
	}
	if statusIn(t, e, "p", "b") != plan.Reverted || statusIn(t, e, "q", "x") != plan.Reverted || statusIn(t, e, "p", "a") != plan.Succeeded {
		t.Error("statuses after the rollback")
	}
	if e.plans.current != "q" {
		t.Errorf("current plan %q, want q", e.plans.current)
	}

	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	if _, err := hs.Record(context.Background(), port.LoggedOperation{ID: res.OperationID, Kind: "rollback", Outcome: "ok", UndoCheckpoint: res.Backup.ID()}); err != nil {
		t.Fatal(err)
	}
	u, err := hs.Undo(context.Background(), UndoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got = slices.Clone(u.Restored)
	slices.Sort(got)
	if !slices.Equal(got, []string{"p/b", "x"}) {
		t.Errorf("undo restored %v", u.Restored)
	}
	if statusIn(t, e, "p", "b") != plan.Succeeded || statusIn(t, e, "q", "x") != plan.Succeeded || e.plans.current != "q" {
		t.Errorf("after undo: p/b %s, x %s, current %q", statusIn(t, e, "p", "b"), statusIn(t, e, "q", "x"), e.plans.current)
	}
}

// Every plan's live decisions keep their pre_decision checkpoints from a prune, named by plan.
func TestPruneProtectsEveryPlansDecisions(t *testing.T) {
	e := newUseCaseEnv(t)
	p := ranTwoPlans(t, e)
	a, _ := p.Decision("a")
	res, err := e.ms.Prune(context.Background(), PruneRequest{Keep: 0})
	if err != nil {
		t.Fatal(err)
	}
	why := res.Reasons[latestOf(a).CheckpointID]
	if !strings.Contains(why, "live decision p/a (attempt 1)") {
		t.Errorf("p/a's checkpoint kept for %q", why)
	}
	if _, err := e.repo.Get(context.Background(), latestOf(a).CheckpointID); err != nil {
		t.Errorf("p/a's checkpoint was pruned: %v", err)
	}
}
