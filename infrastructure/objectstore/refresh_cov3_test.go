package objectstore

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// os1TwoPacks makes, in dir, a private store with two packs, each holding one blob, and returns
// the blobs' hashes, contents and packs.
func os1TwoPacks(t *testing.T, dir string) (hs [2]tree.Hash, data [2][]byte, packs [2]*packFile) {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range hs {
		data[i] = text(uint64(351+i), 2000)
		b := s.NewBatch()
		hs[i], _ = put(t, b, data[i])
		commit(t, b)
		packs[i] = s.index.at(hs[i]).pack
	}
	return hs, data, packs
}

func os1Exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// A gc interrupted during its deletion is finished by the next Refresh. When that finish fails
// (packs/ cannot be synced, or the intent cannot be removed), Refresh says so and the intent
// stays, so the command after finishes it; the packs it does not name are untouched.
func TestFinishingAnInterruptedGCThatFails(t *testing.T) {
	for name, fail := range map[string]func(string, string) error{
		"packs not synced":   os1FailOn("sync", "packs", errOS1Injected),
		"intent not removed": os1FailOn("remove", gcIntentFile, errOS1Injected),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			hs, data, packs := os1TwoPacks(t, dir)
			intent := filepath.Join(dir, gcIntentFile)
			if err := os.WriteFile(intent, []byte(packs[1].id+"\n"), 0o400); err != nil {
				t.Fatal(err)
			}
			fb := newOS1Faults(dir, false)
			s, err := OpenBackend(fb, dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.Has(hs[1]) {
				t.Fatal("a pack the gc intent names was loaded")
			}
			fb.set(fail)
			err = s.Refresh()
			if !errors.Is(err, errOS1Injected) {
				t.Fatalf("Refresh = %v, want the injected failure", err)
			}
			if os1Exists(packs[1].path) {
				t.Fatal("the pack being deleted is still there")
			}
			if !os1Exists(intent) {
				t.Fatal("the intent was dropped before the deletion was durable")
			}
			fb.set(nil)
			if err := s.Refresh(); err != nil {
				t.Fatal(err)
			}
			if os1Exists(intent) {
				t.Fatal("the next Refresh did not finish the gc")
			}
			mustRead(t, s, hs[0], data[0])
		})
	}
}

