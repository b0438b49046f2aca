package objectstore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// HealReport says what RetireHealed did.
type HealReport struct {
	// Healed are objects whose damaged or missing copy was retired because an intact copy now
	// exists; Unhealed are damaged or missing objects that still have no intact copy.
	Healed, Unhealed []tree.Hash
	// Spent are damaged or missing bundles retired because none of their blobs is read from them
	// any more (each has a copy of its own): storage, neither healed nor lost.
	Spent []tree.Hash
	// PacksRewritten counts packs rewritten without their damaged records; IdxDropped the indexes
	// of missing packs dropped because every object they listed is stored elsewhere.
	PacksRewritten, IdxDropped int
}

// NeedsCopy reports whether h is known to the store but has no copy that can be trusted (damaged,
// or in a missing or cut-short pack): storing it afresh heals it.
func (s *Store) NeedsCopy(h tree.Hash) bool { return s.Has(h) && !s.Present(h) }

// RetireHealed removes damage that fresh copies made harmless, so that verify --read-data is clean
// again: a pack holding a damaged record whose object is now intact elsewhere is rewritten without
// it (its other records copied, trailers checked, as GC does), and the idx of a missing pack is
// dropped once everything it listed is intact elsewhere. Damage with no intact copy is left where
// it is and reported. The caller holds the workspace lock and has stored the fresh copies it could.
func (s *Store) RetireHealed() (HealReport, error) {
	var rep HealReport
	if err := s.refreshChecked(); err != nil {
		return rep, err
	}
	type packState struct {
		healed, blocked bool
	}
	state := map[*packFile]*packState{}
	healed := map[tree.Hash]bool{}
	unhealed := map[tree.Hash]bool{}
	s.mu.RLock()
	spent := s.spentBundles()
	spentSeen := map[tree.Hash]bool{}
	for k := range s.damaged {
		p := s.packs[k.pack]
		if p == nil {
			continue // the pack is gone: nothing left to retire
		}
		st := state[p]
		if st == nil {
			st = &packState{}
			state[p] = st
		}
		if l, ok := s.index.get(k.hash); ok && l.pack != p && intact(k.hash, l, s.damaged) {
			st.healed, healed[k.hash] = true, true
		} else if spent[k.hash] {
			st.healed, spentSeen[k.hash] = true, true // a bundle nothing is read from any more: it goes
		} else {
			st.blocked, unhealed[k.hash] = true, true
		}
	}
	var rewrite []*packUse
	for p, st := range state {
		if st.blocked || !st.healed || p.size < 0 {
			continue
		}
		u := &packUse{p: p}
		for h, l := range s.index.all() {
			if l.pack == p && !spent[h] {
				u.live = append(u.live, h)
			}
		}
		rewrite = append(rewrite, u)
	}
	var missing []*packFile
	for _, p := range s.packs {
		if p.size < 0 {
			missing = append(missing, p)
		}
	}
	s.mu.RUnlock()

	// A missing pack's idx can go once each object it lists is intact elsewhere.
	var dropIdx []*packFile
	for _, p := range missing {
		entries, _, err := s.readIdxFile(p.id)
		if err != nil {
			return rep, err
		}
		all := true
		for _, e := range entries {
			if spent[e.hash] {
				spentSeen[e.hash] = true // a bundle nothing is read from any more
				continue
			}
			l, ok := s.lookup(e.hash)
			if ok && l.pack != p && intact(e.hash, l, nil) {
				healed[e.hash] = true
				continue
			}
			all, unhealed[e.hash] = false, true
		}
		if all {
			dropIdx = append(dropIdx, p)
		}
	}

	slices.SortFunc(rewrite, func(a, b *packUse) int { return strings.Compare(a.p.id, b.p.id) })
	if len(rewrite) > 0 {
		if _, _, err := s.rewrite(rewrite); err != nil {
			return rep, fmt.Errorf("heal: %w", err)
		}
	}
	retire := dropIdx
	for _, u := range rewrite {
		retire = append(retire, u.p)
	}
	if len(retire) > 0 {
		if err := s.retire(retire); err != nil {
			return rep, fmt.Errorf("heal: %w", err)
		}
		if err := s.forgetDamage(retire); err != nil {
			return rep, err
		}
	}
	rep.PacksRewritten, rep.IdxDropped = len(rewrite), len(dropIdx)
	for h := range healed {
		if !unhealed[h] {
			rep.Healed = append(rep.Healed, h)
		}
	}
	for h := range unhealed {
		rep.Unhealed = append(rep.Unhealed, h)
	}
	for h := range spentSeen {
		rep.Spent = append(rep.Spent, h)
	}
	byHash := func(a, b tree.Hash) int { return bytes.Compare(a[:], b[:]) }
	slices.SortFunc(rep.Healed, byHash)
	slices.SortFunc(rep.Unhealed, byHash)
	slices.SortFunc(rep.Spent, byHash)
	return rep, nil
}

