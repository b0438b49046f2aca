package objectstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
)

// os2Healed is a pack holding a damaged blob (found by a scan, so listed as damaged) next to
// intact objects, and a fresh copy of the blob stored since.
type os2Healed struct {
	h, other, root tree.Hash
	d, otherD      []byte
	pack           string
}

func os2HealSetup(t *testing.T, s *Store, seed uint64) os2Healed {
	t.Helper()
	x := os2Healed{d: text(seed, 5000), otherD: text(seed+1, 3000)}
	root, hs := os2Put(t, s, x.d, x.otherD)
	x.h, x.other, x.root = hs[0], hs[1], root
	x.pack = os2PackOf(t, s, x.h)
	flipData(t, s, x.h, 10)
	if problems, err := s.ScanPacks(); err != nil || len(problems) == 0 {
		t.Fatalf("setup: damage not found: %v, %v", problems, err)
	}
	if s.Present(x.h) {
		t.Fatal("setup: a damaged copy is Present")
	}
	os2Put(t, s, x.d) // the fresh copy
	if !s.Present(x.h) {
		t.Fatal("setup: the fresh copy is not Present")
	}
	return x
}

// In a shared store RetireHealed does not delete the pack it rewrote: other workspaces may be
// reading it and none of their locks is ours, so it condemns it with a mark, forgets the damage,
// and a gc sweeps it later. Nothing is lost on the way.
func TestOS2RetireHealedInASharedStoreCondemns(t *testing.T) {
	be, s := os2New(t, true)
	x := os2HealSetup(t, s, 40)
	if got := os2Names(t, be, damagedDir); len(got) != 1 {
		t.Fatalf("damage markers: %v", got)
	}
	rep, err := s.RetireHealed()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Healed, []tree.Hash{x.h}) || rep.PacksRewritten != 1 || len(rep.Unhealed) != 0 {
		t.Fatalf("RetireHealed: %+v", rep)
	}
	if !os2HasPack(t, be, x.pack) {
		t.Fatal("the rewritten pack of a shared store was deleted at once")
	}
	marks := os2Names(t, be, marksDir)
	if len(marks) != 1 {
		t.Fatalf("marks: %v, want one", marks)
	}
	b, err := os.ReadFile(filepath.Join(be.Root(), marksDir, marks[0]))
	if err != nil {
		t.Fatal(err)
	}
	var mf markFile
	if err := json.Unmarshal(b, &mf); err != nil || !slices.Equal(mf.Packs, []string{x.pack}) {
		t.Fatalf("the mark: %s, %v (want it to name %s)", b, err, x.pack)
	}
	if got := os2Names(t, be, damagedDir); len(got) != 0 {
		t.Fatalf("damage markers left: %v", got)
	}
	r := os2Open(t, be)
	mustRead(t, r, x.h, x.d)
	mustRead(t, r, x.other, x.otherD)
	if !r.Present(x.h) || !r.Present(x.other) {
		t.Fatal("the healed objects are not Present")
	}

	res, err := r.SharedGC(os2Live(x.root), 0)
	if err != nil || res.PacksDeleted < 1 {
		t.Fatalf("gc: %+v, %v", res, err)
	}
	if os2HasPack(t, be, x.pack) {
		t.Fatal("the condemned pack survived the sweep")
	}
	after := os2Open(t, be)
	mustRead(t, after, x.h, x.d)
	mustRead(t, after, x.other, x.otherD)
	if problems, err := after.ScanPacks(); err != nil || len(problems) != 0 {
		t.Fatalf("ScanPacks after the sweep: %v, %v", problems, err)
	}
}

// When a shared store's RetireHealed cannot condemn the rewritten pack or forget its damage, it
// fails saying so, and the damage stays listed (nothing deduplicates onto it) with every object
// still readable.
func TestOS2RetireHealedInASharedStoreFails(t *testing.T) {
	for name, c := range map[string]struct {
		op, prefix, want string
		marks            int
	}{
		"the mark cannot be written":   {"Create", marksDir + "/", "write the gc mark", 0},
		"the marker cannot be removed": {"Remove", damagedDir + "/", "update the damaged-object list", 1},
	} {
		t.Run(name, func(t *testing.T) {
			be, s := os2New(t, true)
			x := os2HealSetup(t, s, 42)
			be.on(c.op, func(n string) bool { return strings.HasPrefix(n, c.prefix) })
			_, err := s.RetireHealed()
			if !errors.Is(err, errOS2IO) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("RetireHealed: %v (want %q)", err, c.want)
			}
			be.setHook(nil)
			if got := os2Names(t, be, marksDir); len(got) != c.marks {
				t.Fatalf("marks: %v, want %d", got, c.marks)
			}
			if !os2HasPack(t, be, x.pack) {
				t.Fatal("the pack was deleted")
			}
			r := os2Open(t, be)
			if _, ok := r.damaged[damageKey{x.pack, x.h}]; !ok {
				t.Fatal("the damage is no longer listed")
			}
			mustRead(t, r, x.h, x.d)
			mustRead(t, r, x.other, x.otherD)
		})
	}
}

