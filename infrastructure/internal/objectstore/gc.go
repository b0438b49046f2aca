package objectstore

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// GCResult says what a GC did. BytesReclaimed is the net change on disk (old files removed minus
// new packs written).
type GCResult struct {
	PacksDeleted, PacksRewritten int
	BytesReclaimed               int64
	// ObjectsReencoded were stored again because their delta base is not live (see reencode).
	ObjectsReencoded int
}

type packUse struct {
	p             *packFile
	live          []tree.Hash
	liveBytes     int64
	drop, rewrite bool
}

// planGC says, for the live set isLive, which packs go (no live object) and which are rewritten
// (live records fill less than half the file), each list in pack id order. Packs eligible rejects
// are neither (a shared store's young or already condemned packs); with keepLive, a pack holding
// anything live stays as it is (a sweep deletes, it does not rewrite).
func (s *Store) planGC(isLive func(tree.Hash) bool, eligible func(*packFile) bool, keepLive bool, forced map[*packFile]bool) (uses map[*packFile]*packUse, drop, rewrite []*packUse) {
	uses = make(map[*packFile]*packUse)
	s.mu.RLock()
	for _, p := range s.packs {
		uses[p] = &packUse{p: p}
	}
	for h, l := range s.index.all() {
		if isLive(h) {
			u := uses[l.pack]
			u.live = append(u.live, h)
			u.liveBytes += l.comp + maxRecordHeader
		}
	}
	s.mu.RUnlock()
	for _, u := range uses {
		switch {
		case eligible != nil && !eligible(u.p):
		case len(u.live) == 0:
			u.drop = true
			drop = append(drop, u)
		case !keepLive && u.p.size >= 0 && (2*u.liveBytes < u.p.size || forced[u.p]):
			u.rewrite = true
			rewrite = append(rewrite, u)
		}
	}
	byID := func(a, b *packUse) int { return strings.Compare(a.p.id, b.p.id) }
	slices.SortFunc(drop, byID)
	slices.SortFunc(rewrite, byID)
	return uses, drop, rewrite
}

// gcLive is the set GC keeps: what the caller named plus the delta bases that must stay with it.
type gcLive struct {
	s     *Store
	live  map[tree.Hash]struct{}
	extra map[tree.Hash]struct{}
	work  []tree.Hash // kept deltas whose base is still to be kept
}

func (g *gcLive) has(h tree.Hash) bool {
	if _, ok := g.live[h]; ok {
		return true
	}
	_, ok := g.extra[h]
	return ok
}

// add keeps h (when the store has it) and queues it if it is a delta.
func (g *gcLive) add(h tree.Hash) {
	if g.has(h) {
		return
	}
	l, ok := g.s.lookup(h)
	if !ok {
		return
	}
	g.extra[h] = struct{}{}
	if l.kind.delta() {
		g.work = append(g.work, h)
	}
}

// closeChains keeps the base chain of every queued delta. A delta whose base cannot be read for a
// reason other than damage fails it: GC would otherwise risk deleting that base. Damage (including
// a base the store no longer has) fails it only for chains of what the caller named live (strict):
// their content is lost, and GC says so; a dead chain that is damaged cannot be read anyway.
func (g *gcLive) closeChains(strict bool) error {
	for len(g.work) > 0 {
		h := g.work[len(g.work)-1]
		g.work = g.work[:len(g.work)-1]
		l, ok := g.s.lookup(h)
		if !ok {
			continue
		}
		base, err := g.s.cachedBase(h, l)
		if err != nil {
			if strict || !errors.Is(err, fault.ErrIntegrity) {
				return err
			}
			continue
		}
		if strict && !g.s.Has(base) {
			return damaged(h, l, "delta base %s is missing", base)
		}
		g.add(base)
	}
	return nil
}

// GC removes what live does not name: packs holding no live object are deleted, and packs whose
// live records fill less than half the file are rewritten into new packs first. Crash-safe at any
// point: new packs are durable before an old one goes, and an old pack's idx is removed before the
// pack, so a crash leaves either both files or a pack that Open re-indexes.
//
// A delta is never left without its base. A live delta whose base live does not name is first
// stored again (reencode), against a live base or whole, and committed before anything is planned;
// the chain of every live delta is then kept. A pack holding a delta record that is not kept (dead,
// or superseded by a re-encoded copy) and whose base nothing else keeps is rewritten without it
// (such a record would still be indexed after a reload, and a later put would trust it); the chain
// of every delta record in a pack that stays as it is is kept. The caller must hold the workspace
// lock and have no batch open.
func (s *Store) GC(live map[tree.Hash]struct{}) (GCResult, error) {
	return s.GCFrom(live, nil)
}

