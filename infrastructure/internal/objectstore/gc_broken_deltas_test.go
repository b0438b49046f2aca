package objectstore

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// A dead delta in a pack GC keeps, whose base is gone from the store altogether (pack and idx
// deleted by hand), does not block GC: that chain cannot be read anyway, and the live objects next
// to it stay readable.
func TestGCWithADeadDeltaWhoseBaseIsGone(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(10, 10))
	t0 := dirTree(r, 35)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	commit(t, b)
	basePack := s.index.at(h0).pack
	b = s.NewBatch()
	h1, _ := putDelta(t, b, editOne(r, t0), h0)
	liveD := testkit.Noise(11, 50_000)
	live, _ := put(t, b, liveD)
	commit(t, b)
	if !isDelta(s, h1) {
		t.Fatal("setup: not a delta")
	}
	s.Close()
	for _, ext := range []string{".pack", ".idx"} {
		if err := os.Remove(filepath.Join(dir, "packs", basePack.id+ext)); err != nil {
			t.Fatal(err)
		}
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.GC(set(live)); err != nil {
		t.Fatalf("GC with a dead delta whose base is gone: %v", err)
	}
	mustRead(t, s, live, liveD)
}

// Problems counts every delta whose chain is broken, not only the first.
func TestProblemsCountsEveryBrokenDelta(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(12, 12))
	t0 := dirTree(r, 35)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	commit(t, b)
	b = s.NewBatch()
	d1, _ := putDelta(t, b, editOne(r, t0), h0)
	d2, _ := putDelta(t, b, editOne(r, t0), h0)
	commit(t, b)
	if !isDelta(s, d1) || !isDelta(s, d2) {
		t.Fatal("setup: not deltas")
	}
	s.index.del(h0) // as if its idx entry were lost
	got := strings.Join(s.Problems(), "\n")
	if !strings.Contains(got, "2 delta(s) cannot be rebuilt") {
		t.Fatalf("Problems: %s", got)
	}
}
