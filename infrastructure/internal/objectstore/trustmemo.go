package objectstore

import (
	"sync"
	"sync/atomic"

	"github.com/planhq/plan/domain/tree"
)

// trustMemo remembers the objects this process found trusted (present, intact, not in a condemned
// pack, their whole delta chain too), so that a long-lived process (plan watch, a run's tracker)
// does not follow every unchanged file's chain through the index again at every snapshot: at 10,000
// files that was most of a one-file snapshot's CPU.
//
// It vouches only for what it saw, and only while nothing it saw can have gone: an object leaves
// a view only with its pack (a gc, a consolidation, a refresh that no longer lists it), or by a
// mark (damage, a gc's condemnation). Every one of those empties the memo (forget), after the
// view changed, and a result computed on a view older than the last forget is not kept (gen).
// New packs never empty it: what was trusted stays so when objects are added.
type trustMemo struct {
	mu  sync.Mutex
	gen uint64
	ok  map[tree.Hash]struct{}
}

// epochs numbers every generation of every memo of the process, so that a generation names one
// view of one store: a scanner that moves to another store (a test does) never takes a number of
// the first for one of the second.
var epochs atomic.Uint64

// trustMemoMax bounds the memo (32 bytes and a map slot per object): past it, it starts again.
const trustMemoMax = 1 << 20

// generation is the memo's generation now (never 0), read before an object is checked.
func (m *trustMemo) generation() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gen == 0 {
		m.gen = epochs.Add(1)
	}
	return m.gen
}

// has says whether h was found trusted since the last forget.
func (m *trustMemo) has(h tree.Hash) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.ok[h]
	return ok
}

// note remembers h as trusted, unless the memo was emptied since gen was read.
func (m *trustMemo) note(h tree.Hash, gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if gen != m.gen {
		return
	}
	if m.ok == nil || len(m.ok) >= trustMemoMax {
		m.ok = make(map[tree.Hash]struct{})
	}
	m.ok[h] = struct{}{}
}

// forget empties the memo: something it saw may have gone.
func (m *trustMemo) forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen = epochs.Add(1)
	m.ok = nil
}

// lostAny says whether a view of packs, damage and condemnations (after) lost anything the view
// before had: a pack it no longer lists or read again (a pack whose size changed is a new
// packFile), a new damage mark, a newly condemned pack.
func lostAny(packsBefore, packsAfter map[string]*packFile, dmgBefore, dmgAfter map[damageKey]struct{}, condBefore, condAfter map[string]bool) bool {
	for id, p := range packsBefore {
		if packsAfter[id] != p { // gone, or read again (its size changed: cut short, say)
			return true
		}
	}
	for k := range dmgAfter {
		if _, ok := dmgBefore[k]; !ok {
			return true
		}
	}
	for id, c := range condAfter {
		if c && !condBefore[id] {
			return true
		}
	}
	return false
}