// GCFrom is GC of what roots, in order (oldest first), keep live: live names what their trees
// name (Referenced), and a kept object stored as a delta whose base live does not name is stored
// again first (see reencode), against the object at its path in the root before it when that
// pays, so that the base goes with the checkpoints that named it.
func (s *Store) GCFrom(live map[tree.Hash]struct{}, order []tree.Hash) (GCResult, error) {
	if s.shared {
		return GCResult{}, errors.New("gc: a shared store is collected by SharedGC, never under one workspace's lock")
	}
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	var res GCResult
	// Holding the lock, GC sees the store as it is (not as it was when it was opened), finishes an
	// interrupted GC and clears what killed writers left in tmp/.
	if err := s.refreshChecked(); err != nil {
		return res, fmt.Errorf("gc (nothing was deleted): %w", err)
	}
	keep := gcLive{s: s, live: live, extra: make(map[tree.Hash]struct{})}
	var lost []tree.Hash
	s.mu.RLock()
	for h, l := range s.index.all() {
		if _, ok := live[h]; !ok {
			continue
		}
		if l.pack.size >= 0 && !intact(h, l, nil) {
			lost = append(lost, h) // a missing pack's idx stays, so verify names what it lost
		}
		if l.kind.delta() {
			keep.work = append(keep.work, h)
		}
	}
	s.mu.RUnlock()
	if len(lost) > 0 {
		// Restic's prune refuses the same way: collecting around missing data could only make a
		// repair harder. `plan verify` names the checkpoints that need these objects.
		slices.SortFunc(lost, func(a, b tree.Hash) int { return bytes.Compare(a[:], b[:]) })
		return res, fault.Integrity("gc (nothing was deleted): %d live object(s) are in a pack cut short, e.g. %s: run `plan verify`",
			len(lost), lost[0])
	}
	// What a kept delta is rebuilt from is stored again when only pruned checkpoints referenced
	// it, so that it can go with them (see reencode); the live set's chains are then all live.
	re, err := s.reencode(live, order, nil)
	if err != nil {
		return res, errReencode(err)
	}
	res.ObjectsReencoded, res.BytesReclaimed = re.objects, -re.written
	if re.objects > 0 {
		keep.work = keep.work[:0]
		s.mu.RLock()
		for h, l := range s.index.all() {
			if _, ok := live[h]; ok && l.kind.delta() {
				keep.work = append(keep.work, h)
			}
		}
		s.mu.RUnlock()
	}
	if err := keep.closeChains(true); err != nil {
		return res, fmt.Errorf("gc (nothing was deleted): %w", err)
	}
	drop, rewrite, err := s.plan(&keep, nil, false)
	if err != nil {
		return res, err
	}
	if len(rewrite) > 0 {
		written, _, err := s.rewrite(rewrite)
		if err != nil {
			return res, err
		}
		res.PacksRewritten = len(rewrite)
		res.BytesReclaimed -= written
		if err := s.hit("gc.rewritten"); err != nil {
			return res, err
		}
	}
	gone := slices.Concat(drop, rewrite)
	if len(gone) == 0 {
		return res, nil
	}
	ps := make([]*packFile, len(gone))
	for i, u := range gone {
		ps[i] = u.p
		res.BytesReclaimed += max(u.p.size, 0) + u.p.idxSize
	}
	if err := s.retire(ps); err != nil {
		return res, fmt.Errorf("gc: %w", err)
	}
	res.PacksDeleted = len(drop)
	return res, nil
}

// plan decides which packs a collection drops and rewrites. A pack that stays as it is holds
// delta records that are not kept (dead, or superseded by a copy reencode wrote), and each is still
// indexed the next time the store is loaded: their bases must stay too. So a pack holding such a
// record whose base nothing else keeps is rewritten without it, when the collection may rewrite
// that pack; otherwise the base (and its chain) is kept. Keeping a base can change the plan (a pack
// to drop now holds a live object), so it plans again until nothing changes.
func (s *Store) plan(keep *gcLive, eligible func(*packFile) bool, keepLive bool) (drop, rewrite []*packUse, err error) {
	forced := map[*packFile]bool{}
	for {
		var uses map[*packFile]*packUse
		uses, drop, rewrite = s.planGC(keep.has, eligible, keepLive, forced)
		kept, rewrites := len(keep.extra), len(forced)
		for _, u := range uses {
			if u.rewrite || u.drop || u.p.size < 0 {
				continue // a missing pack's records cannot be read, nor rebuilt from their base
			}
			rewritable := !keepLive && (eligible == nil || eligible(u.p))
			for i, ds := 0, u.p.deltaRecs(); i < len(ds); i++ {
				base, err := s.recordBase(u.p, &ds[i])
				switch {
				case err == nil && !keep.has(base) && rewritable:
					forced[u.p] = true
				case err == nil:
					keep.add(base)
				case !errors.Is(err, fault.ErrIntegrity):
					return nil, nil, fmt.Errorf("gc (nothing was deleted): %w", err)
				}
				// A damaged record cannot be read anyway: it keeps nothing.
			}
		}
		if err := keep.closeChains(false); err != nil {
			return nil, nil, fmt.Errorf("gc (nothing was deleted): %w", err)
		}
		if len(keep.extra) == kept && len(forced) == rewrites {
			return drop, rewrite, nil
		}
	}
}

