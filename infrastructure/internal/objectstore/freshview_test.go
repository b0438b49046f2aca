package objectstore

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// A long-lived process keeps what it read and wrote (the tree cache); the store on disk may lose
// it since. A delta is made against a kept base only while the base's records on disk still hold
// it; what another process learnt of the store (damage it recorded, an idx it repaired) is seen at
// the next refresh, as a new process would see it.

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// The record of a kept base (or one below it) damaged on disk since: the next version is stored
// whole, reads back, and the damage is noted.
func TestDeltaNeverOnADamagedKeptBase(t *testing.T) {
	for _, below := range []bool{false, true} {
		s := TestStore(t)
		v1 := randomBytes(t, 3000)
		b := s.NewBatch()
		h1, _ := put(t, b, v1)
		commit(t, b)
		base, damagedOne := h1, h1
		content := v1
		if below { // a delta kept in memory, over a damaged whole record
			content = append(bytes.Clone(v1), "a line\n"...)
			b = s.NewBatch()
			base, _ = putFrom(t, b, content, h1)
			commit(t, b)
			if recordDepth(t, s, base) != 1 {
				t.Fatal("the second version is not a delta")
			}
		}
		l, _ := s.lookup(base)
		if _, _, ok := s.trees.get(base, l); !ok {
			t.Fatal("the base is not kept in memory")
		}
		flip(t, s, damagedOne, 0.5)
		next := append(bytes.Clone(content), "another line\n"...)
		b = s.NewBatch()
		h, _ := putFrom(t, b, next, base)
		commit(t, b)
		if d := recordDepth(t, s, h); d != 0 {
			t.Fatalf("below=%v: stored as a delta of depth %d on a damaged chain", below, d)
		}
		mustRead(t, s, h, next)
		dl, _ := s.lookup(damagedOne)
		if _, known := s.damaged[damageKey{dl.pack.id, damagedOne}]; !known && !below {
			t.Fatal("the damage found was not noted")
		}
	}
}

// recordsIntact checks every record of a chain, large ones included (read in chunks), and says
// which one is damaged or missing.
func TestRecordsIntact(t *testing.T) {
	s := TestStore(t)
	v1 := randomBytes(t, 3*smallRecord)
	b := s.NewBatch()
	h1, _ := put(t, b, v1)
	commit(t, b)
	v2 := append(bytes.Clone(v1), randomBytes(t, 2*smallRecord)...) // an append: a large patch
	b = s.NewBatch()
	h2, _ := putFrom(t, b, v2, h1)
	commit(t, b)
	l2, _ := s.lookup(h2)
	if !l2.kind.delta() || l2.comp <= smallRecord {
		t.Fatalf("want a large delta record, got %v of %d bytes", l2.kind, l2.comp)
	}
	if err := s.recordsIntact(h2, l2); err != nil {
		t.Fatal(err)
	}
	flip(t, s, h1, 0.7)
	if err := s.recordsIntact(h2, l2); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a damaged base record: %v", err)
	}
	flip(t, s, h1, 0.7) // as it was
	flip(t, s, h2, 0.3)
	if err := s.recordsIntact(h2, l2); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a damaged delta record: %v", err)
	}
	flip(t, s, h2, 0.3)
	// The base's pack gone: the chain is broken.
	l1, _ := s.lookup(h1)
	if l1.pack == l2.pack {
		t.Fatal("want the two versions in two packs")
	}
	for _, p := range []string{packName(l1.pack.id), idxName(l1.pack.id)} {
		if err := os.Remove(filepath.Join(s.dir, filepath.FromSlash(p))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	l2, _ = s.lookup(h2)
	if err := s.recordsIntact(h2, l2); err == nil {
		t.Fatal("a chain without its base was taken as intact")
	}
}

// A small record cut short is refused, not read past.
func TestStoredIntactTruncated(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	h, _ := put(t, b, []byte("short content"))
	commit(t, b)
	l, _ := s.lookup(h)
	l.comp += 4 << 10 // the record claims more than the pack holds after it
	if _, err := s.storedIntact(h, l); err == nil {
		t.Fatal("a record past the pack's end was taken as intact")
	}
}

// Damage recorded by another process reaches a store whose packs did not change at its next
// refresh: the copy is no longer vouched for, and the store's epoch ends.
func TestRefreshSeesDamageRecordedElsewhere(t *testing.T) {
	dir := t.TempDir()
	s1, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	b := s1.NewBatch()
	h, _ := put(t, b, []byte("content another process finds damaged"))
	commit(t, b)
	epoch, _ := s1.NewBatch().Epoch()
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	l, _ := s2.lookup(h)
	s2.markDamaged(h, l)
	if !s1.Present(h) {
		t.Fatal("not present before the refresh")
	}
	if err := s1.Refresh(); err != nil {
		t.Fatal(err)
	}
	if s1.Present(h) {
		t.Fatal("a copy another process recorded damaged is still vouched for")
	}
	if e, _ := s1.NewBatch().Epoch(); e == epoch {
		t.Fatal("the epoch did not end")
	}
	// A damaged-object list that cannot be read is an error, not an empty list.
	p := filepath.Join(dir, filepath.FromSlash(damagedFile))
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s1.Refresh(); err == nil {
		t.Fatal("an unreadable damaged-object list was ignored")
	}
}

// An idx found damaged is refused at every refresh while it is the same file; once another
// process replaced it (plan doctor --repair), it is read again and the store serves.
func TestRefreshTakesARepairedIdx(t *testing.T) {
	dir, root, content := lazyFixture(t)
	idxs, _ := filepath.Glob(filepath.Join(dir, "packs", "*.idx"))
	good, err := os.ReadFile(idxs[0])
	if err != nil {
		t.Fatal(err)
	}
	corruptIdx(t, dir)
	s := openLazy(t, dir)
	if _, err := s.ReadTree(root); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("read over a damaged idx: %v", err)
	}
	if err := s.Refresh(); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("refresh over the same damaged idx: %v", err)
	}
	if err := os.Remove(idxs[0]); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idxs[0], good, 0o400); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(); err != nil {
		t.Fatalf("refresh after the repair: %v", err)
	}
	mustRead(t, s, tree.Sum(content), content)
	if _, err := s.ReadTree(root); err != nil {
		t.Fatal(err)
	}
}

// A copy an earlier read found damaged fails the check that does not read data too: verify
// without --read-data never calls a checkpoint sound that an earlier verify found damaged.
func TestCheckObjectKnowsRecordedDamage(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	h, _ := put(t, b, []byte("a copy found damaged"))
	commit(t, b)
	if err := s.CheckObject(h, false); err != nil {
		t.Fatal(err)
	}
	l, _ := s.lookup(h)
	s.markDamaged(h, l)
	if err := s.CheckObject(h, false); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a copy known damaged passed the check: %v", err)
	}
}
