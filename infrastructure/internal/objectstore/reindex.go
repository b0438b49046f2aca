package objectstore

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/planhq/plan/domain/fault"
)

// UnindexedPack is a pack of a shared store that has no idx: an upload in flight, the leftover of
// a writer that crashed between its two uploads, a pack whose idx was deleted or replaced (see
// RepairIndexes), or a file with a pack's name that is not a pack at all. Its objects are not
// indexed, so no reader sees them and no writer deduplicates onto them, but a checkpoint may
// still reference them: a gc never deletes such a pack (see Reindex).
type UnindexedPack struct {
	ID   string
	Size int64
	// Age is how long ago it was written, by the store's clock.
	Age time.Duration
}

// Unindexed lists the packs of a shared store that have no idx (none for a private store, whose
// lock holder writes the idx of such a pack on every Refresh).
func (s *Store) Unindexed() ([]UnindexedPack, error) {
	if !s.shared {
		return nil, nil
	}
	pl, err := s.listPacks()
	if err != nil {
		return nil, err
	}
	now, err := s.be.Now()
	if err != nil {
		return nil, err
	}
	out := make([]UnindexedPack, 0, len(pl.orphans))
	for _, id := range pl.orphans {
		out = append(out, UnindexedPack{ID: id, Size: pl.size[id], Age: now.Sub(pl.mtime[id])})
	}
	return out, nil
}

// ReindexResult says what Reindex did.
type ReindexResult struct {
	// Reindexed packs had their idx written from their own records: their objects are indexed
	// again, and a gc treats them like any other pack (it deletes one only when nothing live is in
	// it). Quarantined packs could not be re-indexed (not a pack, or damaged): they are kept, never
	// deleted by any gc, and reported by `plan doctor`.
	Reindexed   []string
	Quarantined []string
}

// Reindex writes the idx of every pack of a shared store that has none and was written at least
// minAge ago, from the pack's own records (a pack is self-describing), then reloads the index. A
// pack that cannot be scanned is quarantined: left as it is. An upload still in flight that is
// re-indexed is harmless: the idx is the one its writer is about to install, made from the same
// complete pack, and its objects then count as live or dead like any other's.
//
// This is what keeps gc from deleting data it cannot account for: a pack is only ever condemned
// once it has an idx, so that every object in it is weighed against the live set.
func (s *Store) Reindex(minAge time.Duration) (ReindexResult, error) {
	var res ReindexResult
	if !s.shared {
		return res, nil
	}
	pl, err := s.listPacks()
	if err != nil {
		return res, err
	}
	if len(pl.orphans) == 0 {
		return res, nil
	}
	now, err := s.be.Now()
	if err != nil {
		return res, err
	}
	// The marks are read after the listing: a sweep removes a condemned pack's idx, then the
	// pack, then its mark, so an orphan that no mark read now names was not being swept when it
	// was listed (or is gone by now, and scanning it finds nothing). Writing the idx of a pack a
	// sweep is deleting would leave an idx without its pack: objects every writer would then
	// deduplicate onto.
	marks, err := s.readMarks()
	if err != nil {
		return res, err
	}
	sweeping := condemnedBy(marks)
	for _, id := range pl.orphans {
		if minAge > 0 && now.Sub(pl.mtime[id]) < minAge {
			continue // most likely an upload whose idx is on its way
		}
		ok, err := s.reindexPack(id, pl.size[id], !sweeping[id])
		if err != nil {
			return res, err
		}
		switch {
		case ok && sweeping[id]:
			// Condemned and being swept: its objects were weighed dead; if the sweep died
			// before deleting it, a gc after the mark is gone indexes it and weighs it again.
		case ok:
			res.Reindexed = append(res.Reindexed, id)
		default:
			res.Quarantined = append(res.Quarantined, id)
		}
	}
	if len(res.Reindexed) == 0 {
		return res, nil
	}
	return res, s.reload()
}

// reindexPack writes the idx of pack id from its records (only scans it unless write); ok is false
// when the pack cannot be scanned (not a pack, or damaged), and true too when it vanished or got
// its idx meanwhile.
func (s *Store) reindexPack(id string, size int64, write bool) (bool, error) {
	p := s.newPackFile(id, size)
	entries, err := s.scanEntries(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil // deleted since the listing: nothing to account for
	case errors.Is(err, fault.ErrIntegrity):
		return false, nil // not a pack, or a damaged one: quarantined
	case err != nil:
		return false, fmt.Errorf("re-index pack %s: %w", p.path, err)
	}
	if !write {
		return true, nil
	}
	idx := encodeIdx(entries, p.version)
	if err := s.be.Create(idxName(id), idx, 0o400); err != nil && !errors.Is(err, fs.ErrExist) {
		return false, fmt.Errorf("re-index pack %s: %w", p.path, err)
	}
	return true, nil
}

// IndexRepair says what RepairIndexes did.
type IndexRepair struct {
	// Rebuilt are the packs whose damaged idx was replaced by one made from the pack's records.
	// Unrepairable have a damaged idx and a pack that cannot be scanned either: both are left as
	// they are (the pack may still hold readable records; nothing is deleted).
	Rebuilt, Unrepairable []string
}

// RepairIndexes replaces every damaged idx of the store in be whose pack can be re-indexed, with
// the idx made from the pack's own records. It needs no open Store (a damaged idx keeps one from
// opening) and deletes nothing. A private store's caller holds the workspace lock; in a shared
// store the rebuilt idx is what any process would write for that pack, so a race is harmless.
func RepairIndexes(be Backend) (IndexRepair, error) {
	var res IndexRepair
	s := &Store{be: be, shared: be.Shared()}
	pl, err := s.listPacks()
	if err != nil {
		return res, err
	}
	for _, id := range pl.ids {
		if !pl.hasIdx[id] || !pl.hasPack[id] {
			continue
		}
		b, err := be.ReadFile(idxName(id))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return res, fmt.Errorf("read idx %s: %w", be.Location(idxName(id)), err)
		}
		if _, err := walkIdx(b, func(*idxEntry) {}); err == nil {
			continue
		}
		p := s.newPackFile(id, pl.size[id])
		entries, err := s.scanEntries(p)
		switch {
		case errors.Is(err, fault.ErrIntegrity):
			res.Unrepairable = append(res.Unrepairable, id)
			continue
		case err != nil:
			return res, fmt.Errorf("re-index pack %s: %w", p.path, err)
		}
		if err := be.WriteFile(idxName(id), encodeIdx(entries, p.version), 0o400); err != nil {
			return res, fmt.Errorf("rebuild idx %s: %w", be.Location(idxName(id)), err)
		}
		res.Rebuilt = append(res.Rebuilt, id)
	}
	return res, nil
}