// retire takes packs out of the index and deletes them. One intent covers the whole set: a GC
// killed half-way leaves no pack whose deltas lost their bases in another pack, because every
// reader skips what the intent names and the next command that takes the lock finishes the
// deletion. Whatever the packs held must be elsewhere already (or be garbage).
func (s *Store) retire(ps []*packFile) error {
	if s.shared {
		// Other workspaces may be reading these packs, and no lock keeps them out: condemn them,
		// and let a gc sweep them once nothing depends on them.
		ids := make([]string, len(ps))
		for i, p := range ps {
			ids[i] = p.id
		}
		slices.Sort(ids)
		if _, err := s.writeMark(ids); err != nil {
			return err
		}
		return s.reload()
	}
	gone := make(map[*packFile]bool, len(ps))
	ids := make([]string, len(ps))
	s.mu.Lock()
	for i, p := range ps {
		gone[p], ids[i] = true, p.id
		delete(s.packs, p.id)
		s.retired = append(s.retired, p)
	}
	s.index.dropPacks(gone)
	s.mu.Unlock()
	s.trust.forget()
	return s.deletePacks(ids)
}

// rewrite copies the live records of packs into new packs, byte for byte (no recompression, and
// damage stays detectable because reads still check hashes), and commits them so the index points
// at the copies. It returns the bytes written and the packs.
func (s *Store) rewrite(uses []*packUse) (int64, int, error) {
	b := s.NewBatch()
	defer b.Abort()
	for _, u := range uses {
		locs := make([]location, len(u.live))
		s.mu.RLock()
		for i, h := range u.live {
			locs[i], _ = s.index.get(h)
		}
		s.mu.RUnlock()
		// Pack order, so the old pack is read front to back.
		order := make([]int, len(locs))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Compare(locs[a].offset, locs[b].offset) })
		for _, i := range order {
			if err := s.copyRecord(b, u.live[i], locs[i]); err != nil {
				return 0, 0, fmt.Errorf("gc: rewrite pack %s: %w", u.p.id, err)
			}
		}
	}
	if err := b.commit(true); err != nil {
		return 0, 0, fmt.Errorf("gc: %w", err)
	}
	var n int64
	for _, pw := range b.packs {
		n += pw.size + pw.idxSize
	}
	return n, len(b.packs), nil
}

func (s *Store) copyRecord(b *Batch, h tree.Hash, l location) error {
	f, release, err := s.openPack(l.pack)
	if err != nil {
		return fmt.Errorf("object %s: %w", h, err)
	}
	defer release()
	var hb [maxRecordHeader]byte
	dataAt, _, err := readHeader(f, h, l, hb[:])
	if err != nil {
		return err
	}
	e := l.entry(h)
	if l.kind.delta() {
		// The new idx names the base. One that cannot be read stays unknown: the copy of a damaged
		// record fails its trailer check below anyway, and a version 1 record has no trailer but
		// its readers check its content.
		e.base, _ = s.cachedBase(h, l)
	}
	_, err = b.append(e, func(w io.Writer) error {
		// The copy gets a fresh trailer: check the old one first, so damage is never blessed.
		cw := &crcWriter{w: w}
		n, err := io.Copy(cw, io.NewSectionReader(f, dataAt, l.comp))
		if err != nil {
			return unreadable(h, l, err, "copy")
		}
		if n != l.comp {
			return damaged(h, l, "record truncated (pack cut short)")
		}
		if trailerLen(l.pack.version) > 0 {
			var tb [recordTrailerLen]byte
			m, _ := f.ReadAt(tb[:], dataAt+l.comp)
			if err := checkTrailer(tb[:m], hb[:dataAt-l.offset], cw.sum); err != nil {
				return damaged(h, l, "%v", err)
			}
		}
		return nil
	})
	return err
}
