package objectstore

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// What a process once found present stays so only until its view loses something: the memo that
// spares a long-lived process re-checking every unchanged file never vouches for an object whose
// pack a gc dropped, another process removed, or whose copy was found damaged.
func TestTrustMemoNeverOutlivesWhatItSaw(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	b := s.NewBatch()
	keep, _ := put(t, b, testkit.Noise(1, 5000))
	commit(t, b)
	b = s.NewBatch()
	dropped, _ := put(t, b, testkit.Noise(2, 5000))
	commit(t, b)
	b = s.NewBatch()
	damaged, _ := put(t, b, testkit.Noise(3, 5000))
	commit(t, b)
	b = s.NewBatch()
	removed, _ := put(t, b, testkit.Noise(4, 5000))
	commit(t, b)
	for _, h := range []tree.Hash{keep, dropped, damaged, removed} {
		if !s.Present(h) || !s.trust.has(h) {
			t.Fatalf("%s: not present, or not remembered", h)
		}
	}
	// New packs keep the memo.
	b = s.NewBatch()
	put(t, b, testkit.Noise(5, 5000))
	commit(t, b)
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	if !s.trust.has(keep) {
		t.Fatal("a refresh that only found new packs emptied the memo")
	}
	// A gc drops the pack of an object no root keeps.
	if _, err := s.GC(set(keep, damaged, removed)); err != nil {
		t.Fatal(err)
	}
	if s.Present(dropped) {
		t.Fatal("an object whose pack gc deleted is still vouched for")
	}
	// Damage found in a copy.
	l, ok := s.index.get(damaged)
	if !ok {
		t.Fatal("lost the damaged object's location")
	}
	if !s.Present(damaged) {
		t.Fatal("setup: damaged object not present before its damage")
	}
	s.markDamaged(damaged, l)
	if s.Present(damaged) {
		t.Fatal("a copy marked damaged is still vouched for")
	}
	// Another process removed a pack (its idx and pack, as a gc elsewhere would).
	if !s.Present(removed) {
		t.Fatal("setup: the object to remove is not present")
	}
	rl, _ := s.index.get(removed)
	for _, name := range []string{idxName(rl.pack.id), packName(rl.pack.id)} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	if s.Present(removed) {
		t.Fatal("an object whose pack another process removed is still vouched for")
	}
	if !s.Present(keep) {
		t.Fatal("the kept object is no longer present")
	}
}

// A result computed on a view older than the last forget is not remembered.
func TestTrustMemoRefusesAStaleResult(t *testing.T) {
	var m trustMemo
	h := tree.Sum([]byte("x"))
	gen := m.generation()
	m.forget()
	m.note(h, gen)
	if m.has(h) {
		t.Fatal("a stale result was remembered")
	}
	m.note(h, m.generation())
	if !m.has(h) {
		t.Fatal("a current result was not remembered")
	}
	m.ok = make(map[tree.Hash]struct{}, trustMemoMax)
	for i := range trustMemoMax {
		var k tree.Hash
		k[0], k[1], k[2], k[3] = byte(i), byte(i>>8), byte(i>>16), 1
		m.ok[k] = struct{}{}
	}
	m.note(h, m.generation())
	if len(m.ok) != 1 || !m.has(h) {
		t.Fatalf("a full memo did not start again: %d entries", len(m.ok))
	}
}

func TestLostAny(t *testing.T) {
	pa, pb := &packFile{}, &packFile{}
	p := map[string]*packFile{"a": pa, "b": pb}
	d := map[damageKey]struct{}{{"a", tree.Hash{1}}: {}}
	c := map[string]bool{"a": true}
	for _, tc := range []struct {
		name string
		lost bool
		pa   map[string]*packFile
		da   map[damageKey]struct{}
		ca   map[string]bool
	}{
		{"the same view", false, p, d, c},
		{"a new pack, a healed copy", false, map[string]*packFile{"a": pa, "b": pb, "c": {}}, nil, c},
		{"a pack gone", true, map[string]*packFile{"a": pa}, d, c},
		{"a pack read again", true, map[string]*packFile{"a": pa, "b": {}}, d, c},
		{"new damage", true, p, map[damageKey]struct{}{{"a", tree.Hash{1}}: {}, {"b", tree.Hash{2}}: {}}, c},
		{"a pack condemned", true, p, d, map[string]bool{"a": true, "b": true}},
	} {
		if got := lostAny(p, tc.pa, d, tc.da, c, tc.ca); got != tc.lost {
			t.Errorf("%s: lost %v, want %v", tc.name, got, tc.lost)
		}
	}
}

// A batch's epoch lasts while the view loses nothing: new packs keep it, a lost object ends it;
// a store whose batches confirm each object they rely on (shared) offers none.
func TestBatchEpochEndsWhenTheViewLosesAnObject(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	gone, _ := put(t, b, testkit.Noise(1, 5000))
	commit(t, b)
	b = s.NewBatch()
	e1, ok := b.Epoch()
	if !ok || e1 == 0 {
		t.Fatalf("a local store's batch has no epoch: %d %v", e1, ok)
	}
	put(t, b, testkit.Noise(2, 5000))
	commit(t, b)
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	if e, _ := s.NewBatch().Epoch(); e != e1 {
		t.Fatalf("a new pack ended the epoch: %d, then %d", e1, e)
	}
	if _, err := s.GC(set()); err != nil { // keeps nothing: gone's pack goes
		t.Fatal(err)
	}
	if s.Present(gone) {
		t.Fatal("setup: gc kept the object")
	}
	if e, _ := s.NewBatch().Epoch(); e == e1 {
		t.Fatal("the epoch outlived a gc that dropped an object")
	}
	if e, _ := TestStore(t).NewBatch().Epoch(); e == e1 {
		t.Fatal("two stores share an epoch number")
	}
	shared := s.NewBatch()
	shared.relied = map[tree.Hash]struct{}{}
	if _, ok := shared.Epoch(); ok {
		t.Fatal("a batch that confirms what it relies on offered an epoch")
	}
}