// Two packs healed at once are both rewritten without their damaged records, and reported in
// hash order.
func TestOS2RetireHealedTwoPacks(t *testing.T) {
	s := TestStore(t)
	a, b := os2HealSetup(t, s, 44), os2HealSetup(t, s, 46)
	rep, err := s.RetireHealed()
	if err != nil {
		t.Fatal(err)
	}
	want := []tree.Hash{a.h, b.h}
	slices.SortFunc(want, func(x, y tree.Hash) int { return bytes.Compare(x[:], y[:]) })
	if rep.PacksRewritten != 2 || !slices.Equal(rep.Healed, want) || len(rep.Unhealed) != 0 {
		t.Fatalf("RetireHealed: %+v", rep)
	}
	for _, x := range []os2Healed{a, b} {
		mustRead(t, s, x.h, x.d)
		mustRead(t, s, x.other, x.otherD)
		if _, err := os.Stat(filepath.Join(s.packsDir, x.pack+".pack")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the damaged pack %s is still there: %v", x.pack, err)
		}
	}
	if problems, err := s.ScanPacks(); err != nil || len(problems) != 0 {
		t.Fatalf("ScanPacks: %v, %v", problems, err)
	}
}

// A private store's RetireHealed that cannot update its damage list fails saying so: the healed
// pack is gone, every object reads, and damage that was not healed stays listed.
func TestOS2RetireHealedCannotUpdateTheDamageList(t *testing.T) {
	t.Run("the emptied list cannot be removed", func(t *testing.T) {
		be, s := os2New(t, false)
		x := os2HealSetup(t, s, 48)
		be.on("Remove", func(n string) bool { return n == damagedFile })
		_, err := s.RetireHealed()
		if !errors.Is(err, errOS2IO) || !strings.Contains(err.Error(), "update the damaged-object list") {
			t.Fatalf("RetireHealed: %v", err)
		}
		be.setHook(nil)
		mustRead(t, s, x.h, x.d)
		mustRead(t, s, x.other, x.otherD)
		if os2HasPack(t, be, x.pack) {
			t.Fatal("the healed pack is still there")
		}
		// The line left names a pack that is gone (ids are never reused): a second run has
		// nothing to do.
		rep, err := s.RetireHealed()
		if err != nil || rep.PacksRewritten != 0 || len(rep.Unhealed) != 0 {
			t.Fatalf("second RetireHealed: %+v, %v", rep, err)
		}
	})
	t.Run("the list cannot be rewritten", func(t *testing.T) {
		be, s := os2New(t, false)
		x := os2HealSetup(t, s, 50)
		ud := text(52, 4000)
		_, uh := os2Put(t, s, ud)
		flipData(t, s, uh[0], 10)
		if problems, err := s.ScanPacks(); err != nil || len(problems) == 0 {
			t.Fatalf("setup: %v, %v", problems, err)
		}
		be.on("WriteFile", func(n string) bool { return n == damagedFile })
		_, err := s.RetireHealed()
		if !errors.Is(err, errOS2IO) || !strings.Contains(err.Error(), "update the damaged-object list") {
			t.Fatalf("RetireHealed: %v", err)
		}
		be.setHook(nil)
		r := os2Open(t, be)
		if !r.NeedsCopy(uh[0]) {
			t.Fatal("the unhealed damage is no longer listed")
		}
		mustRead(t, r, x.h, x.d)
		mustRead(t, r, x.other, x.otherD)
	})
}

// RetireHealed that cannot see the store as it is (the listing fails), or cannot read the idx of
// a missing pack, changes nothing; an idx a concurrent sweep removed is simply gone.
func TestOS2RetireHealedCannotRead(t *testing.T) {
	t.Run("the listing fails", func(t *testing.T) {
		be, s := os2New(t, false)
		x := os2HealSetup(t, s, 54)
		packs := os2Names(t, be, "packs")
		be.on("List", func(n string) bool { return n == "packs" })
		if _, err := s.RetireHealed(); !errors.Is(err, errOS2IO) {
			t.Fatalf("RetireHealed: %v", err)
		}
		be.setHook(nil)
		if got := os2Names(t, be, "packs"); !slices.Equal(got, packs) {
			t.Fatalf("packs: %v, want %v", got, packs)
		}
		mustRead(t, s, x.h, x.d)
		if _, ok := os2Open(t, be).damaged[damageKey{x.pack, x.h}]; !ok {
			t.Fatal("the damage is no longer listed")
		}
	})

	// missing stores a blob twice (two packs) and deletes the first pack's data, leaving its idx.
	missing := func(t *testing.T, shared bool) (*os2Backend, *Store, string, tree.Hash, []byte) {
		be, s := os2New(t, shared)
		d := text(56, 3000)
		_, hs := os2Put(t, s, d)
		gone := os2PackOf(t, s, hs[0])
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(be.Root(), packName(gone))); err != nil {
			t.Fatal(err)
		}
		s = os2Open(t, be)
		os2Put(t, s, d)
		return be, s, gone, hs[0], d
	}
	t.Run("the idx of a missing pack cannot be read", func(t *testing.T) {
		be, s, gone, h, d := missing(t, false)
		be.on("ReadFile", func(n string) bool { return n == idxName(gone) })
		if _, err := s.RetireHealed(); !errors.Is(err, errOS2IO) || !strings.Contains(err.Error(), "read idx") {
			t.Fatalf("RetireHealed: %v", err)
		}
		be.setHook(nil)
		if !slices.Contains(os2Names(t, be, "packs"), gone+".idx") {
			t.Fatal("the idx was dropped without being read")
		}
		mustRead(t, s, h, d)
	})
	t.Run("the idx of a missing pack is swept meanwhile", func(t *testing.T) {
		be, s, gone, h, d := missing(t, true)
		be.setHook(func(op, n string) error {
			if op == "ReadFile" && n == idxName(gone) {
				_ = os.Remove(filepath.Join(be.Root(), n))
			}
			return nil
		})
		rep, err := s.RetireHealed()
		if err != nil || rep.IdxDropped != 1 || len(rep.Unhealed) != 0 {
			t.Fatalf("RetireHealed: %+v, %v", rep, err)
		}
		be.setHook(nil)
		mustRead(t, os2Open(t, be), h, d)
	})
}