// spentBundles are the bundles (objects some bundled blob record names as its bundle) that no
// blob the index reads is read from any more: every blob of theirs has a copy of its own (a heal
// stored them afresh). s.mu is held.
func (s *Store) spentBundles() map[tree.Hash]bool {
	bundles := map[tree.Hash]bool{}
	for _, p := range s.packs {
		for _, d := range p.deltaRecs() {
			if d.kind == BundledBlobObject {
				bundles[d.base] = true
			}
		}
	}
	for h, l := range s.index.all() {
		if l.kind == BundledBlobObject {
			if d := l.pack.delta(h); d != nil && d.offset == l.offset {
				delete(bundles, d.base)
			}
		}
	}
	return bundles
}

func (s *Store) readIdxFile(id string) ([]idxEntry, uint32, error) {
	b, err := s.readIdxBytes(id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read idx %s: %w", s.be.Location(idxName(id)), err)
	}
	entries, version, err := decodeIdx(b)
	if err != nil {
		return nil, 0, fault.Wrap(fault.ErrIntegrity, err, "idx %s is corrupt", s.be.Location(idxName(id)))
	}
	return entries, version, nil
}

// forgetDamage drops the damage list's entries for retired packs.
func (s *Store) forgetDamage(retired []*packFile) error {
	gone := map[string]bool{}
	for _, p := range retired {
		gone[p.id] = true
	}
	return s.forget(func(k damageKey) bool { return gone[k.pack] })
}

// forgetIntact drops the damage list's entries for copies read intact from the store's own bytes
// (a mark left by a read that was cut short, or by damage of a local copy, before either was told
// apart from damage of the store).
func (s *Store) forgetIntact(keys []damageKey) error {
	s.mu.RLock()
	var stale map[damageKey]bool
	for _, k := range keys {
		if _, ok := s.damaged[k]; ok {
			if stale == nil {
				stale = map[damageKey]bool{}
			}
			stale[k] = true
		}
	}
	s.mu.RUnlock()
	if stale == nil {
		return nil
	}
	return s.forget(func(k damageKey) bool { return stale[k] })
}

// forget drops the damage list's entries drop selects: the list file is rewritten atomically
// without their lines, and their marker files are removed.
func (s *Store) forget(drop func(damageKey) bool) error {
	s.mu.Lock()
	var b strings.Builder
	var markers []string
	for k := range s.damaged {
		if drop(k) {
			delete(s.damaged, k)
			markers = append(markers, damagedDir+"/"+k.pack+"-"+k.hash.String())
			continue
		}
		fmt.Fprintf(&b, "%s %s\n", k.pack, k.hash)
	}
	s.mu.Unlock()
	for _, m := range markers {
		if err := s.be.Remove(m); err != nil {
			return fmt.Errorf("update the damaged-object list: %w", err)
		}
	}
	if _, err := s.be.ReadFile(damagedFile); errors.Is(err, fs.ErrNotExist) {
		return nil // the entries live only as markers (a store without appends)
	}
	if b.Len() == 0 {
		if err := s.be.Remove(damagedFile); err != nil {
			return fmt.Errorf("update the damaged-object list: %w", err)
		}
		return nil
	}
	if err := s.be.WriteFile(damagedFile, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("update the damaged-object list: %w", err)
	}
	return nil
}
