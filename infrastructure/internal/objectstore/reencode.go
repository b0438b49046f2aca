package objectstore

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"

	"github.com/planhq/plan/domain/tree"
)

// Pruning a checkpoint frees what only it referenced, except the objects a kept one is rebuilt
// from: a file appended to at every checkpoint is stored as a chain of deltas, and the version a
// kept checkpoint holds is a delta against a version only pruned checkpoints held. Kept as a base,
// that version (and the chain below it, down to a whole copy) would live as long as the kept
// checkpoint. So a collection first re-encodes every live object whose delta base is not live: it
// stores it again, as a delta against a live object when one pays, or whole. After that every live
// delta's base is live, and nothing only pruned checkpoints referenced stays.
//
// The base it picks is the one a fresh store of the kept checkpoints would: the object at the same
// path in the root before (roots in the order the caller gives them, oldest first), or else the
// first live object down the old chain. Since chains restart from a whole copy every maxDeltaDepth
// deltas, pruning also leaves whole copies a fresh store would not have (the chain that reached its
// depth limit before them is gone): when it re-encodes anything, a collection also stores a live
// whole object again as a delta against its predecessor when the predecessor's new chain leaves
// room and the delta pays, as the writer would have. Depths are those of the new chains.
//
// Crash safety is the batch's: the new copies are durable and indexed (their pack and idx
// installed, packs/ fsync'd) before the collection plans what to delete, and until their old
// packs go a store holds two copies of each, each readable: the old delta's chain is still there
// (nothing is deleted before the new copies are durable), and the index prefers a whole copy. A
// shared store writes them before its mark, so every sweep that may delete the old ones lists them
// (see marks.go).

// reencodeResult says what reencode stored.
type reencodeResult struct {
	objects int
	written int64 // bytes of the packs and idx files written
}

// reencoding is what reencode decided for one object: its new base (zero: whole) and depth. ok is
// false while it is being decided, which is how a cycle is seen.
type reencoding struct {
	base  tree.Hash
	depth int
	ok    bool
	store bool // stored again (else it stays as it is)
}

// reencoder plans and writes one re-encoding.
type reencoder struct {
	s        *Store
	live     map[tree.Hash]struct{}
	eligible func(*packFile) bool
	must     map[tree.Hash]bool      // live deltas whose base is dead: re-encoded whatever it costs
	pred     map[tree.Hash]tree.Hash // an object's predecessor: the same path in the root before
	decided  map[tree.Hash]*reencoding
}

