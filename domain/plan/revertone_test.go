package plan_test

import (
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

func TestRevertOne(t *testing.T) {
	p := newPlan(t, "a", "b", "c")
	run(t, p, "a", plan.Succeeded, 0)
	run(t, p, "b", plan.Failed, 10)
	run(t, p, "c", plan.Succeeded, 20)
	if err := p.RevertOne("b", "op1"); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]plan.Status{"a": plan.Succeeded, "b": plan.Reverted, "c": plan.Succeeded} {
		if got := latest(t, decision(t, p, id)); got.Status != want {
			t.Fatalf("%s is %s, want %s", id, got.Status, want)
		}
	}
	if got := latest(t, decision(t, p, "b")); got.RevertedBy != "op1" {
		t.Fatalf("reverted by %q", got.RevertedBy)
	}
	if err := p.RevertOne("b", "op1"); err != nil {
		t.Fatalf("again by the same operation (recovery): %v", err)
	}
	requireKind(t, p.RevertOne("b", "op2"), fault.ErrConflict, "reverting a reverted decision")
	p2 := newPlan(t, "x")
	requireKind(t, p2.RevertOne("x", "op"), fault.ErrConflict, "reverting a decision that never ran")
	requireKind(t, p2.RevertOne("nope", "op"), fault.ErrNotFound, "reverting an unknown decision")
}
