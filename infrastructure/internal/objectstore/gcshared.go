package objectstore

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/planhq/plan/domain/tree"
)

// SharedGCResult says what one collection of a shared store did (see marks.go for the protocol).
type SharedGCResult struct {
	// PacksDeleted were swept: condemned by a mark older than the grace period and still holding
	// nothing live. PacksKept were condemned but turned out live again (a writer came to rely on
	// them); they stay, and a later gc looks at them afresh.
	PacksDeleted, PacksKept int
	// PacksRewritten had their live records copied into new packs; PacksCondemned (those and the
	// packs with nothing live, crashed uploads among them once re-indexed) are named by the new
	// mark.
	PacksRewritten, PacksCondemned int
	// MarksSwept were processed and removed; MarksPending are younger than the grace period.
	MarksSwept, MarksPending int
	// BytesReclaimed is what the sweep deleted minus what the rewrite wrote.
	BytesReclaimed int64
	// LiveObjects is the size of the last live set computed.
	LiveObjects int
	// PacksReindexed had no idx and got one, written from their own records; PacksQuarantined
	// have none and cannot get one (not a pack, or damaged): no gc deletes them.
	PacksReindexed, PacksQuarantined int
	// ObjectsReencoded were stored again, before the mark, because their delta base is not live.
	ObjectsReencoded int
}

// LiveFunc returns the roots of a shared store's live set: roots, which MUST be readable (the
// collecting workspace's own, which no one else removes), and maybe, which another workspace's
// records name and which may vanish while the gc runs (that workspace pruned them and a gc of its
// own swept them) or belong to a pending record whose transaction failed. SharedGC calls it afresh
// for each phase, and reads the index again after it, so every object a record it returned
// references is indexed (a record is visible only after its objects are).
type LiveFunc func() (roots, maybe []tree.Hash, err error)

// liveSet computes the live set from live's roots, with an index at least as new as the records:
// the objects their trees name, without the delta bases (keeping adds those).
func (s *Store) liveSet(live LiveFunc) (map[tree.Hash]struct{}, []tree.Hash, error) {
	roots, maybe, err := live()
	if err != nil {
		return nil, nil, err
	}
	if err := s.reload(); err != nil {
		return nil, nil, err
	}
	set, err := s.reachable(roots, maybe, false)
	return set, roots, err
}

// SharedGC collects a shared store without any lock in common with its writers: it sweeps the
// marks at least grace old, then marks what is dead now (see marks.go). With grace zero it also
// sweeps the mark it just wrote, after computing the live set again. Only one SharedGC runs at a
// time in a process; two in different processes are safe (each sweep recomputes what is live),
// merely wasteful.
func (s *Store) SharedGC(live LiveFunc, grace time.Duration) (SharedGCResult, error) {
	var res SharedGCResult
	if !s.shared {
		return res, fmt.Errorf("gc: the store is not shared")
	}
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	if err := s.reload(); err != nil {
		return res, fmt.Errorf("gc (nothing was deleted): %w", err)
	}
	if err := s.CheckIndex(); err != nil {
		return res, fmt.Errorf("gc (nothing was deleted): %w", err)
	}
	now, err := s.be.Now()
	if err != nil {
		return res, fmt.Errorf("gc (nothing was deleted): %w", err)
	}
	// A pack without an idx cannot be accounted for: index it from its own records first, so its
	// objects are weighed against the live set like any other's (and a checkpoint whose pack lost
	// its idx reads again). What cannot be re-indexed is quarantined: never condemned, never
	// deleted.
	ri, err := s.Reindex(grace)
	if err != nil {
		return res, fmt.Errorf("gc (nothing was deleted): %w", err)
	}
	res.PacksReindexed, res.PacksQuarantined = len(ri.Reindexed), len(ri.Quarantined)
	s.mu.RLock()
	marks := slices.Clone(s.marks)
	s.mu.RUnlock()
	var due []mark
	for _, m := range marks {
		if grace <= 0 || now.Sub(m.at) >= grace {
			due = append(due, m)
		} else {
			res.MarksPending++
		}
	}
	if err := s.sweep(live, due, &res); err != nil {
		return res, err
	}
	name, err := s.condemn(live, grace, now, &res)
	if err != nil || name == "" || grace > 0 {
		if name != "" {
			res.MarksPending++
		}
		return res, err
	}
	if err := s.reload(); err != nil {
		return res, fmt.Errorf("gc: %w", err)
	}
	s.mu.RLock()
	var fresh []mark
	for _, m := range s.marks {
		if m.name == name {
			fresh = append(fresh, m)
		}
	}
	s.mu.RUnlock()
	return res, s.sweep(live, fresh, &res)
}

