package objectstore

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
)

// A delta whose chain runs through a pack that is gone is an integrity error naming the object
// read, from every reader, and it is not Present (a checkpoint stores it afresh).
func TestDeltaChainThroughAMissingPack(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(9, 9))
	t0 := dirTree(r, 35)
	t1 := editOne(r, t0)
	t2 := editOne(r, t1)
	var hs []tree.Hash
	base := tree.ZeroHash
	for _, tr := range []Tree{t0, t1, t2} {
		b := s.NewBatch()
		h, _ := putDelta(t, b, tr, base)
		commit(t, b)
		hs = append(hs, h)
		base = h
	}
	if !isDelta(s, hs[1]) || !isDelta(s, hs[2]) {
		t.Fatal("setup: not stored as deltas")
	}
	if err := os.Remove(s.index.at(hs[1]).pack.path); err != nil {
		t.Fatal(err)
	}
	// Another process sees the store without that pack (this one may still hold it open).
	s, err := Open(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.ReadTree(hs[2])
	faulttest.Require(t, err, fault.ErrIntegrity, "ReadTree through a missing pack")
	if !strings.Contains(err.Error(), hs[2].String()) {
		t.Fatalf("the error does not name the object read: %v", err)
	}
	faulttest.Require(t, s.CheckObject(hs[2], true), fault.ErrIntegrity, "CheckObject through a missing pack")
	if s.Present(hs[2]) {
		t.Fatal("a delta whose chain runs through a missing pack is Present")
	}
	mustReadTree(t, s, hs[0], t0)
}