// A shared store whose gc marks, damage markers or temporary directory cannot be read (a file
// stands where the directory should be) cannot be refreshed: Refresh fails, naming what, rather
// than load an index that ignores a gc's marks or known damage; the index already loaded keeps
// serving reads; and the store no longer opens.
func TestSharedRefreshWithAnUnreadableDirectory(t *testing.T) {
	for sub, want := range map[string]string{
		marksDir:   "gc marks",
		damagedDir: "damaged-object list",
		"tmp":      "temp",
	} {
		t.Run(sub, func(t *testing.T) {
			dir := t.TempDir()
			s, err := OpenBackend(NewDir(dir, true), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			b := s.NewBatch()
			data := text(361, 2000)
			h, _ := put(t, b, data)
			commit(t, b)
			other, err := OpenBackend(NewDir(dir, true), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			ob := other.NewBatch()
			put(t, ob, text(362, 2000)) // a pack s has not seen: its Refresh reloads
			commit(t, ob)
			other.Close()
			p := filepath.Join(dir, sub)
			if err := os.RemoveAll(p); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("not a directory"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := s.Refresh(); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Refresh = %v, want an error about the %s", err, want)
			}
			mustRead(t, s, h, data)
			if s2, err := OpenBackend(NewDir(dir, true), t.TempDir()); err == nil {
				s2.Close()
				t.Fatal("a shared store with a file for a directory opened")
			}
		})
	}
}

// Damage one workspace finds in a shared store is a marker every other workspace reads: they do
// not deduplicate onto the damaged copy either. What only looks like a marker (a directory) is
// not taken for one.
func TestSharedDamageMarkersAreSeenByOtherWorkspaces(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenBackend(NewDir(dir, true), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.NewBatch()
	bad, _ := put(t, b, text(363, 3000))
	goodData := text(364, 3000)
	good, _ := put(t, b, goodData)
	commit(t, b)
	flip(t, s, bad, 0.5)
	if _, err := readBlob(s, bad); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("read of a damaged blob: %v", err)
	}
	pack := s.index.at(good).pack.id
	if err := os.Mkdir(filepath.Join(dir, damagedDir, pack+"-"+good.String()), 0o700); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenBackend(NewDir(dir, true), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.Present(bad) {
		t.Fatal("another workspace deduplicates onto a copy found damaged")
	}
	if !s2.Present(good) {
		t.Fatal("a directory in damaged.d was taken for a damage marker")
	}
	mustRead(t, s2, good, goodData)
}

// An idx listed without its pack that is gone by the time it is read (a gc finished deleting
// both meanwhile) is skipped: the store opens with the other packs, and nothing reports the
// vanished pack missing.
func TestIdxGoneBetweenListingAndRead(t *testing.T) {
	dir := t.TempDir()
	hs, data, packs := os1TwoPacks(t, dir)
	if err := os.Remove(packs[1].path); err != nil {
		t.Fatal(err)
	}
	fb := newOS1Faults(dir, false)
	gone := &fs.PathError{Op: "open", Path: idxName(packs[1].id), Err: fs.ErrNotExist}
	fb.set(os1FailOn("read", idxName(packs[1].id), gone))
	s, err := OpenBackend(fb, dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if s.Has(hs[1]) {
		t.Fatal("an object of the vanished pack is indexed")
	}
	mustRead(t, s, hs[0], data[0])
	if p := s.Problems(); len(p) != 0 {
		t.Fatalf("Problems = %v, want none for a pack that is simply gone", p)
	}
}

// A reader whose pack vanished (another process's gc dropped it and everything in it) looks
// again: the object is then reported missing, never recorded as damage. When looking again
// fails too, both failures are reported.
func TestReadOfAnObjectAGCDropped(t *testing.T) {
	for name, obstruct := range map[string]bool{"dropped": false, "listing fails": true} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			hs, data, packs := os1TwoPacks(t, dir)
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, p := range []string{packs[1].path, strings.TrimSuffix(packs[1].path, ".pack") + ".idx"} {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			}
			if obstruct {
				if err := os.Mkdir(filepath.Join(dir, gcIntentFile), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			_, err = readBlob(s, hs[1])
			wantIntegrity(t, err, "read")
			if !obstruct && !strings.Contains(err.Error(), "missing") {
				t.Fatalf("read = %v, want the object missing", err)
			}
			if obstruct && !strings.Contains(err.Error(), "gc intent") {
				t.Fatalf("read = %v, want the failure to look again", err)
			}
			if len(s.damaged) != 0 || os1Exists(filepath.Join(dir, damagedFile)) {
				t.Fatalf("a vanished pack was recorded as damage: %v", s.damaged)
			}
			if !obstruct {
				mustRead(t, s, hs[0], data[0])
			}
		})
	}
}

// Under the lock, Refresh writes the idx of a pack that has none. A pack that cannot be
// re-indexed (damaged) or whose idx cannot be written fails Refresh, writes no idx, and leaves
// the pack as it was; the objects Open indexed stay readable, and once the idx can be written
// the next Refresh writes it.
func TestRefreshCannotRebuildAnIdx(t *testing.T) {
	t.Run("damaged pack", func(t *testing.T) {
		dir := t.TempDir()
		hs, data, packs := os1TwoPacks(t, dir)
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ip := strings.TrimSuffix(packs[1].path, ".pack") + ".idx"
		os.Remove(ip)
		os.Chmod(packs[1].path, 0o600)
		writeAt(packs[1].path, 0, 'X')
		before, _ := os.ReadFile(packs[1].path)
		err = s.Refresh()
		wantIntegrity(t, err, "Refresh")
		if !strings.Contains(err.Error(), packs[1].id) {
			t.Fatalf("the error does not name the pack: %v", err)
		}
		if os1Exists(ip) {
			t.Fatal("an idx was written for a damaged pack")
		}
		if after, _ := os.ReadFile(packs[1].path); !bytes.Equal(after, before) {
			t.Fatal("the damaged pack was changed")
		}
		mustRead(t, s, hs[0], data[0])
	})
	t.Run("idx not writable", func(t *testing.T) {
		dir := t.TempDir()
		hs, data, packs := os1TwoPacks(t, dir)
		ip := strings.TrimSuffix(packs[1].path, ".pack") + ".idx"
		os.Remove(ip)
		fb := newOS1Faults(dir, false)
		s, err := OpenBackend(fb, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		fb.set(os1FailOn("write", idxName(packs[1].id), errOS1Injected))
		err = s.Refresh()
		if !errors.Is(err, errOS1Injected) || !strings.Contains(err.Error(), "rebuild idx") {
			t.Fatalf("Refresh = %v, want the idx write failure", err)
		}
		for i := range hs {
			mustRead(t, s, hs[i], data[i])
		}
		fb.set(nil)
		if err := s.Refresh(); err != nil {
			t.Fatal(err)
		}
		if !os1Exists(ip) {
			t.Fatal("the idx was not rebuilt once it could be written")
		}
	})
}

// os1V2Chain stores, in dir, a chain of tree deltas t0 <- t1 <- t2 in one pack, rewritten in
// format version 2 (an idx that does not name delta bases), and returns the hashes and trees.
func os1V2Chain(t *testing.T, dir string, seed uint64) ([3]tree.Hash, [3]Tree) {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, seed))
	var ts [3]Tree
	var hs [3]tree.Hash
	ts[0] = dirTree(r, 35)
	b := s.NewBatch()
	for i := range ts {
		base := tree.ZeroHash
		if i > 0 {
			ts[i], base = editOne(r, ts[i-1]), hs[i-1]
		}
		hs[i], _ = putDelta(t, b, ts[i], base)
	}
	commit(t, b)
	if !isDelta(s, hs[1]) || !isDelta(s, hs[2]) {
		t.Fatal("setup: not deltas")
	}
	s.Close()
	toVersion(t, dir, 2)
	return hs, ts
}

// In a version 2 pack a delta's base is read from its record. A delta in the middle of a chain
// whose record names no valid base is damage: it is not Present, nor is the delta built on it,
// CheckObject of the top names it, and the object at the bottom is unharmed.
func TestVersion2ChainWithADamagedMiddleDelta(t *testing.T) {
	dir := t.TempDir()
	hs, ts := os1V2Chain(t, dir, 371)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	flipData(t, s, hs[1], deltaPrefixLen-1) // the depth byte
	if s.Present(hs[2]) || s.Present(hs[1]) {
		t.Fatal("a chain through a damaged delta is Present")
	}
	if _, known := s.damaged[damageKey{s.index.at(hs[1]).pack.id, hs[1]}]; !known {
		t.Fatal("the damaged delta was not recorded")
	}
	err = s.CheckObject(hs[2], false)
	wantIntegrity(t, err, "CheckObject")
	if !strings.Contains(err.Error(), hs[1].String()) {
		t.Fatalf("CheckObject does not name the damaged base: %v", err)
	}
	mustReadTree(t, s, hs[0], ts[0])
}

// The bases read from version 2 records are remembered per record; a reload forgets those of a
// pack it dropped and keeps those of a pack it kept.
func TestReloadForgetsTheBasesOfDroppedPacks(t *testing.T) {
	dir := t.TempDir()
	a, _ := os1V2Chain(t, dir, 372)
	c, ct := os1V2Chain(t, dir, 373)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.Present(a[2]) || !s.Present(c[2]) {
		t.Fatal("setup: not Present")
	}
	if len(s.bases) != 4 {
		t.Fatalf("%d bases remembered, want 4", len(s.bases))
	}
	dropped, kept := s.index.at(a[2]).pack, s.index.at(c[2]).pack
	os.Remove(strings.TrimSuffix(dropped.path, ".pack") + ".idx")
	os.Remove(dropped.path)
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	if len(s.bases) != 2 {
		t.Fatalf("%d bases remembered after the reload, want the kept pack's 2", len(s.bases))
	}
	for k := range s.bases {
		if k.pack != kept || s.packs[kept.id] != kept {
			t.Fatalf("a remembered base of pack %s outlived it", k.pack.id)
		}
	}
	if s.Has(a[2]) || !s.Present(c[2]) {
		t.Fatal("the index after the reload is wrong")
	}
	mustReadTree(t, s, c[2], ct[2])
}
