package objectstore

import (
	"testing"
)

// countIdxHashes counts the idx checksums computed while the test runs.
func countIdxHashes(t *testing.T) *int {
	t.Helper()
	n := new(int)
	orig := idxHash
	idxHash = func(b []byte) [32]byte {
		*n++
		return orig(b)
	}
	t.Cleanup(func() { idxHash = orig })
	return n
}

// Opening a store through local copies (the S3 adapter's cache) hashes each idx once: the
// checksum that decides whether to read the store's own bytes is the one its check trusts. A
// local store hashes none at open, and each once when it is first checked.
func TestOpeningHashesEachIdxOnce(t *testing.T) {
	f := newFixture(t)
	idxs := 0
	s0, err := Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	idxs = len(s0.packs)
	_ = s0.Close()
	if idxs == 0 {
		t.Fatal("the fixture has no pack")
	}
	n := countIdxHashes(t)
	s, err := Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	if *n != 0 {
		t.Fatalf("local store: %d idx hashes at open; an idx is checked at its first use", *n)
	}
	for range 2 {
		if err := s.CheckIndex(); err != nil {
			t.Fatal(err)
		}
		if *n != idxs {
			t.Fatalf("local store: %d idx hashes for %d idx files", *n, idxs)
		}
	}
	_ = s.Close()
	*n = 0
	ls, _ := ldOpen(t, f)
	if err := ls.CheckIndex(); err != nil {
		t.Fatal(err)
	}
	if *n != idxs {
		t.Fatalf("through local copies: %d idx hashes for %d idx files", *n, idxs)
	}
}
