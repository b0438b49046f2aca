package objectstore

import (
	"cmp"
	"encoding/binary"
	"iter"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/planhq/plan/domain/tree"
)

// objIndex maps each object to the copy the store reads. It has two parts:
//
//   - tables, the idx files as loaded (idxTable: sorted, searched by binary search), in the order
//     load registered them. An object several of them list resolves to the copy better prefers,
//     weighing the damage and gc marks known when they were loaded (dmg, cond), as if each had
//     been put in turn: loading builds nothing, so a command pays for the objects it looks up, not
//     for every object of the store;
//   - an overlay: an open-addressing table over compact entries that hold no pointers, for what
//     was set after the load (a batch's new packs, gc's copies). An object in the overlay is
//     resolved there alone, dead or alive: it shadows the tables.
//
// A binary search in every table costs more than a probe of one hash table: a command that looks
// up many objects (a checkpoint that walks the workspace confirms every unchanged file Present), or
// goes through all of them (gc, verify, stats: all, len), merges tables and overlay into one full
// table (materialize), once, when its lookups pass what the merge costs (fullAfter). From then on
// the full table is the index: set and dropPacks keep it up to date, as they did the one table
// every command built before, and a long-lived process (plan watch) never merges again. The
// garbage collector never has to scan any part. It is guarded by Store.mu; materialize also by its
// own mutex, since readers holding Store.mu.RLock may call it at once.
//
// An overlay entry keeps its slot for the life of the index: deleting marks it dead, and setting
// the same hash again revives it, so lookups never meet a hole in a probe sequence.
type objIndex struct {
	packs []*packFile // pack number → pack
	slots map[*packFile]uint32
	last  uint32 // the pack number set last: loads set a pack's entries one after another
	ents  []ixEntry
	table []uint32 // 0: free; otherwise an index into ents, plus one
	live  int

	tables []*idxTable
	dmg    map[damageKey]struct{}
	cond   map[string]bool

	// onFault hears of a table whose check failed (Store.noteFault): it answers nothing more.
	onFault func(error)

	matMu   sync.Mutex
	full    atomic.Pointer[objIndex] // tables and overlay merged, then kept up to date (nil: not made)
	lookups atomic.Int64             // lookups that searched the tables
	entries int                      // the entries of the tables
}

// fullAfter is how many lookups search the tables before the index merges them into one table: a
// few dozen binary searches per table cost about what merging 64 entries does.
func (x *objIndex) fullAfter() int64 { return int64(64 + x.entries/64) }

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
	if f := x.full.Load(); f != nil {
		return f.get(h)
	}
	if e := x.table[x.find(&h)]; e != 0 {
		if x.ents[e-1].dead {
			return location{}, false
		}
		return x.location(&x.ents[e-1]), true
	}
	if len(x.tables) == 0 {
		return location{}, false
	}
	if x.lookups.Add(1) > x.fullAfter() {
		return x.materialize().get(h)
	}
	return x.inTables(&h)
}

// inTables resolves h in the tables: the copy better prefers, the first registered among equals.
func (x *objIndex) inTables(h *tree.Hash) (location, bool) {
	var cur location
	found := false
	for _, t := range x.tables {
		l, ok, err := t.lookup(h)
		if err != nil {
			x.fault(err)
			continue
		}
		if ok && (!found || better(*h, cur, l, x.dmg, x.cond)) {
			cur, found = l, true
		}
	}
	return cur, found
}

// fault passes on the fault of a damaged table.
func (x *objIndex) fault(err error) {
	if x.onFault != nil {
		x.onFault(err)
	}
}

// check checks every table (idxTable.check) and returns the first fault.
func (x *objIndex) check() error {
	var first error
	for _, t := range x.tables {
		if err := t.check(); err != nil {
			x.fault(err)
			first = cmp.Or(first, err)
		}
	}
	return first
}

func (x *objIndex) has(h tree.Hash) bool {
	_, ok := x.get(h)
	return ok
}

// set points h at l.
func (x *objIndex) set(h tree.Hash, l location) {
	if f := x.full.Load(); f != nil {
		f.set(h, l)
		return
	}
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

// dropPacks deletes every entry that points into one of gone, and the tables of gone.
func (x *objIndex) dropPacks(gone map[*packFile]bool) {
	if f := x.full.Load(); f != nil {
		f.dropPacks(gone)
	}
	tables := x.tables[:0:0]
	for _, t := range x.tables {
		if !gone[t.p] {
			tables = append(tables, t)
		}
	}
	x.tables = tables
	for i := range x.ents {
		e := &x.ents[i]
		if !e.dead && gone[x.packs[e.pack]] {
			e.dead = true
			x.live--
		}
	}
}

// materialize returns the index as one table without tables: x itself when it has none, else
// the tables put in turn, as load did before it kept them, then the overlay over them.
func (x *objIndex) materialize() *objIndex {
	if f := x.full.Load(); f != nil {
		return f
	}
	if len(x.tables) == 0 {
		return x
	}
	x.matMu.Lock()
	defer x.matMu.Unlock()
	if f := x.full.Load(); f != nil {
		return f
	}
	f := newObjIndex(len(x.ents) + x.entries)
	for _, t := range x.tables {
		if err := t.check(); err != nil {
			x.fault(err) // its entries are left out: the store is faulty until a load drops it
			continue
		}
		for i := range t.n {
			e := t.entry(i)
			f.put(e.hash, t.location(&e), func(prev, l location) bool { return better(e.hash, prev, l, x.dmg, x.cond) })
		}
	}
	for i := range x.ents {
		e := &x.ents[i]
		f.set(e.hash, x.location(e))
		if e.dead {
			f.kill(e.hash)
		}
	}
	x.full.Store(f)
	return f
}

// kill marks h's entry dead.
func (x *objIndex) kill(h tree.Hash) {
	if f := x.full.Load(); f != nil {
		f.kill(h)
		return
	}
	if e := x.table[x.find(&h)]; e != 0 && !x.ents[e-1].dead {
		x.ents[e-1].dead = true
		x.live--
	}
}

// all yields every indexed object and its location, in no particular order.
func (x *objIndex) all() iter.Seq2[tree.Hash, location] {
	return func(yield func(tree.Hash, location) bool) {
		if x == nil {
			return
		}
		x := x.materialize()
		for i := range x.ents {
			e := &x.ents[i]
			if !e.dead && !yield(e.hash, x.location(e)) {
				return
			}
		}
	}
}
