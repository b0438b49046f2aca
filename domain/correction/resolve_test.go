package correction_test

import (
	"testing"

	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
)

// A surgical correction with conflicts needs attention until every one is resolved; its shown
// status says so instead of "succeeded".
func TestResolveConflicts(t *testing.T) {
	p := validParams()
	p.Scope = p.Scope[:1]
	p.Conflicts = []correction.Conflict{{Path: "a", Why: "overlap", Written: "a"}, {Path: "b", Why: "deleted", Written: "b.reverted"}}
	c, err := correction.NewSurgical(p, at(5))
	if err != nil {
		t.Fatal(err)
	}
	if c.ShownStatus() != "needs_attention" || len(c.Unresolved()) != 2 {
		t.Fatalf("before: %s, %v", c.ShownStatus(), c.Unresolved())
	}
	if err := c.Resolve("a", at(6)); err != nil {
		t.Fatal(err)
	}
	faulttest.Require(t, c.Resolve("a", at(7)), fault.ErrNotFound, "resolving a resolved conflict")
	faulttest.Require(t, c.Resolve("zzz", at(7)), fault.ErrNotFound, "resolving a path without conflict")
	if !c.NeedsAttention() || len(c.Unresolved()) != 1 || c.Unresolved()[0].Path != "b" || !c.Params().Conflicts[0].ResolvedAt.Equal(at(6)) {
		t.Fatalf("after a: %+v", c.Params().Conflicts)
	}
	if err := c.Resolve("b", at(8)); err != nil {
		t.Fatal(err)
	}
	if c.NeedsAttention() || c.ShownStatus() != "succeeded" {
		t.Fatalf("after b: %s", c.ShownStatus())
	}
	// A reverted correction shows its own status whatever its conflicts.
	p.Command = "fix"
	r, err := correction.NewSurgical(p, at(5))
	if err != nil || r.ShownStatus() != "reverted" {
		t.Fatalf("%v %v", r.ShownStatus(), err)
	}
}
