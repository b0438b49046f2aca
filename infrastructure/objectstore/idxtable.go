package objectstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"

	"github.com/planhq/plan/domain/tree"
)

// idxTable is one idx file kept as it is stored: its entries, sorted by hash and of fixed width,
// are looked up by binary search. Loading the index reads and checks each idx file (its checksum
// and every entry, as walkIdx does) but builds nothing from it, so a command that looks up a few
// objects pays for neither a table of every object nor the allocations of one: the cost of opening
// a store no longer grows with a hash table of everything it holds (an agent session's hooks read
// the same idx files call after call, and look up a handful of objects each).
//
// A table is immutable, like the file it was read from.
type idxTable struct {
	p       *packFile
	ents    []byte // n entries of idxEntryLen bytes, sorted by hash, checked when the table was made
	bases   []byte // version 3: the base of each delta entry, in entry order
	n       int
	version uint32
}

// newIdxTable checks the idx file b of pack p whole (walkIdx; summed says its checksum was
// verified already) and returns its table.
func newIdxTable(p *packFile, b []byte, summed bool) (*idxTable, error) {
	version, err := walkIdxSummed(b, summed, nil)
	if err != nil {
		return nil, err
	}
	n, _ := idxCount(b) // checked by the walk
	body := b[:len(b)-sha256.Size]
	return &idxTable{p: p, n: n, version: version,
		ents: body[idxHeaderLen : idxHeaderLen+n*idxEntryLen], bases: body[idxHeaderLen+n*idxEntryLen:]}, nil
}

// tableOf is the table of entries, sorted by hash without repeats (a pack scanned for want of its
// idx), of pack p: the idx they make, checked as any other.
func tableOf(p *packFile, entries []idxEntry) (*idxTable, error) {
	return newIdxTable(p, encodeIdx(entries, p.version), true)
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

// entry decodes entry i (without its base). The walk that made the table checked its ranges.
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

// lookup returns where the table's pack holds h.
func (t *idxTable) lookup(h *tree.Hash) (location, bool) {
	i, ok := t.search(h)
	if !ok {
		return location{}, false
	}
	e := t.entry(i)
	return t.location(&e), true
}

// base is the base of delta entry i as the idx names it (zero for an idx without bases): the
// rank of i among the delta entries, counted from the kind bytes, picks it from the list.
func (t *idxTable) base(i int) (tree.Hash, error) {
	var h tree.Hash
	if t.version < 3 {
		return h, nil
	}
	rank := 0
	for j := range i {
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

// delta returns the delta record of h, or nil when the pack holds h whole or not at all.
func (t *idxTable) delta(h tree.Hash) *deltaRec {
	i, ok := t.search(&h)
	if !ok {
		return nil
	}
	e := t.entry(i)
	if !e.kind.delta() {
		return nil
	}
	// The walk that made the table matched the bases to the deltas one for one.
	base, _ := t.base(i)
	return &deltaRec{hash: e.hash, offset: e.offset, comp: e.comp, raw: e.raw, kind: e.kind, base: base}
}

// deltaRecs lists the table's delta records, sorted by hash, with the bases the idx names.
func (t *idxTable) deltaRecs() []deltaRec {
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
