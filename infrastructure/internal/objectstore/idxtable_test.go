package objectstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// tableFor is the table of entries (sorted here) of a pack of version v.
func tableFor(t *testing.T, p *packFile, v uint32, entries []idxEntry) *idxTable {
	t.Helper()
	p.version = v
	tb, err := tableOf(p, sortEntries(entries))
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// A table answers as the entries it was made of: lookups, delta records with their bases (named
// by a version 3 idx, unknown in an older one), and the list of deltas.
func TestIdxTableAnswersAsItsEntries(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var entries []idxEntry
	for i := range 300 {
		e := idxEntry{kind: BlobObject, offset: int64(12 + 100*i), comp: 50, raw: 70}
		fillHash(r, &e.hash)
		if i%3 == 0 {
			e.kind = TreeDeltaObject
			fillHash(r, &e.base)
		}
		entries = append(entries, e)
	}
	for _, v := range []uint32{2, 3} {
		p := &packFile{id: "p", size: 1 << 20}
		tb := tableFor(t, p, v, append([]idxEntry(nil), entries...))
		deltas := 0
		for _, e := range entries {
			l, ok, err := tb.lookup(&e.hash)
			if err != nil || !ok || l.offset != e.offset || l.kind != e.kind || l.pack != p {
				t.Fatalf("v%d: lookup %s: %+v %v", v, e.hash, l, ok)
			}
			d := tb.delta(e.hash)
			if !e.kind.delta() {
				if d != nil {
					t.Fatalf("v%d: a whole object has a delta record", v)
				}
				continue
			}
			deltas++
			want := e.base
			if v < 3 {
				want = tree.Hash{}
			}
			if d == nil || d.base != want || d.offset != e.offset {
				t.Fatalf("v%d: delta %s: %+v, want base %s", v, e.hash, d, want)
			}
		}
		recs := tb.deltaRecs()
		if len(recs) != deltas {
			t.Fatalf("v%d: %d delta records, want %d", v, len(recs), deltas)
		}
		for i := 1; i < len(recs); i++ {
			if bytes.Compare(recs[i-1].hash[:], recs[i].hash[:]) >= 0 {
				t.Fatalf("v%d: delta records out of order", v)
			}
		}
		var missing tree.Hash
		fillHash(r, &missing)
		if _, ok, err := tb.lookup(&missing); err != nil || ok || tb.delta(missing) != nil {
			t.Fatalf("v%d: an object the table does not list was found", v)
		}
	}
}

// A table whose delta bases run short (a table not made by newIdxTable's walk) says so rather
// than read past them.
func TestIdxTableBaseRunsShort(t *testing.T) {
	e := idxEntry{hash: tree.Hash{9}, kind: BlobDeltaObject, offset: 12, comp: 5, raw: 5, base: tree.Hash{1}}
	tb := tableFor(t, &packFile{id: "p"}, 3, []idxEntry{e})
	tb.bases = nil
	if _, err := tb.base(0); err == nil {
		t.Fatal("a missing base was read")
	}
	if d := tb.delta(e.hash); d == nil || !d.base.IsZero() {
		t.Fatalf("delta without its base: %+v", d)
	}
	if recs := tb.deltaRecs(); len(recs) != 1 || !recs[0].base.IsZero() {
		t.Fatalf("delta records without bases: %+v", recs)
	}
}

// A damaged idx answers nothing: one whose layout is wrong makes no table; one damaged elsewhere
// (its checksum, an entry) makes a table that misses without a check, but is checked at its first
// hit and then answers with the fault, naming the repair, for that object and every other;
// entries a scan could not have produced make no table either.
func TestIdxTableRefusesDamage(t *testing.T) {
	h := tree.Hash{1}
	b := encodeIdx([]idxEntry{{hash: h, kind: BlobObject, offset: 12, comp: 5, raw: 5}}, packVersion)
	bad := bytes.Clone(b)
	bad[idxHeaderLen+40] ^= 1 // in the entry's offset
	tb, err := newIdxTable(&packFile{}, bad, false, "packs/x.idx")
	if err != nil {
		t.Fatalf("a layout that holds made no table: %v", err)
	}
	if _, ok, err := tb.lookup(&tree.Hash{2}); ok || err != nil || tb.failed() != nil {
		t.Fatalf("a miss was checked or found: %v %v", ok, err)
	}
	if _, ok, err := tb.lookup(&h); ok || !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "doctor --repair") || !strings.Contains(err.Error(), "packs/x.idx") {
		t.Fatalf("a hit in a damaged idx: found %v, %v", ok, err)
	}
	if tb.failed() == nil || tb.delta(h) != nil || tb.deltaRecs() != nil || tb.check() == nil {
		t.Fatal("a table found damaged still answers")
	}
	body := bytes.Clone(b[:len(b)-sha256.Size])
	binary.BigEndian.PutUint32(body[len(idxMagic):], 2)
	sum := sha256.Sum256(body)
	if _, err := newIdxTable(&packFile{}, append(body, sum[:]...), false, ""); err == nil {
		t.Fatal("an idx whose count disagrees made a table")
	}
	p := &packFile{version: packVersion}
	if _, err := tableOf(p, []idxEntry{{hash: tree.Hash{1}, kind: BlobObject, offset: 1}}); err == nil {
		t.Fatal("an entry before the pack's header made a table")
	}
}

