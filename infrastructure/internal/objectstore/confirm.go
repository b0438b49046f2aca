package objectstore

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// confirmRounds bounds how often Confirm copies condemned objects and looks again: each round
// needs a gc to condemn the fresh copies within moments of their upload, which only a gc with no
// grace period racing this very writer can do.
const confirmRounds = 3

// Rely notes that what this process is about to record references the objects hs (for a shared
// store; a private store ignores it). Batches do it on Commit for everything they deduplicated
// onto or stored; a caller that references an object it did not put in a batch (a clone's first
// checkpoint, say) does it itself.
func (s *Store) Rely(hs map[tree.Hash]struct{}) {
	if !s.shared || len(hs) == 0 {
		return
	}
	s.reliedMu.Lock()
	for h := range hs {
		s.relied[h] = struct{}{}
	}
	s.reliedMu.Unlock()
}

// Confirm is the writers' half of a shared store's gc protocol (see marks.go). It MUST be called
// after the record of a transaction that references what this process relied on is visible, and
// before the transaction commits: it reloads the index and checks that every object relied on
// since the last Confirm is Present, that is, has a copy in a pack that exists and that no gc mark
// condemns. An object whose only copies are condemned but still there is copied into a fresh pack
// (and its delta chain with it); one that is gone fails the transaction with fault.ErrConflict,
// and the command can simply be run again. A private store returns nil at once: its gc runs under
// the workspace lock.
func (s *Store) Confirm() error {
	if !s.shared {
		return nil
	}
	s.reliedMu.Lock()
	relied := s.relied
	s.relied = make(map[tree.Hash]struct{})
	s.reliedMu.Unlock()
	if len(relied) == 0 {
		return nil
	}
	for range confirmRounds {
		if err := s.reload(); err != nil {
			return fmt.Errorf("check the objects this change references: %w", err)
		}
		var lost []tree.Hash
		for h := range relied {
			if !s.Present(h) {
				lost = append(lost, h)
			}
		}
		if len(lost) == 0 {
			return nil
		}
		slices.SortFunc(lost, func(a, b tree.Hash) int { return bytes.Compare(a[:], b[:]) })
		if err := s.rescue(lost); err != nil {
			return err
		}
	}
	return fault.Conflict("a gc of the shared store keeps condemning the objects this change uses: run the command again")
}

// reload brings the index up to date with the store without the lock's privileges (it writes
// nothing): new packs are read, vanished ones dropped, and the gc marks read again.
func (s *Store) reload() error {
	pl, err := s.listPacks()
	if err != nil {
		return err
	}
	if !s.matches(pl) {
		return s.load(pl, false)
	}
	marks, err := s.readMarks()
	if err != nil {
		return err
	}
	cond := condemnedBy(marks)
	s.mu.Lock()
	changed := len(cond) != len(s.condemned)
	for id := range cond {
		changed = changed || !s.condemned[id]
	}
	if !changed {
		// The same packs are condemned, but maybe by other marks (one was swept, another names
		// the same packs): a sweep must not count, nor remove again, a mark that is gone.
		s.marks = marks
	}
	s.mu.Unlock()
	if changed {
		// The index may prefer a copy that is now condemned over one that is not: rebuild it.
		return s.load(pl, false)
	}
	return nil
}

// rescue copies, byte for byte, every object of hs (and every base down its delta chain) that is
// not Present but still has a readable copy into a fresh pack, and commits it.
func (s *Store) rescue(hs []tree.Hash) error {
	b := s.NewBatch()
	defer b.Abort()
	copied := map[tree.Hash]bool{}
	for _, h := range hs {
		for depth := 0; depth <= maxDeltaChain; depth++ {
			if copied[h] || s.Present(h) {
				break
			}
			l, ok := s.lookup(h)
			if !ok {
				return fault.Conflict("object %s this change uses was collected by a gc of the shared store meanwhile: run the command again", h)
			}
			if err := s.copyRecord(b, h, l); err != nil {
				if errors.Is(err, fault.ErrIntegrity) {
					// A conflict, and only that: the copy is garbage a gc is collecting, and running
					// the command again stores a fresh one. Wrapping the cause would make the error
					// an integrity error too, which the caller reports as damage to the store.
					return fault.Conflict("object %s this change uses is being collected by a gc of the shared store: run the command again (%v)", h, err)
				}
				return err
			}
			copied[h] = true
			if !l.kind.delta() {
				break
			}
			base, err := s.cachedBase(h, l)
			if err != nil {
				return err
			}
			h = base
		}
	}
	return b.Commit()
}
