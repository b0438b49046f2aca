package objectstore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// A pack of a shared store whose idx was deleted, and which another workspace's records still
// reference: gc re-indexes it from its own records instead of taking it for the orphan of a crashed
// upload, and keeps it; the objects read again.
func TestSharedGCReindexesAPackThatLostItsIdxAndKeepsIt(t *testing.T) {
	be, w := os2New(t, true)
	d := text(41, 5000)
	root, hs := os2Put(t, w, d)
	id := os2PackOf(t, w, hs[0])
	if err := os.Remove(filepath.Join(be.Root(), idxName(id))); err != nil {
		t.Fatal(err)
	}
	g := os2Open(t, be)
	if g.Has(hs[0]) {
		t.Fatal("a pack without idx is indexed at open")
	}
	if u, err := g.Unindexed(); err != nil || len(u) != 1 || u[0].ID != id || u[0].Size <= 0 {
		t.Fatalf("Unindexed: %+v, %v", u, err)
	}
	other := func() ([]tree.Hash, []tree.Hash, error) { return nil, []tree.Hash{root}, nil }
	res, err := g.SharedGC(other, 0)
	if err != nil {
		t.Fatalf("gc: %v", err)
	}
	if res.PacksReindexed != 1 || res.PacksDeleted != 0 || res.PacksCondemned != 0 {
		t.Fatalf("gc: %+v (want the pack re-indexed, kept)", res)
	}
	if !os2HasPack(t, be, id) {
		t.Fatal("the pack or its rebuilt idx is missing")
	}
	mustRead(t, g, hs[0], d)
	if u, err := g.Unindexed(); err != nil || len(u) != 0 {
		t.Fatalf("Unindexed after the gc: %+v, %v", u, err)
	}
}

// The orphan of a crashed upload (nothing references it) is provable garbage once re-indexed: gc
// condemns it as a pack holding nothing live, and sweeps it.
func TestSharedGCDeletesACrashedUploadOnlyOnceIndexed(t *testing.T) {
	be, w := os2New(t, true)
	_, hs := os2Put(t, w, text(42, 5000))
	id := os2PackOf(t, w, hs[0])
	if err := os.Remove(filepath.Join(be.Root(), idxName(id))); err != nil {
		t.Fatal(err)
	}
	g := os2Open(t, be)
	res, err := g.SharedGC(os2Live(), 0)
	if err != nil {
		t.Fatalf("gc: %v", err)
	}
	if res.PacksReindexed != 1 || res.PacksDeleted != 1 {
		t.Fatalf("gc: %+v (want the pack re-indexed, then deleted)", res)
	}
	if slices.Contains(os2Names(t, be, "packs"), id+".pack") {
		t.Fatal("the garbage pack is still there")
	}
}