// Objects several tables list resolve to the copy better prefers (a whole copy over a delta, a
// pack that exists over a missing one), the first registered among equals; the overlay shadows
// the tables; all, len and dropPacks see both.
func TestObjIndexResolvesAcrossTables(t *testing.T) {
	a, b, gone := &packFile{id: "a", size: 1 << 20}, &packFile{id: "b", size: 1 << 20}, &packFile{id: "g", size: -1}
	h1, h2, h3, h4 := tree.Hash{1}, tree.Hash{2}, tree.Hash{3}, tree.Hash{4}
	x := newObjIndex(0)
	x.tables = []*idxTable{
		tableFor(t, a, 3, []idxEntry{
			{hash: h1, kind: TreeDeltaObject, offset: 100, comp: 5, raw: 5, base: h2},
			{hash: h2, kind: TreeObject, offset: 200, comp: 5, raw: 5},
		}),
		tableFor(t, b, 3, []idxEntry{
			{hash: h1, kind: TreeObject, offset: 300, comp: 5, raw: 5},
			{hash: h2, kind: TreeObject, offset: 400, comp: 5, raw: 5},
		}),
		tableFor(t, gone, 3, []idxEntry{{hash: h3, kind: BlobObject, offset: 500, comp: 5, raw: 5}}),
	}
	tables := append([]*idxTable(nil), x.tables...)
	if l := x.at(h1); l.pack != b || l.offset != 300 {
		t.Errorf("h1 resolves to %+v, want the whole copy in b", l)
	}
	if l := x.at(h2); l.pack != a {
		t.Errorf("h2 resolves to %+v, want the first registered", l)
	}
	if l := x.at(h3); l.pack != gone {
		t.Errorf("h3 resolves to %+v, want its only copy", l)
	}
	x.set(h4, location{pack: a, offset: 600, kind: BlobObject})
	x.set(h2, location{pack: b, offset: 700, kind: TreeObject})
	if l := x.at(h2); l.offset != 700 {
		t.Errorf("the overlay does not shadow the tables: %+v", l)
	}
	first := x.len()
	if again := x.len(); first != 4 || again != 4 { // the second is the merge the first made
		t.Fatalf("len %d then %d, want 4", first, again)
	}
	x.del(h3)
	seen := map[tree.Hash]int64{}
	for h, l := range x.all() {
		seen[h] = l.offset
	}
	if len(seen) != 3 || seen[h1] != 300 || seen[h2] != 700 || seen[h4] != 600 {
		t.Fatalf("all: %v", seen)
	}
	// Merged (len and all did), the index drops a pack's entries as the one table did.
	x.dropPacks(map[*packFile]bool{b: true})
	if x.has(h1) || x.has(h2) || x.has(h3) || !x.has(h4) {
		t.Errorf("after b went: h1 %v h2 %v h3 %v h4 %v", x.has(h1), x.has(h2), x.has(h3), x.has(h4))
	}
	x.set(h1, location{pack: a, offset: 800, kind: TreeObject})
	if l := x.at(h1); l.offset != 800 || x.len() != 2 {
		t.Errorf("set after the merge: %+v, %d entries", l, x.len())
	}
	x.del(h1)
	if x.has(h1) {
		t.Error("del after the merge")
	}
	// Not merged, a dropped pack's table goes, and another copy answers.
	y := newObjIndex(0)
	y.tables = tables
	if l := y.at(h1); l.pack != b {
		t.Fatalf("h1 resolves to %+v, want the whole copy in b", l)
	}
	y.dropPacks(map[*packFile]bool{b: true})
	if l, ok := y.get(h1); !ok || l.pack != a || len(y.tables) != 2 {
		t.Errorf("after b went, h1 resolves to %+v %v, want the copy in a", l, ok)
	}
}

