package checkpoint

import (
	"testing"
	"time"

	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/tree"
)

func lineageOf(t *testing.T, types ...Type) []*Checkpoint {
	t.Helper()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := make([]*Checkpoint, len(types))
	for i, typ := range types {
		at := base.Add(time.Duration(i) * time.Second)
		c, err := New(Params{ID: ident.New(at), Type: typ, CreatedAt: at, Root: tree.Sum([]byte{byte(i)})})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = c
	}
	return out
}

func TestSafetyTypes(t *testing.T) {
	for _, typ := range Types {
		want := typ == PreRollback || typ == PreCorrection || typ == PreRecover
		if typ.IsSafety() != want {
			t.Errorf("%s.IsSafety() = %v, want %v", typ, typ.IsSafety(), want)
		}
	}
}

func TestDerive(t *testing.T) {
	none := func(ID) (ID, bool) { return "", false }
	if l := Derive(nil, none); l.Head != "" || len(l.Parents) != 0 {
		t.Fatalf("empty history: %+v", l)
	}
	// a, b, pre_rollback of b (a rollback to a), c taken after it: c's parent is a, not the safety checkpoint.
	cs := lineageOf(t, Manual, Manual, PreRollback, Manual)
	a, b, s, c := cs[0].ID(), cs[1].ID(), cs[2].ID(), cs[3].ID()
	l := Derive(cs, func(backup ID) (ID, bool) { return a, backup == s })
	if l.Parents[a] != "" || l.Parents[b] != a || l.Parents[s] != b || l.Parents[c] != b || l.Head != c {
		t.Fatalf("parents %v head %s", l.Parents, l.Head)
	}
	// Right after the rollback the head is its target.
	if l := Derive(cs[:3], func(backup ID) (ID, bool) { return a, backup == s }); l.Head != a {
		t.Fatalf("after a rollback to a: head %s", l.Head)
	}
	// A safety checkpoint no rollback names (recovery's) leaves the newest non-safety one.
	if l := Derive(cs[:3], none); l.Head != b {
		t.Fatalf("unnamed safety checkpoint: head %s", l.Head)
	}
	// An undo of the rollback (its target the pre_rollback) stands on that one's parent.
	u := lineageOf(t, Manual, Manual, PreRollback, PreRollback)
	if l := Derive(u, func(backup ID) (ID, bool) {
		switch backup {
		case u[2].ID():
			return u[0].ID(), true
		case u[3].ID():
			return u[2].ID(), true
		}
		return "", false
	}); l.Head != u[1].ID() {
		t.Fatalf("after undo: head %s, want %s", l.Head, u[1].ID())
	}
	// A target deleted since: the newest non-safety checkpoint.
	if l := Derive(cs[:3], func(ID) (ID, bool) { return "gone", true }); l.Head != b {
		t.Fatalf("deleted target: head %s", l.Head)
	}
	// A clone: its only non-safety checkpoint is the clone, and the rollback to it made a safety
	// checkpoint of the empty directory.
	cl := lineageOf(t, Clone, PreRollback)
	if l := Derive(cl, func(ID) (ID, bool) { return cl[0].ID(), true }); l.Head != cl[0].ID() {
		t.Fatalf("clone: head %s", l.Head)
	}
	// A safety checkpoint with no non-safety parent (recovery in an empty workspace) rolled back to.
	only := lineageOf(t, PreRecover, PreRollback)
	if l := Derive(only, func(ID) (ID, bool) { return only[0].ID(), true }); l.Head != "" {
		t.Fatalf("no non-safety checkpoint: head %s", l.Head)
	}
}
