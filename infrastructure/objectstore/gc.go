package objectstore

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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
}

type packUse struct {
	p         *packFile
	live      []tree.Hash
	liveBytes int64
}

// GC removes what live does not name: packs holding no live object are deleted, and packs whose
// live records fill less than half the file are rewritten into new packs first. Crash-safe at any
// point: new packs are durable before an old one goes, and an old pack's idx is removed before the
// pack, so a crash leaves either both files or a pack that Open re-indexes.
// The caller must hold the workspace lock and have no batch open.
func (s *Store) GC(live map[tree.Hash]struct{}) (GCResult, error) {
	var res GCResult
	uses := make(map[*packFile]*packUse)
	s.mu.RLock()
	for _, p := range s.packs {
		uses[p] = &packUse{p: p}
	}
	for h, l := range s.index {
		if _, ok := live[h]; ok {
			u := uses[l.pack]
			u.live = append(u.live, h)
			u.liveBytes += l.comp + maxRecordHeader
		}
	}
	s.mu.RUnlock()

	var drop, rewrite []*packUse
	for _, u := range uses {
		switch {
		case len(u.live) == 0:
			drop = append(drop, u)
		case u.p.size >= 0 && 2*u.liveBytes < u.p.size:
			rewrite = append(rewrite, u)
		}
	}
	byID := func(a, b *packUse) int { return strings.Compare(a.p.id, b.p.id) }
	slices.SortFunc(drop, byID)
	slices.SortFunc(rewrite, byID)

	if len(rewrite) > 0 {
		written, err := s.rewrite(rewrite)
		if err != nil {
			return res, err
		}
		res.PacksRewritten = len(rewrite)
		res.BytesReclaimed -= written
	}
	gone := slices.Concat(drop, rewrite)
	if len(gone) == 0 {
		return res, nil
	}
	dropped := make(map[*packFile]bool, len(gone))
	s.mu.Lock()
	for _, u := range gone {
		dropped[u.p] = true
		delete(s.packs, u.p.id)
		s.retired = append(s.retired, u.p)
	}
	for h, l := range s.index {
		if dropped[l.pack] {
			delete(s.index, h)
		}
	}
	s.mu.Unlock()
	var errs []error
	for _, u := range gone {
		// idx first: a crash in between leaves a pack that Open re-indexes, never an idx that
		// names objects whose pack is gone.
		for _, ext := range []string{".idx", ".pack"} {
			err := os.Remove(filepath.Join(s.packsDir, u.p.id+ext))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		res.BytesReclaimed += max(u.p.size, 0) + u.p.idxSize
	}
	res.PacksDeleted = len(drop)
	if err := syncDir(s.packsDir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("gc: %w", err)
	}
	return res, nil
}

// rewrite copies the live records of packs into new packs, byte for byte (no recompression, and
// damage stays detectable because reads still check hashes), and commits them so the index points
// at the copies. It returns the bytes written.
func (s *Store) rewrite(uses []*packUse) (int64, error) {
	b := s.NewBatch()
	defer b.Abort()
	for _, u := range uses {
		locs := make([]location, len(u.live))
		s.mu.RLock()
		for i, h := range u.live {
			locs[i] = s.index[h]
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
				return 0, fmt.Errorf("gc: rewrite pack %s: %w", u.p.id, err)
			}
		}
	}
	if err := b.commit(true); err != nil {
		return 0, fmt.Errorf("gc: %w", err)
	}
	var n int64
	for _, pw := range b.packs {
		n += pw.size + pw.idxSize
	}
	return n, nil
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
	_, err = b.append(l.entry(h), func(w io.Writer) error {
		n, err := io.Copy(w, io.NewSectionReader(f, dataAt, l.comp))
		if err != nil {
			return fault.Wrap(fault.ErrIntegrity, err, "object %s in pack %s: copy", h, l.pack.id)
		}
		if n != l.comp {
			return damaged(h, l, "record truncated (pack cut short)")
		}
		return nil
	})
	return err
}