// Enough lookups merge the tables into one table, which answers from then on.
func TestObjIndexMergesAfterManyLookups(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	p := &packFile{id: "p", size: 1 << 20}
	var entries []idxEntry
	for i := range 100 {
		e := idxEntry{kind: BlobObject, offset: int64(12 + i), comp: 1, raw: 1}
		fillHash(r, &e.hash)
		entries = append(entries, e)
	}
	x := newObjIndex(0)
	tb := tableFor(t, p, 3, append([]idxEntry(nil), entries...))
	x.tables, x.entries = []*idxTable{tb}, tb.n
	for i := range int(x.fullAfter()) + 1 {
		if !x.has(entries[i%len(entries)].hash) {
			t.Fatal("an entry is missing")
		}
	}
	if x.full.Load() == nil {
		t.Fatal("the tables were not merged after many lookups")
	}
	var missing tree.Hash
	fillHash(r, &missing)
	if x.has(missing) || !x.has(entries[0].hash) || x.len() != 100 {
		t.Fatal("the merged index does not answer as the tables did")
	}
}

// A refresh keeps the tables of the packs that did not change and reads only the new idx files.
func TestRefreshKeepsUnchangedTables(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	put := func(s *Store, content string) tree.Hash {
		b := s.NewBatch()
		h := tree.Sum([]byte(content))
		if _, err := b.PutBlob(bytes.NewReader([]byte(content)), h, int64(len(content))); err != nil {
			t.Fatal(err)
		}
		commit(t, b)
		return h
	}
	h1 := put(other, "one")
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	before := append([]*idxTable(nil), s.index.tables...)
	s.mu.RUnlock()
	h2 := put(other, "two")
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	after := s.index.tables
	s.mu.RUnlock()
	if len(before) != 1 || len(after) != 2 {
		t.Fatalf("tables: %d then %d", len(before), len(after))
	}
	kept := false
	for _, tb := range after {
		kept = kept || tb == before[0]
	}
	if !kept {
		t.Error("the unchanged pack's idx was read again")
	}
	if !s.Present(h1) || !s.Present(h2) {
		t.Error("an object is missing after the refresh")
	}
}

// Readers looking objects up at once (as a walk's hashers do, under Store.mu.RLock) may merge the
// tables at once: one merge, every answer right.
func TestObjIndexMergesOnceUnderConcurrentLookups(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	p := &packFile{id: "p", size: 1 << 20}
	var entries []idxEntry
	for i := range 500 {
		e := idxEntry{kind: BlobObject, offset: int64(12 + i), comp: 1, raw: 1}
		fillHash(r, &e.hash)
		entries = append(entries, e)
	}
	x := newObjIndex(0)
	tb := tableFor(t, p, 3, append([]idxEntry(nil), entries...))
	x.tables, x.entries = []*idxTable{tb}, tb.n
	var wg sync.WaitGroup
	errs := make(chan tree.Hash, len(entries))
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(entries); i += 8 {
				if l, ok := x.get(entries[i].hash); !ok || l.offset != entries[i].offset {
					errs <- entries[i].hash
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for h := range errs {
		t.Errorf("%s was not found at its offset", h)
	}
	if x.full.Load() == nil {
		t.Error("500 lookups did not merge the tables")
	}
}
