package objectstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// idxTable is one idx file kept as it is stored: its entries, sorted by hash and of fixed width,
// are looked up by binary search. Loading the index reads each idx file and checks only what
// slicing it relies on; the file is checked whole (its checksum, every entry's ranges and order,
// the delta bases: walkIdx) the first time the table is used for an answer: a lookup that finds
// an object in it, or a walk of all its entries (check). So a command pays for the idx files it
// uses, not for every idx of the store: an agent session's hooks, each a new process looking up a
// handful of objects, checked every idx of the store at each call, a cost that grew with the
// session.
//
// A miss needs no check: an entry that damage moved or spoilt can only hide an object, and what
// is not found is stored again, or reported (Store.missing checks every table first, so a read is
// refused as the damaged idx it is). A table whose check failed answers nothing and makes the
// store faulty (Store.Load) until a load no longer keeps it; everything that deletes or rewrites
// packs checks every table first (Store.refreshChecked).
//
// A table is immutable, like the file it was read from.
type idxTable struct {
	p       *packFile
	ents    []byte // n entries of idxEntryLen bytes, sorted by hash (once checked)
	bases   []byte // version 3: the base of each delta entry, in entry order
	n       int
	version uint32

	// raw is the idx file, where it is, and whether its checksum was verified on the way in; nil
	// for a table made from checked entries.
	raw    []byte
	where  string
	summed bool
	mu     sync.Mutex    // serialises the check
	state  atomic.Uint32 // tableUnchecked, tableSound or tableDamaged
	err    error         // the verdict, when damaged (written before state)

	// ranks[k] counts the delta entries among the first k*rankStride entries (version 3, set by
	// the check before it declares the table sound): a delta's base is found in a stride's scan
	// instead of a scan of every entry before it, which made each lookup through a large idx
	// (a first checkpoint's, a consolidated pack's) cost the size of the idx.
	ranks []uint32
}

// rankStride is how many entries one rank sample covers.
const rankStride = 64

const (
	tableUnchecked uint32 = iota
	tableSound
	tableDamaged
)

// newIdxTable returns the table of the idx file b (at where) of pack p, checked as far as its
// slicing needs; summed says its checksum was verified already.
func newIdxTable(p *packFile, b []byte, summed bool, where string) (*idxTable, error) {
	l, err := idxLayoutOf(b)
	if err != nil {
		return nil, err
	}
	return &idxTable{p: p, n: l.count, version: l.version, ents: l.ents, bases: l.bases, raw: b, where: where, summed: summed}, nil
}

// tableOf is the table of entries, sorted by hash without repeats (a pack scanned for want of its
// idx), of pack p: the idx they make, checked at once.
func tableOf(p *packFile, entries []idxEntry) (*idxTable, error) {
	t, err := newIdxTable(p, encodeIdx(entries, p.version), true, p.path)
	if err != nil {
		return nil, err
	}
	return t, t.check()
}

