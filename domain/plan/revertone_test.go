package plan_test

import (
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
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
	faulttest.Require(t, p.RevertOne("b", "op2"), fault.ErrConflict, "reverting a reverted decision")
	p2 := newPlan(t, "x")
	faulttest.Require(t, p2.RevertOne("x", "op"), fault.ErrConflict, "reverting a decision that never ran")
	faulttest.Require(t, p2.RevertOne("nope", "op"), fault.ErrNotFound, "reverting an unknown decision")
}

// A redo marks again what an undone operation had reverted: each named decision's latest attempt
// that started before the operation, when it is finished; later attempts (a correction's
// re-executions) and unknown decisions are left alone.
func TestRerevert(t *testing.T) {
	p := newPlan(t, "a", "b", "c")
	run(t, p, "a", plan.Succeeded, 0)
	run(t, p, "b", plan.Failed, 10)
	run(t, p, "c", plan.Succeeded, 20)
	run(t, p, "b", plan.Succeeded, 40) // b's re-execution, after the operation (at 30)
	got := p.Rerevert([]string{"b", "c", "gone"}, at(30), "op1")
	if len(got) != 2 || got[0] != "b" || got[1] != "c" {
		t.Fatalf("changed %v, want [b c]", got)
	}
	b := decision(t, p, "b").Attempts()
	if b[0].Status != plan.Reverted || b[0].RevertedBy != "op1" || b[0].RevertedFrom != plan.Failed || b[1].Status != plan.Succeeded {
		t.Fatalf("b's attempts: %+v", b)
	}
	if latest(t, decision(t, p, "a")).Status != plan.Succeeded || latest(t, decision(t, p, "c")).RevertedBy != "op1" {
		t.Fatal("a was touched or c not reverted")
	}
	// Already reverted: not finished, left as it is.
	if again := p.Rerevert([]string{"c"}, at(30), "op2"); len(again) != 0 || latest(t, decision(t, p, "c")).RevertedBy != "op1" {
		t.Fatalf("re-reverted a reverted attempt: %v", again)
	}
}
