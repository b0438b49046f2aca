package objectstore

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
)

// A delta whose own record header is damaged is found by the first read, which remembers the
// damage: from then on it is not Present, so the next checkpoint stores the tree afresh. (Its idx
// names its base, so Present itself reads nothing, as for an object stored whole.)
func TestDeltaWithDamagedHeaderIsNotPresent(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(14, 14))
	t0 := dirTree(r, 35)
	t1 := editOne(r, t0)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	commit(t, b)
	b = s.NewBatch()
	h1, _ := putDelta(t, b, t1, h0)
	commit(t, b)
	if !isDelta(s, h1) {
		t.Fatal("setup: not a delta")
	}
	flip(t, s, h1, -1)
	if _, err := s.ReadTree(h1); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("read of a delta with a damaged header: %v", err)
	}
	if s.Present(h1) {
		t.Fatal("a delta with a damaged header is Present")
	}
	if !s.NeedsCopy(h1) {
		t.Fatal("a delta with a damaged header needs no fresh copy")
	}
	b = s.NewBatch()
	if _, _, err := b.PutTree(t1); err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	mustReadTree(t, s, h1, t1)
	if !s.Present(h1) {
		t.Fatal("the fresh copy is not Present")
	}
}

// Two deltas that name each other as base (two batches racing) are never Present: the chain is
// followed only so far, and a checkpoint stores the tree afresh.
func TestDeltaCycleIsNotPresent(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(15, 15))
	t0 := dirTree(r, 35)
	t1 := editOne(r, t0)
	b1, b2 := s.NewBatch(), s.NewBatch()
	x, _ := putDelta(t, b1, t0, tree.ZeroHash)
	y, _ := putDelta(t, b1, t1, x)
	putDelta(t, b2, t1, tree.ZeroHash)
	putDelta(t, b2, t0, y)
	commit(t, b1)
	commit(t, b2)
	px, py := s.index.at(x).pack, s.index.at(y).pack
	s.index.set(x, py.delta(x).location(py))
	s.index.set(y, px.delta(y).location(px))
	if s.Present(x) || s.Present(y) {
		t.Fatal("a delta cycle is Present")
	}
	faulttest.Require(t, s.CheckObject(x, false), fault.ErrIntegrity, "CheckObject of a delta cycle")
}
