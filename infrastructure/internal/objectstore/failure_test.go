package objectstore

import (
	"bytes"
	"os"
	"testing"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// Write failures (here: tmp/ vanished) must fail the put, poison the batch, and leave nothing
// half-visible.
func TestWriteFailures(t *testing.T) {
	s := TestStore(t)
	os.RemoveAll(s.tmpDir)
	b := s.NewBatch()
	d := []byte("data")
	if _, err := b.PutBlob(bytes.NewReader(d), tree.Sum(d), 4); err == nil {
		t.Fatal("PutBlob without tmp/ succeeded")
	}
	big := testkit.Noise(1, largeBlob+1)
	if _, err := b.PutBlob(bytes.NewReader(big), tree.Sum(big), int64(len(big))); err == nil {
		t.Fatal("large PutBlob without tmp/ succeeded")
	}
	if err := b.Commit(); err == nil {
		t.Fatal("Commit of a failed batch succeeded")
	}
	b.Abort()
	if _, err := s.CleanTemp(); err == nil {
		t.Fatal("CleanTemp without tmp/ succeeded")
	}
	if s.Has(tree.Sum(d)) {
		t.Fatal("failed object visible")
	}
}

func TestCommitFailure(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	h, _ := put(t, b, []byte("data"))
	os.RemoveAll(s.packsDir)
	if err := b.Commit(); err == nil {
		t.Fatal("Commit without packs/ succeeded")
	}
	if s.Has(h) {
		t.Fatal("object visible after a failed commit")
	}
	b.Abort()
	if got := files(t, s.tmpDir); len(got) != 0 {
		t.Fatalf("Abort after failed Commit left %v", got)
	}
}

func TestUncachedDescriptors(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	small := text(1, 100)
	mid := text(2, 3*wholeRead)
	hs, _ := put(t, b, small)
	hm, _ := put(t, b, mid)
	commit(t, b)
	s.cachedFDs.Store(maxCachedFDs) // as if many packs were open already
	mustRead(t, s, hs, small)
	mustRead(t, s, hm, mid)
	if err := s.CheckObject(hm, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Info(tree.Hash{1}); ok {
		t.Fatal("Info of a missing object")
	}
}