// check checks the idx file whole, once, and returns the verdict: an integrity fault naming the
// repair when it is damaged.
func (t *idxTable) check() error {
	if st := t.state.Load(); st != tableUnchecked {
		return t.failed()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state.Load() != tableUnchecked {
		return t.failed()
	}
	if t.raw != nil {
		if _, err := walkIdxSummed(t.raw, t.summed, nil); err != nil {
			t.err = fault.Wrap(fault.ErrIntegrity, err, idxCorrupt, t.where)
			t.state.Store(tableDamaged)
			return t.err
		}
	}
	t.ranks = t.countRanks()
	t.state.Store(tableSound)
	return nil
}

// failed is the table's fault, when a check found it damaged.
func (t *idxTable) failed() error {
	if t.state.Load() == tableDamaged {
		return t.err
	}
	return nil
}

// hashAt is the hash of entry i.
func (t *idxTable) hashAt(i int) []byte { return t.ents[i*idxEntryLen : i*idxEntryLen+32] }

// search returns the entry of h, if the table has one.
func (t *idxTable) search(h *tree.Hash) (int, bool) {
	lo, hi := 0, t.n
	for lo < hi {
		m := int(uint(lo+hi) >> 1) // #nosec G115 -- lo+hi is not negative
		switch c := bytes.Compare(t.hashAt(m), h[:]); {
		case c == 0:
			return m, true
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return 0, false
}

// entry decodes entry i (without its base), of a checked table (its ranges are).
func (t *idxTable) entry(i int) idxEntry {
	p := t.ents[i*idxEntryLen : (i+1)*idxEntryLen]
	var e idxEntry
	copy(e.hash[:], p[:32])
	e.kind = Kind(p[32])
	e.offset = int64(binary.BigEndian.Uint64(p[33:])) // #nosec G115 -- checked by the walk
	e.comp = int64(binary.BigEndian.Uint64(p[41:]))   // #nosec G115 -- as above
	e.raw = int64(binary.BigEndian.Uint64(p[49:]))    // #nosec G115 -- as above
	return e
}

func (t *idxTable) location(e *idxEntry) location {
	return location{pack: t.p, offset: e.offset, comp: e.comp, raw: e.raw, kind: e.kind}
}

// lookup returns where the table's pack holds h. A hit is answered from a checked table only: it
// returns the check's fault instead when the table is damaged.
func (t *idxTable) lookup(h *tree.Hash) (location, bool, error) {
	i, ok := t.search(h)
	if !ok {
		return location{}, false, nil
	}
	if err := t.check(); err != nil {
		return location{}, false, err
	}
	e := t.entry(i)
	return t.location(&e), true, nil
}

// base is the base of delta entry i as the idx names it (zero for an idx without bases): the
// rank of i among the delta entries, counted from the kind bytes (from the nearest rank sample
// the check took: only a checked table is asked), picks it from the list.
func (t *idxTable) base(i int) (tree.Hash, error) {
	var h tree.Hash
	if t.version < 3 {
		return h, nil
	}
	k := i / rankStride
	rank := int(t.ranks[k])
	for j := k * rankStride; j < i; j++ {
		if Kind(t.ents[j*idxEntryLen+32]).delta() {
			rank++
		}
	}
	if (rank+1)*len(h) > len(t.bases) {
		return h, errors.New("idx lists fewer delta bases than it has deltas")
	}
	copy(h[:], t.bases[rank*len(h):])
	return h, nil
}

// countRanks samples the delta entries' ranks every rankStride entries (see ranks); nil for an idx
// without bases.
func (t *idxTable) countRanks() []uint32 {
	if t.version < 3 {
		return nil
	}
	ranks := make([]uint32, 0, t.n/rankStride+1)
	var rank uint32
	for i := range t.n {
		if i%rankStride == 0 {
			ranks = append(ranks, rank)
		}
		if Kind(t.ents[i*idxEntryLen+32]).delta() {
			rank++
		}
	}
	return ranks
}

// delta returns the delta record of h, or nil when the pack holds h whole or not at all.
func (t *idxTable) delta(h tree.Hash) *deltaRec {
	i, ok := t.search(&h)
	if !ok || t.check() != nil {
		return nil
	}
	e := t.entry(i)
	if !e.kind.delta() {
		return nil
	}
	// The check matched the bases to the deltas one for one.
	base, _ := t.base(i)
	return &deltaRec{hash: e.hash, offset: e.offset, comp: e.comp, raw: e.raw, kind: e.kind, base: base}
}

// deltaRecs lists the table's delta records, sorted by hash, with the bases the idx names.
func (t *idxTable) deltaRecs() []deltaRec {
	if t.check() != nil {
		return nil
	}
	var out []deltaRec
	rank := 0
	for i := range t.n {
		if !Kind(t.ents[i*idxEntryLen+32]).delta() {
			continue
		}
		e := t.entry(i)
		d := deltaRec{hash: e.hash, offset: e.offset, comp: e.comp, raw: e.raw, kind: e.kind}
		if t.version >= 3 && (rank+1)*len(d.base) <= len(t.bases) {
			copy(d.base[:], t.bases[rank*len(d.base):])
		}
		rank++
		out = append(out, d)
	}
	return out
}