// sweep deletes the packs marks condemn that hold nothing live, and removes the marks. The live
// set is computed after every mark in marks was visible, which is what makes the deletion safe.
func (s *Store) sweep(live LiveFunc, marks []mark, res *SharedGCResult) error {
	if len(marks) == 0 {
		return nil
	}
	set, _, err := s.liveSet(live)
	if err != nil {
		return fmt.Errorf("gc: find live objects (nothing was deleted): %w", err)
	}
	res.LiveObjects = len(set)
	condemned := map[string]bool{}
	for _, m := range marks {
		for _, id := range m.packs {
			condemned[id] = true
		}
	}
	// Keep what is live, the chains of live deltas, and the base of every delta in a pack that
	// stays: those packs are not all eligible for deletion, so the plan's rule applies as is.
	keep, err := s.keeping(set)
	if err != nil {
		return fmt.Errorf("gc (nothing was deleted): %w", err)
	}
	drop, _, err := s.plan(keep, func(p *packFile) bool { return condemned[p.id] }, true)
	if err != nil {
		return err
	}
	// Only indexed packs are ever deleted: a pack without an idx (a mark written by an older
	// version may name one) holds objects no live set was weighed against, so it stays.
	dropped := map[string]bool{}
	for _, u := range drop {
		dropped[u.p.id] = true
	}
	pl, err := s.listPacks()
	if err != nil {
		return fmt.Errorf("gc (nothing was deleted): %w", err)
	}
	ids := make([]string, 0, len(dropped))
	for id := range dropped {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		p := s.packFileOf(id)
		res.BytesReclaimed += max(p.size, 0) + p.idxSize
	}
	// Kept are the condemned packs still there that the sweep leaves: a pack a mark names that is
	// already gone (an earlier sweep deleted it, then failed to remove the mark) is not one.
	orphan := make(map[string]bool, len(pl.orphans))
	for _, id := range pl.orphans {
		orphan[id] = true
	}
	for id := range condemned {
		if !dropped[id] && (orphan[id] || s.packFileOf(id) != nil) {
			res.PacksKept++
		}
	}
	if err := s.removePacks(s.dependentsFirst(ids)); err != nil {
		return err
	}
	res.PacksDeleted += len(ids)
	for _, m := range marks {
		if err := s.be.Remove(marksDir + "/" + m.name); err != nil {
			return fmt.Errorf("gc: remove the swept mark %s: %w", m.name, err)
		}
		res.MarksSwept++
	}
	return s.reload()
}

