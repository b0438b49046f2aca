package objectstore

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/planhq/plan/domain/tree"
)

// Every write of a private store is a pack (a checkpoint, a hook's pre_decision snapshot, a
// decision's result), and every later command that reads an object lists the packs and reads each
// one's idx. An agent session of a few thousand tool calls would leave thousands of small packs, and
// each call would cost more than the one before. Consolidation keeps the number of packs
// logarithmic in the store's size, as git's geometric repack does: when there are consolidateAt or
// more small packs, the ones below the largest that already form a progression (each at least twice
// the one below it) are copied into one new pack (see mergeRun). Each merge at least doubles what
// it writes over its largest input, so every byte is copied O(log n) times over the store's life,
// and the packs left form a progression where each is larger than twice the ones below it.
//
// Invariants:
//   - consolidation copies and never decides: every record the index points at in a merged pack is
//     copied byte for byte (its trailer checked first, so damage is never blessed), nothing is
//     judged live or dead (that is gc's job), and the index points at the copies before an old
//     pack goes. Records of a merged pack that the index does not point at are copies of objects
//     stored elsewhere, and go with it;
//   - the new pack and its idx are durable before an old idx or pack is removed, and the old ones
//     go through the same intent as gc's deletions: a crash at any point leaves every object
//     readable (at worst twice, which the next consolidation or gc removes);
//   - only the workspace lock's holder consolidates (it writes the store), and only a private
//     store: a shared store's packs are read by other workspaces under no lock this one holds, so
//     only its gc, in two phases, removes any;
//   - packs of consolidateMaxBytes or more are never merged: a consolidation costs a small,
//     bounded copy, not a rewrite of the store's first checkpoint.
const (
	consolidateAt       = 16
	consolidateMaxBytes = 32 << 20
	consolidateFactor   = 2
)

// Consolidation says what one Consolidate did.
type Consolidation struct {
	// PacksMerged were copied into PacksWritten new packs and removed; BytesWritten is the size
	// of the new packs and their idx files, BytesRemoved of the old ones.
	PacksMerged, PacksWritten  int
	BytesWritten, BytesRemoved int64
}

// ConsolidationDue tells, without reading any index, whether the store has enough small packs for
// Consolidate to merge some: from the index this process loaded, or, when it read none (a command
// whose snapshot `plan watch` took, a read-only one), from a listing of the packs. A listing that
// fails says no: the next command decides.
func (s *Store) ConsolidationDue() bool {
	if s.shared {
		return false
	}
	if s.unloaded.Load() {
		pl, err := s.listPacks()
		if err != nil {
			return false
		}
		n := 0
		for _, id := range pl.ids {
			if size, ok := pl.size[id]; ok && size < consolidateMaxBytes {
				n++
			}
		}
		return n >= consolidateAt
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(smallPacks(s.packs)) >= consolidateAt
}

// smallPacks are the packs consolidation may merge: intact (size known) and below the size bound.
func smallPacks(packs map[string]*packFile) []*packFile {
	var out []*packFile
	for _, p := range packs {
		if p.size >= 0 && p.size+p.idxSize < consolidateMaxBytes {
			out = append(out, p)
		}
	}
	return out
}

// mergeRun picks the packs to merge from small, as git's geometric repack does: sorted by size,
// the largest ones that already form a progression (each at least consolidateFactor times the one
// below it) stay; the packs below them are merged, together with every next one smaller than
// consolidateFactor times the sum merged so far (ties broken by id, so the choice does not depend
// on map order). Fewer than two is no merge. Taking the run from the smallest pack upwards instead
// merged nothing once a tiny pack sat below many of one size (a no-change checkpoint's few hundred
// bytes under dozens of 1 MB checkpoints): those were never merged, and every command read them all.
func mergeRun(small []*packFile) []*packFile {
	slices.SortFunc(small, func(a, b *packFile) int {
		return cmp.Or(cmp.Compare(a.size+a.idxSize, b.size+b.idxSize), cmp.Compare(a.id, b.id))
	})
	w := func(i int) int64 { return small[i].size + small[i].idxSize }
	k := len(small) - 1
	for k > 0 && w(k) >= consolidateFactor*w(k-1) {
		k--
	}
	if k <= 0 {
		return nil // one pack, or a progression already
	}
	var sum int64
	for i := range k {
		sum += w(i)
	}
	n := k
	for n < len(small) && w(n) < consolidateFactor*sum {
		sum += w(n)
		n++
	}
	if n < 2 {
		return nil
	}
	return small[:n]
}

// Consolidate merges small packs of a private store when there are consolidateAt or more of them
// (see the invariants above). The caller MUST hold the workspace lock and have no batch open. A
// record that cannot be copied (damage) fails it before anything is removed; the store is then as
// it was, plus an unreferenced partial pack that never became visible.
func (s *Store) Consolidate() (Consolidation, error) {
	var res Consolidation
	if s.shared {
		return res, nil
	}
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	if err := s.refreshChecked(); err != nil {
		return res, fmt.Errorf("consolidate packs (nothing was changed): %w", err)
	}
	s.mu.RLock()
	small := smallPacks(s.packs)
	s.mu.RUnlock()
	if len(small) < consolidateAt {
		return res, nil
	}
	run := mergeRun(small)
	if len(run) == 0 {
		return res, nil
	}
	uses := make(map[*packFile]*packUse, len(run))
	for _, p := range run {
		uses[p] = &packUse{p: p}
	}
	s.mu.RLock()
	for h, l := range s.index.all() {
		if u, ok := uses[l.pack]; ok {
			u.live = append(u.live, h)
		}
	}
	s.mu.RUnlock()
	ordered := make([]*packUse, 0, len(run))
	old := make([]*packFile, 0, len(run))
	for _, p := range run {
		u := uses[p]
		slices.SortFunc(u.live, func(a, b tree.Hash) int { return slices.Compare(a[:], b[:]) })
		ordered = append(ordered, u)
		old = append(old, p)
		res.BytesRemoved += p.size + p.idxSize
	}
	written, packs, err := s.rewrite(ordered)
	if err != nil {
		return res, fmt.Errorf("consolidate packs (nothing was removed): %w", err)
	}
	if err := s.hit("consolidate.written"); err != nil {
		return res, err
	}
	if err := s.retire(old); err != nil {
		return res, fmt.Errorf("consolidate packs: %w", err)
	}
	res.PacksMerged, res.PacksWritten, res.BytesWritten = len(old), packs, written
	return res, nil
}