// reencode stores afresh every object of live indexed as a delta whose base live does not name
// (and whose copy is in a pack eligible admits; nil: any), and, when there is any, the live whole
// objects a delta against their predecessor in order now pays for (see above). Each is read
// through its old chain, which must be readable (the caller names it live: its loss is an error,
// as for GC). The new copies are committed, and the index points at them, before it returns.
func (s *Store) reencode(live map[tree.Hash]struct{}, order []tree.Hash, eligible func(*packFile) bool) (reencodeResult, error) {
	var res reencodeResult
	r := &reencoder{s: s, live: live, eligible: eligible, must: map[tree.Hash]bool{},
		pred: map[tree.Hash]tree.Hash{}, decided: map[tree.Hash]*reencoding{}}
	type item struct {
		h tree.Hash
		l location
	}
	var deltas []item
	s.mu.RLock()
	for h, l := range s.index.all() {
		if _, ok := live[h]; ok && l.kind.delta() && r.admits(l) {
			deltas = append(deltas, item{h, l})
		}
	}
	s.mu.RUnlock()
	// A bundle is no checkpoint's object: it lives as long as its blobs. While the live ones hold
	// half of it, it stays; below, they are stored again (whole, or against their predecessor) so
	// that it can go. A bundle the index lost counts as empty: its blobs are stored again.
	type bundledBlob struct{ h, bundle tree.Hash }
	var bundled []bundledBlob
	bundles := map[tree.Hash]int64{} // the live content of each bundle
	for _, it := range deltas {
		base, err := s.cachedBase(it.h, it.l)
		if err != nil {
			return res, err
		}
		if it.l.kind == BundledBlobObject {
			bundles[base] += it.l.raw
			bundled = append(bundled, bundledBlob{it.h, base})
			continue
		}
		if _, ok := live[base]; !ok {
			r.must[it.h] = true
		}
	}
	for _, b := range bundled {
		if bl, _ := s.lookup(b.bundle); 2*bundles[b.bundle] < bl.raw || bl.raw == 0 {
			r.must[b.h] = true
		}
	}
	if len(r.must) == 0 {
		return res, nil
	}
	for i := 1; i < len(order); i++ {
		if err := r.pair(order[i-1], order[i]); err != nil {
			return res, err
		}
	}
	// Every live object with a predecessor, and every one that must go, is decided; the
	// predecessors' encodings first, so depths are those of the new chains.
	cands := make([]tree.Hash, 0, len(r.must)+len(r.pred))
	for h := range r.must {
		cands = append(cands, h)
	}
	for h := range r.pred {
		if !r.must[h] {
			cands = append(cands, h)
		}
	}
	// In a fixed order: where decisions depend on each other (a cycle of bases), the outcome must
	// not depend on map iteration.
	slices.SortFunc(cands, func(a, b tree.Hash) int { return bytes.Compare(a[:], b[:]) })
	var todo []item
	for _, h := range cands {
		e, err := r.decide(h)
		if err != nil {
			return res, err
		}
		if e.store {
			l, _ := s.lookup(h)
			todo = append(todo, item{h, l})
		}
	}
	// Pack order, so each old pack is read front to back.
	slices.SortFunc(todo, func(a, b item) int {
		if c := cmp.Compare(a.l.pack.id, b.l.pack.id); c != 0 {
			return c
		}
		return cmp.Compare(a.l.offset, b.l.offset)
	})
	b := s.NewBatch()
	defer b.Abort()
	for _, it := range todo {
		stored, err := r.write(b, it.h, it.l)
		if err != nil {
			return res, err
		}
		if stored {
			res.objects++
		}
	}
	if err := b.commit(true); err != nil {
		return res, err
	}
	for _, pw := range b.packs {
		res.written += pw.size + pw.idxSize
	}
	return res, s.hit("gc.reencoded")
}

// admits says whether the copy at l may be re-encoded: its pack is there (a missing pack's objects
// cannot be read; GC keeps their chains, and verify names what was lost), and the collection may
// rewrite it.
func (r *reencoder) admits(l location) bool {
	return l.pack.size >= 0 && l.raw <= maxDeltaObject && (r.eligible == nil || r.eligible(l.pack))
}

// pair notes, for every object of root cur that differs from the object at its path in prev (a
// file's content, a directory's listing, cur itself), that one as its predecessor. Only changed
// directories are read. The first predecessor noted for an object stays.
func (r *reencoder) pair(prev, cur tree.Hash) error {
	if prev == cur || prev.IsZero() || cur.IsZero() {
		return nil
	}
	r.note(prev, cur)
	a, err := r.s.ReadTree(prev)
	if err != nil {
		return err
	}
	b, err := r.s.ReadTree(cur)
	if err != nil {
		return err
	}
	old := make(map[string]TreeEntry, len(a))
	for _, e := range a {
		old[e.Name] = e
	}
	for _, e := range b {
		o, ok := old[e.Name]
		if !ok || o.Hash == e.Hash || o.Kind != e.Kind {
			continue
		}
		switch e.Kind {
		case tree.KindFile:
			r.note(o.Hash, e.Hash)
		case tree.KindDir:
			if err := r.pair(o.Hash, e.Hash); err != nil {
				return err
			}
		}
	}
	return nil
}

// note records prev as cur's predecessor, unless cur already has one or is prev's own (a state
// that comes back, as r1, r2, r1: the older one stays the base, never a delta of its successor).
func (r *reencoder) note(prev, cur tree.Hash) {
	_, pl := r.live[prev]
	_, cl := r.live[cur]
	_, seen := r.pred[cur]
	if back, ok := r.pred[prev]; pl && cl && !seen && (!ok || back != cur) {
		r.pred[cur] = prev
	}
}