// dropDanglingIdx removes the idx files whose pack is gone and which name nothing keep holds. Such
// an idx is left by a writer whose commit was slower than the grace period: a sweep deleted its
// pack, still young and unreferenced, and the writer then uploaded the idx (its own confirmation
// copies what it relied on elsewhere). Nothing can be read through it and nothing live is in it:
// provable garbage. An idx naming a kept object stays, so that verify names what was lost.
func (s *Store) dropDanglingIdx(keep *gcLive, res *SharedGCResult) error {
	s.mu.RLock()
	dangling := map[*packFile]bool{}
	for _, p := range s.packs {
		if p.size < 0 {
			dangling[p] = true
		}
	}
	if len(dangling) > 0 {
		for h, l := range s.index.all() {
			if dangling[l.pack] && keep.has(h) {
				dangling[l.pack] = false
			}
		}
	}
	s.mu.RUnlock()
	removed := false
	for p, garbage := range dangling {
		if !garbage {
			continue
		}
		if err := s.be.Remove(idxName(p.id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("gc: remove the idx %s, whose pack is gone and holds nothing live: %w", p.id, err)
		}
		res.BytesReclaimed += p.idxSize
		removed = true
	}
	if !removed {
		return nil
	}
	return s.reload()
}

// keeping is what a shared gc keeps of live set: the set and the base chains of its deltas.
func (s *Store) keeping(set map[tree.Hash]struct{}) (*gcLive, error) {
	keep := &gcLive{s: s, live: set, extra: make(map[tree.Hash]struct{})}
	s.mu.RLock()
	for h, l := range s.index.all() {
		if _, ok := set[h]; ok && l.kind.delta() {
			keep.work = append(keep.work, h)
		}
	}
	s.mu.RUnlock()
	return keep, keep.closeChains(false)
}

// dependentsFirst orders the packs ids so that a pack holding a delta goes before the pack its
// base is read from, when both go: a sweep killed half-way then never leaves a delta whose base it
// already deleted (a shared store has no intent that readers skip, as gc-pending is for a private
// one). Packs that depend on each other (a cycle) keep their id order.
func (s *Store) dependentsFirst(ids []string) []string {
	going := make(map[string]bool, len(ids))
	for _, id := range ids {
		going[id] = true
	}
	// needs[q] counts the going packs that read a base from q and are still to be ordered.
	deps := map[string][]string{}
	needs := map[string]int{}
	for _, id := range ids {
		p := s.packFileOf(id)
		if p == nil {
			continue
		}
		seen := map[string]bool{}
		for i, ds := 0, p.deltaRecs(); i < len(ds); i++ {
			base, err := s.recordBase(p, &ds[i])
			if err != nil {
				continue
			}
			l, ok := s.lookup(base)
			if !ok || l.pack.id == id || !going[l.pack.id] || seen[l.pack.id] {
				continue
			}
			seen[l.pack.id] = true
			deps[id] = append(deps[id], l.pack.id)
			needs[l.pack.id]++
		}
	}
	out := make([]string, 0, len(ids))
	done := map[string]bool{}
	for len(out) < len(ids) {
		progress := false
		for _, id := range ids {
			if done[id] || needs[id] > 0 {
				continue
			}
			done[id], progress = true, true
			out = append(out, id)
			for _, q := range deps[id] {
				needs[q]--
			}
		}
		if !progress {
			for _, id := range ids {
				if !done[id] {
					done[id] = true
					out = append(out, id)
				}
			}
		}
	}
	return out
}

func (s *Store) packFileOf(id string) *packFile {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.packs[id]
}

// removePacks deletes packs of a shared store: each idx before its pack, so no reader finds an
// idx whose pack is gone for a reason other than a sweep in progress (which it reports as such
// only after looking again).
func (s *Store) removePacks(ids []string) error {
	s.mu.Lock()
	gone := map[*packFile]bool{}
	for _, id := range ids {
		if p, ok := s.packs[id]; ok {
			gone[p] = true
			delete(s.packs, id)
			s.retired = append(s.retired, p)
		}
	}
	s.index.dropPacks(gone)
	s.mu.Unlock()
	s.trust.forget()
	for i, id := range ids {
		for _, name := range []string{idxName(id), packName(id)} {
			if err := s.be.Remove(name); err != nil {
				return fmt.Errorf("gc: delete pack %s (the next gc finishes it): %w", id, err)
			}
		}
		if i == 0 {
			if err := s.hit("gc.deleted-one"); err != nil {
				return err
			}
		}
	}
	return s.be.Sync("packs")
}

// condemn is the mark phase: it rewrites the sparse packs among those older than grace, and
// writes a mark naming every such pack that then holds nothing live, plus the orphans older than
// grace. It returns the mark's name ("" when there was nothing to condemn).
func (s *Store) condemn(live LiveFunc, grace time.Duration, now time.Time, res *SharedGCResult) (string, error) {
	set, order, err := s.liveSet(live)
	if err != nil {
		return "", fmt.Errorf("gc: find live objects (nothing was condemned): %w", err)
	}
	res.LiveObjects = len(set)
	pl, err := s.listPacks()
	if err != nil {
		return "", err
	}
	s.mu.RLock()
	condemned := s.condemned
	s.mu.RUnlock()
	old := func(id string) bool {
		t, ok := pl.mtime[id]
		return ok && (grace <= 0 || now.Sub(t) >= grace) // no grace: whatever the clocks say
	}
	eligible := func(p *packFile) bool { return p.size >= 0 && !condemned[p.id] && old(p.id) }
	// The re-encoded copies are committed (pack and idx visible) before the mark is written, so
	// every sweep that may delete the old ones lists them; they are young, so no gc with a grace
	// period condemns them meanwhile, and one without prefers them (whole, or not condemned).
	re, err := s.reencode(set, order, eligible)
	if err != nil {
		return "", errReencode(err)
	}
	res.ObjectsReencoded += re.objects
	res.BytesReclaimed -= re.written
	keep, err := s.keeping(set)
	if err != nil {
		return "", fmt.Errorf("gc (nothing was condemned): %w", err)
	}
	if err := s.dropDanglingIdx(keep, res); err != nil {
		return "", err
	}
	drop, rewrite, err := s.plan(keep, eligible, false)
	if err != nil {
		return "", err
	}
	if len(rewrite) > 0 {
		written, _, err := s.rewrite(rewrite)
		if err != nil {
			return "", err
		}
		res.PacksRewritten += len(rewrite)
		res.BytesReclaimed -= written
		if err := s.hit("gc.rewritten"); err != nil {
			return "", err
		}
	}
	var ids []string
	for _, u := range slices.Concat(drop, rewrite) {
		ids = append(ids, u.p.id)
	}
	if len(ids) == 0 {
		return "", nil
	}
	slices.Sort(ids)
	name, err := s.writeMark(ids)
	if err != nil {
		return "", err
	}
	res.PacksCondemned += len(ids)
	if err := s.hit("gc.marked"); err != nil {
		return name, err
	}
	return name, s.reload()
}