// Files with a pack's name that are not plan packs (another product's, or a pack cut short) are
// quarantined: no gc ever deletes them, even a mark naming one (as an older gc wrote for orphans).
func TestSharedGCNeverDeletesWhatItCannotIndex(t *testing.T) {
	be, g := os2New(t, true)
	foreign := "0123456789abcdef0123456789abcdef"
	if err := os.WriteFile(filepath.Join(be.Root(), packName(foreign)), []byte("their data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(filepath.Join(be.Root(), packName(foreign)), past, past); err != nil {
		t.Fatal(err)
	}
	os2WriteMark(t, be, past, os2MarkJSON(t, past, foreign))
	for _, grace := range []time.Duration{time.Hour, 0} {
		res, err := g.SharedGC(os2Live(), grace)
		if err != nil {
			t.Fatalf("gc: %v", err)
		}
		if res.PacksQuarantined != 1 || res.PacksDeleted != 0 {
			t.Fatalf("gc (grace %v): %+v (want the file quarantined, kept)", grace, res)
		}
	}
	if !slices.Contains(os2Names(t, be, "packs"), foreign+".pack") {
		t.Fatal("gc deleted a file that is not a plan pack")
	}
	if slices.Contains(os2Names(t, be, "packs"), foreign+".idx") {
		t.Fatal("gc wrote an idx for a file that is not a pack")
	}
}

// Reindex leaves young orphans to their writers, and reports what stops it: a pack it cannot
// read for a reason other than damage, or an idx it cannot write.
func TestReindexAgeAndFailures(t *testing.T) {
	be, w := os2New(t, true)
	_, hs := os2Put(t, w, text(43, 3000))
	id := os2PackOf(t, w, hs[0])
	if err := os.Remove(filepath.Join(be.Root(), idxName(id))); err != nil {
		t.Fatal(err)
	}
	g := os2Open(t, be)
	if res, err := g.Reindex(time.Hour); err != nil || len(res.Reindexed)+len(res.Quarantined) != 0 {
		t.Fatalf("Reindex of a young orphan: %+v, %v", res, err)
	}
	be.on("Open", func(name string) bool { return name == packName(id) })
	if _, err := g.Reindex(0); !errors.Is(err, errOS2IO) {
		t.Fatalf("Reindex with the pack unreadable: %v", err)
	}
	if _, err := g.SharedGC(os2Live(), 0); !errors.Is(err, errOS2IO) || !strings.Contains(err.Error(), "nothing was deleted") {
		t.Fatalf("gc with an orphan unreadable: %v", err)
	}
	be.on("Now", func(string) bool { return true })
	if _, err := g.Reindex(0); !errors.Is(err, errOS2IO) {
		t.Fatalf("Reindex without the store's clock: %v", err)
	}
	if _, err := g.Unindexed(); !errors.Is(err, errOS2IO) {
		t.Fatalf("Unindexed without the store's clock: %v", err)
	}
	be.on("Create", func(name string) bool { return name == idxName(id) })
	if _, err := g.Reindex(0); !errors.Is(err, errOS2IO) || !strings.Contains(err.Error(), "re-index") {
		t.Fatalf("Reindex with the idx unwritable: %v", err)
	}
	be.setHook(func(op, name string) error {
		if op == "Open" && name == packName(id) {
			return fs.ErrNotExist // deleted since the listing
		}
		return nil
	})
	if res, err := g.Reindex(0); err != nil || len(res.Reindexed) != 1 {
		t.Fatalf("Reindex of a pack that vanished: %+v, %v", res, err)
	}
	be.on("List", func(name string) bool { return name == "packs" })
	if _, err := g.Reindex(0); !errors.Is(err, errOS2IO) {
		t.Fatalf("Reindex with packs/ unlistable: %v", err)
	}
	if _, err := g.Unindexed(); !errors.Is(err, errOS2IO) {
		t.Fatalf("Unindexed with packs/ unlistable: %v", err)
	}
	be.setHook(nil)
	// A private store has no orphans to report: its lock holder writes the missing idx.
	_, p := os2New(t, false)
	if res, err := p.Reindex(0); err != nil || len(res.Reindexed) != 0 {
		t.Fatalf("Reindex of a private store: %+v, %v", res, err)
	}
	if u, err := p.Unindexed(); err != nil || u != nil {
		t.Fatalf("Unindexed of a private store: %+v, %v", u, err)
	}
}

// RepairIndexes replaces a damaged idx with the one its pack makes, leaves a sound one and an idx
// whose pack is no pack alone, and reports what stops it.
func TestRepairIndexes(t *testing.T) {
	for _, shared := range []bool{true, false} {
		be, w := os2New(t, shared)
		d := text(44, 4000)
		_, hs := os2Put(t, w, d)
		id := os2PackOf(t, w, hs[0])
		_, hs2 := os2Put(t, w, text(45, 4000))
		sound := os2PackOf(t, w, hs2[0])
		soundIdx, err := os.ReadFile(filepath.Join(be.Root(), idxName(sound)))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(be.Root(), idxName(id))
		_ = os.Chmod(p, 0o600)
		if err := os.WriteFile(p, []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenBackend(be, t.TempDir()); err == nil || !strings.Contains(err.Error(), "doctor --repair") {
			t.Fatalf("open with a damaged idx: %v (want the advice to run doctor --repair)", err)
		}
		foreign := "0123456789abcdef0123456789abcdef"
		for _, n := range []string{packName(foreign), idxName(foreign)} {
			if err := os.WriteFile(filepath.Join(be.Root(), n), []byte("theirs"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		// Through the records' backend, as doctor reaches a store it cannot open.
		res, err := RepairIndexes(NewRecords(be, "records").Backend())
		if err != nil || !slices.Equal(res.Rebuilt, []string{id}) || !slices.Equal(res.Unrepairable, []string{foreign}) {
			t.Fatalf("RepairIndexes (shared %v): %+v, %v", shared, res, err)
		}
		if b, _ := os.ReadFile(filepath.Join(be.Root(), idxName(sound))); string(b) != string(soundIdx) {
			t.Fatal("a sound idx was rewritten")
		}
		for _, n := range []string{packName(foreign), idxName(foreign)} {
			if err := os.Remove(filepath.Join(be.Root(), n)); err != nil {
				t.Fatalf("RepairIndexes touched %s: %v", n, err)
			}
		}
		mustRead(t, os2Open(t, be), hs[0], d)

		if err := os.WriteFile(p, []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
		be.on("WriteFile", func(name string) bool { return name == idxName(id) })
		if _, err := RepairIndexes(be); !errors.Is(err, errOS2IO) {
			t.Fatalf("RepairIndexes with the idx unwritable: %v", err)
		}
		be.on("Open", func(name string) bool { return name == packName(id) })
		if _, err := RepairIndexes(be); !errors.Is(err, errOS2IO) {
			t.Fatalf("RepairIndexes with the pack unreadable: %v", err)
		}
		be.on("ReadFile", func(name string) bool { return name == idxName(id) })
		if _, err := RepairIndexes(be); !errors.Is(err, errOS2IO) {
			t.Fatalf("RepairIndexes with the idx unreadable: %v", err)
		}
		be.setHook(func(op, name string) error {
			if op == "ReadFile" && name == idxName(id) {
				return fs.ErrNotExist // removed since the listing
			}
			return nil
		})
		if res, err := RepairIndexes(be); err != nil || len(res.Rebuilt) != 0 {
			t.Fatalf("RepairIndexes with the idx gone: %+v, %v", res, err)
		}
		be.on("List", func(name string) bool { return name == "packs" })
		if _, err := RepairIndexes(be); !errors.Is(err, errOS2IO) {
			t.Fatalf("RepairIndexes with packs/ unlistable: %v", err)
		}
		be.setHook(nil)
	}
}

// CheckRoot accepts an empty root and a plan store's, and refuses anything plan never writes, at
// the top or in packs/, naming the first few.
func TestCheckRoot(t *testing.T) {
	be, w := os2New(t, true)
	os2Put(t, w, text(46, 100))
	if err := CheckRoot(be); err != nil {
		t.Fatalf("a plan store: %v", err)
	}
	if err := CheckRoot(NewDir(t.TempDir(), true)); err != nil {
		t.Fatalf("an empty directory: %v", err)
	}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "packs/readme.txt", "packs/0123456789abcdef0123456789abcdef.bin"} {
		if err := os.WriteFile(filepath.Join(be.Root(), n), []byte("theirs"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	err := CheckRoot(be)
	if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "a, b, c, d, e and 3 more") {
		t.Fatalf("a store with foreign files: %v", err)
	}
	be.on("List", func(name string) bool { return name == "packs" })
	if err := CheckRoot(be); !errors.Is(err, errOS2IO) {
		t.Fatalf("packs/ unlistable: %v", err)
	}
	be.on("List", func(name string) bool { return name == "" })
	if err := CheckRoot(be); !errors.Is(err, errOS2IO) {
		t.Fatalf("the root unlistable: %v", err)
	}
}

// Two gcs of one shared store: while the first sweeps a condemned pack (its idx removed, the pack
// not yet), the second re-indexes the store's orphans. It must not write that pack's idx back: the
// sweep deletes the pack a moment later and an idx without its pack would remain, objects every
// writer then deduplicates onto (the concurrent-workspaces crash test found this on MinIO).
func TestReindexLeavesAPackBeingSweptAlone(t *testing.T) {
	be, w := os2New(t, true)
	_, hs := os2Put(t, w, text(44, 4000))
	id := os2PackOf(t, w, hs[0])
	a, b := os2Open(t, be), os2Open(t, be)
	var during ReindexResult
	var once sync.Once
	be.setHook(func(op, name string) error {
		if op == "Remove" && name == packName(id) {
			once.Do(func() {
				var err error
				if during, err = b.Reindex(0); err != nil {
					t.Errorf("the concurrent Reindex: %v", err)
				}
			})
		}
		return nil
	})
	res, err := a.SharedGC(os2Live(), 0)
	be.setHook(nil)
	if err != nil || res.PacksDeleted != 1 {
		t.Fatalf("gc: %+v, %v", res, err)
	}
	if len(during.Reindexed)+len(during.Quarantined) != 0 {
		t.Fatalf("the concurrent Reindex acted on the pack being swept: %+v", during)
	}
	if names := os2Names(t, be, "packs"); slices.Contains(names, id+".idx") || slices.Contains(names, id+".pack") {
		t.Fatalf("after the sweep the store still has %v", names)
	}
	if os2Open(t, be).Has(hs[0]) {
		t.Fatal("an object of the swept pack is still indexed")
	}
}

// A pack a mark condemns that lost its idx (a sweep killed between the idx and the pack) is left
// for the sweep; once the mark is gone a later gc indexes it, weighs it and deletes it as garbage.
func TestACondemnedOrphanIsIndexedOnceItsMarkIsGone(t *testing.T) {
	be, w := os2New(t, true)
	_, hs := os2Put(t, w, text(45, 4000))
	id := os2PackOf(t, w, hs[0])
	if err := os.Remove(filepath.Join(be.Root(), idxName(id))); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-2 * time.Hour)
	os2WriteMark(t, be, past, os2MarkJSON(t, past, id))
	g := os2Open(t, be)
	res, err := g.Reindex(0)
	if err != nil || len(res.Reindexed)+len(res.Quarantined) != 0 {
		t.Fatalf("Reindex of a condemned orphan: %+v, %v", res, err)
	}
	if slices.Contains(os2Names(t, be, "packs"), id+".idx") {
		t.Fatal("Reindex wrote the idx of a condemned pack")
	}
	first, err := g.SharedGC(os2Live(), 0)
	if err != nil || first.MarksSwept != 1 || first.PacksDeleted != 0 {
		t.Fatalf("first gc: %+v, %v (want the mark swept, the unindexed pack kept)", first, err)
	}
	second, err := g.SharedGC(os2Live(), 0)
	if err != nil || second.PacksReindexed != 1 || second.PacksDeleted != 1 {
		t.Fatalf("second gc: %+v, %v (want the pack indexed, then deleted)", second, err)
	}
	if slices.Contains(os2Names(t, be, "packs"), id+".pack") {
		t.Fatal("the garbage pack is still there")
	}
}

// An idx whose pack is gone (a writer slower than the grace period uploaded it after a sweep had
// deleted its young pack) is removed by the next gc when it names nothing live; one that names a
// live object stays, so that verify names what was lost.
func TestSharedGCRemovesADanglingIdxOnlyWhenNothingLiveIsInIt(t *testing.T) {
	be, w := os2New(t, true)
	_, dead := os2Put(t, w, text(46, 3000))
	deadID := os2PackOf(t, w, dead[0])
	liveRoot, live := os2Put(t, w, text(47, 3000))
	liveID := os2PackOf(t, w, live[0])
	for _, id := range []string{deadID, liveID} {
		if err := os.Remove(filepath.Join(be.Root(), packName(id))); err != nil {
			t.Fatal(err)
		}
	}
	g := os2Open(t, be)
	keep := func() ([]tree.Hash, []tree.Hash, error) { return nil, []tree.Hash{liveRoot}, nil }
	res, err := g.SharedGC(keep, 0)
	if err != nil {
		t.Fatalf("gc: %v", err)
	}
	names := os2Names(t, be, "packs")
	if slices.Contains(names, deadID+".idx") {
		t.Fatalf("the idx of a gone pack that holds nothing live is still there: %v (%+v)", names, res)
	}
	if !slices.Contains(names, liveID+".idx") {
		t.Fatalf("the idx naming a live object whose pack is gone was removed: %v", names)
	}
	if res.BytesReclaimed <= 0 {
		t.Fatalf("gc: %+v", res)
	}
}