// decide returns the new encoding of live object h. An object that need not be re-encoded keeps
// its own (a delta's depth is then its live base's plus one); one that must is encoded against its
// predecessor, else the first live object down its old chain, when that object's new chain leaves
// room and the delta pays, else whole; a whole one with a predecessor becomes a delta when that
// pays. A base whose decision leads back to h (a cycle) is not used.
func (r *reencoder) decide(h tree.Hash) (*reencoding, error) {
	if e, ok := r.decided[h]; ok {
		return e, nil
	}
	e := &reencoding{}
	r.decided[h] = e
	l, ok := r.s.lookup(h)
	if !ok {
		e.ok = true // not indexed: nothing to decide (GC reports a missing live object)
		return e, nil
	}
	if !r.must[h] && (l.kind.delta() || !r.admits(l)) {
		// Stays as it is: a delta whose base is live (decided first, for its depth), or a copy
		// this collection may not rewrite.
		if l.kind.delta() {
			base, err := r.s.cachedBase(h, l)
			if err != nil {
				return nil, err
			}
			be, err := r.decide(base)
			if err != nil {
				return nil, err
			}
			if !be.ok {
				return e, nil // its base is being decided: it is no base for anything (a cycle)
			}
			e.depth = be.depth + 1
		}
		e.ok = true
		return e, nil
	}
	var bases []tree.Hash
	if p, ok := r.pred[h]; ok {
		bases = append(bases, p)
	}
	if r.must[h] {
		lb, err := r.liveBase(h, l)
		if err != nil {
			return nil, err
		}
		if !lb.IsZero() {
			bases = append(bases, lb)
		}
	}
	for _, base := range bases {
		be, err := r.decide(base)
		if err != nil {
			return nil, err
		}
		if be.ok && be.depth < maxDeltaDepth {
			e.base, e.depth = base, be.depth+1
			break
		}
	}
	// A whole object with no usable base stays whole, as it is; one that must go is stored whole.
	e.store = r.must[h] || !e.base.IsZero()
	e.ok = true
	return e, nil
}

// liveBase returns the first live object down the old delta chain of h (at l), below its own
// dead base; zero when there is none before the chain's whole copy.
func (r *reencoder) liveBase(h tree.Hash, l location) (tree.Hash, error) {
	cur, cl := h, l
	for range maxDeltaChain {
		base, err := r.s.cachedBase(cur, cl)
		if err != nil {
			return tree.Hash{}, err
		}
		if _, ok := r.live[base]; ok && base != h {
			return base, nil
		}
		bl, ok := r.s.lookup(base)
		if !ok || !bl.kind.delta() {
			break
		}
		cur, cl = base, bl
	}
	return tree.Hash{}, nil
}

// write stores h (at l) as decided: a delta against its new base when the delta pays, whole
// otherwise, except that a whole object that is not needed stays as it is (stored is then false).
func (r *reencoder) write(b *Batch, h tree.Hash, l location) (stored bool, err error) {
	e := r.decided[h]
	raw, _, err := r.s.readChain(h, l, nil)
	if err != nil {
		return false, err
	}
	kind := l.kind.object()
	var data []byte
	if !e.base.IsZero() {
		bl, ok := r.s.lookup(e.base)
		if !ok {
			return false, r.s.missing(e.base)
		}
		baseRaw, _, err := r.s.readChain(e.base, bl, nil)
		if err != nil {
			return false, err
		}
		if kind != BlobObject || worthDelta(raw, baseRaw) {
			d, err := encodeWithDict(raw, baseRaw, appendDeltaPrefix(nil, e.base, e.depth))
			if err != nil {
				return false, err
			}
			data = d
		}
	}
	c, err := sharedCodec()
	if err != nil {
		return false, err
	}
	whole := c.enc.EncodeAll(raw, nil)
	entry := idxEntry{hash: h, kind: kind, raw: int64(len(raw))}
	if data != nil && pays(kind, len(data), len(whole)) {
		entry.kind, entry.base = deltaOf(kind), e.base
	} else if !r.must[h] {
		return false, nil // whole already, and a delta does not pay: it stays
	} else {
		data = whole
	}
	entry.comp = int64(len(data))
	_, err = b.append(entry, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("re-encode %s: %w", h, err)
	}
	return true, nil
}

// errReencode wraps a failure of the re-encoding step: nothing was deleted.
func errReencode(err error) error {
	return fmt.Errorf("gc: re-encode what kept checkpoints need (nothing was deleted): %w", err)
}
