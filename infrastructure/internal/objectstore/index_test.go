package objectstore

import (
	"math/rand/v2"
	"testing"

	"github.com/planhq/plan/domain/tree"
)

// at is get for tests: the zero location when h is not indexed.
func (x *objIndex) at(h tree.Hash) location {
	l, _ := x.get(h)
	return l
}

// The index agrees with a map through inserts, overwrites, deletes, revivals, growth and the
// removal of a pack's entries.
func TestObjIndexAgreesWithAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	packs := []*packFile{{id: "a"}, {id: "b"}, {id: "c"}}
	x := newObjIndex(3)
	want := map[tree.Hash]location{}
	hashes := make([]tree.Hash, 500)
	for i := range hashes {
		fillHash(r, &hashes[i])
		if i%7 == 0 {
			hashes[i] = hashes[i-i%5] // some repeats
		}
		hashes[i][0] = byte(i % 3) // clustered probes
	}
	for step := range 20_000 {
		h := hashes[r.IntN(len(hashes))]
		switch op := r.IntN(10); {
		case op < 6:
			l := location{pack: packs[r.IntN(3)], offset: int64(step), comp: int64(r.IntN(100)), raw: 5, kind: Kind(1 + r.IntN(4))}
			x.set(h, l)
			want[h] = l
		case op < 9:
			x.del(h)
			delete(want, h)
		default:
			gone := map[*packFile]bool{packs[r.IntN(3)]: true}
			x.dropPacks(gone)
			for k, l := range want {
				if gone[l.pack] {
					delete(want, k)
				}
			}
		}
		if x.len() != len(want) {
			t.Fatalf("step %d: %d entries, want %d", step, x.len(), len(want))
		}
	}
	for _, h := range hashes {
		got, ok := x.get(h)
		w, wok := want[h]
		if ok != wok || got != w || x.has(h) != wok {
			t.Fatalf("%s: %+v %v, want %+v %v", h, got, ok, w, wok)
		}
	}
	n := 0
	for h, l := range x.all() {
		if want[h] != l {
			t.Fatalf("all yields %s at %+v, want %+v", h, l, want[h])
		}
		n++
	}
	if n != len(want) {
		t.Fatalf("all yields %d, want %d", n, len(want))
	}
	var nilIndex *objIndex
	if _, ok := nilIndex.get(hashes[0]); ok || nilIndex.len() != 0 || nilIndex.has(hashes[0]) {
		t.Fatal("a nil index is not empty")
	}
}

// del forgets h, as if its idx entry were lost (the store itself only drops whole packs).
func (x *objIndex) del(h tree.Hash) {
	if l, ok := x.get(h); ok {
		x.set(h, l) // into the overlay, which shadows the tables
		x.kill(h)
	}
}

// len is how many live objects x indexes (merging its tables, as gc and verify do).
func (x *objIndex) len() int {
	if x == nil {
		return 0
	}
	return x.materialize().live
}
