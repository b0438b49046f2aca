package objectstore

import (
	"encoding/binary"
	"iter"
	"math/bits"

	"github.com/planhq/plan/domain/tree"
)

// objIndex maps each object to the copy the store reads: an open-addressing table over compact
// entries that hold no pointers. Every command that touches objects builds one from the idx files
// (100,000 objects in a few milliseconds, where a Go map of locations took tens), and the garbage
// collector never has to scan it. It is guarded by Store.mu.
//
// An entry keeps its table slot for the life of the index: deleting marks it dead, and setting the
// same hash again revives it, so lookups never meet a hole in a probe sequence.
type objIndex struct {
	packs []*packFile // pack number → pack
	slots map[*packFile]uint32
	last  uint32 // the pack number set last: loads set a pack's entries one after another
	ents  []ixEntry
	table []uint32 // 0: free; otherwise an index into ents, plus one
	live  int
}

// ixEntry is location without its pointer.
type ixEntry struct {
	hash              tree.Hash
	offset, comp, raw int64
	pack              uint32
	kind              Kind
	dead              bool
}

// newObjIndex returns an empty index sized for n objects.
func newObjIndex(n int) *objIndex {
	x := &objIndex{slots: map[*packFile]uint32{}}
	x.ents = make([]ixEntry, 0, n)
	x.table = make([]uint32, tableSize(n))
	return x
}

// tableSize is a power of two at least twice n, so probe sequences stay short.
func tableSize(n int) int {
	return 1 << max(4, bits.Len(uint(2*n)))
}

func (x *objIndex) packNumber(p *packFile) uint32 {
	if int(x.last) < len(x.packs) && x.packs[x.last] == p {
		return x.last
	}
	if n, ok := x.slots[p]; ok {
		x.last = n
		return n
	}
	n := uint32(len(x.packs)) // #nosec G115 -- fewer packs than 2^32
	x.packs = append(x.packs, p)
	x.slots[p], x.last = n, n
	return n
}

// find returns the table slot of h: the one holding its entry, dead or alive, or the free one
// where it would go.
func (x *objIndex) find(h *tree.Hash) int {
	mask := uint64(len(x.table) - 1)                   // #nosec G115 -- the table is never empty (a power of two)
	i := int(binary.LittleEndian.Uint64(h[:8]) & mask) // #nosec G115 -- masked below the table's length
	for {
		e := x.table[i]
		if e == 0 || x.ents[e-1].hash == *h {
			return i
		}
		i = (i + 1) & int(mask) // #nosec G115 -- as above
	}
}

func (x *objIndex) location(e *ixEntry) location {
	return location{pack: x.packs[e.pack], offset: e.offset, comp: e.comp, raw: e.raw, kind: e.kind}
}

func (x *objIndex) get(h tree.Hash) (location, bool) {
	if x == nil {
		return location{}, false
	}
	e := x.table[x.find(&h)]
	if e == 0 || x.ents[e-1].dead {
		return location{}, false
	}
	return x.location(&x.ents[e-1]), true
}

func (x *objIndex) has(h tree.Hash) bool {
	if x == nil {
		return false
	}
	e := x.table[x.find(&h)]
	return e != 0 && !x.ents[e-1].dead
}

// set points h at l.
func (x *objIndex) set(h tree.Hash, l location) {
	ne := ixEntry{hash: h, offset: l.offset, comp: l.comp, raw: l.raw, pack: x.packNumber(l.pack), kind: l.kind}
	i := x.find(&h)
	if e := x.table[i]; e != 0 {
		if x.ents[e-1].dead {
			x.live++
		}
		x.ents[e-1] = ne
		return
	}
	if 2*(len(x.ents)+1) > len(x.table) {
		x.grow()
		i = x.find(&h)
	}
	x.ents = append(x.ents, ne)
	x.table[i] = uint32(len(x.ents)) // #nosec G115 -- the table would not fit in memory first
	x.live++
}

// put points h at l, unless h is indexed already and replace(prev, l) says the copy there stays.
func (x *objIndex) put(h tree.Hash, l location, replace func(prev, l location) bool) {
	if e := x.table[x.find(&h)]; e != 0 && !x.ents[e-1].dead && !replace(x.location(&x.ents[e-1]), l) {
		return
	}
	x.set(h, l)
}

func (x *objIndex) grow() {
	x.table = make([]uint32, 2*len(x.table))
	for j := range x.ents {
		x.table[x.find(&x.ents[j].hash)] = uint32(j + 1) // #nosec G115 -- as in set
	}
}

// dropPacks deletes every entry that points into one of gone.
func (x *objIndex) dropPacks(gone map[*packFile]bool) {
	for i := range x.ents {
		e := &x.ents[i]
		if !e.dead && gone[x.packs[e.pack]] {
			e.dead = true
			x.live--
		}
	}
}

func (x *objIndex) len() int {
	if x == nil {
		return 0
	}
	return x.live
}

// all yields every indexed object and its location, in no particular order.
func (x *objIndex) all() iter.Seq2[tree.Hash, location] {
	return func(yield func(tree.Hash, location) bool) {
		if x == nil {
			return
		}
		for i := range x.ents {
			e := &x.ents[i]
			if !e.dead && !yield(e.hash, x.location(e)) {
				return
			}
		}
	}
}
