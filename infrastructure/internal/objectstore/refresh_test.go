package objectstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// A store opened before a GC of another process deleted a pack must not deduplicate onto the
// deleted copy once it has refreshed (the lock holder's view), and must store the object afresh.
func TestRefreshSeesAConcurrentGC(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	d := text(1, 5000)
	b := a.NewBatch()
	h, _ := put(t, b, d)
	commit(t, b)

	waiting, err := Open(dir) // opened, then waits for the lock while GC runs
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	if _, err := a.GC(nil); err != nil {
		t.Fatal(err)
	}
	if err := waiting.Refresh(); err != nil {
		t.Fatal(err)
	}
	nb := waiting.NewBatch()
	if nb.Has(h) {
		t.Fatal("a refreshed store still offers an object a GC deleted")
	}
	if _, n := put(t, nb, d); n == 0 {
		t.Fatal("the object was not stored afresh")
	}
	commit(t, nb)
	mustRead(t, waiting, h, d)
}

// Even without a refresh, a copy whose pack is gone is not deduplicated onto (the pack's idx
// survived), and a read that meets a vanished pack re-reads the directory and finds the new copy.
func TestPresentRefusesMissingAndCutShortPacks(t *testing.T) {
	s := TestStore(t)
	d1, d2 := text(2, 9000), testkit.Noise(3, 50_000)
	b := s.NewBatch()
	h1, _ := put(t, b, d1)
	h2, _ := put(t, b, d2)
	commit(t, b)
	l := s.index.at(h2)
	if !s.Present(h1) || !s.Present(h2) {
		t.Fatal("fresh objects are not present")
	}
	// Cut the pack short through the second record; Refresh (the lock) sees the new size.
	os.Chmod(l.pack.path, 0o600)
	if err := os.Truncate(l.pack.path, l.offset+20); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	if !s.Present(h1) || s.Present(h2) {
		t.Fatalf("after truncation: present(h1)=%v present(h2)=%v, want true/false", s.Present(h1), s.Present(h2))
	}
	nb := s.NewBatch()
	if _, n := put(t, nb, d2); n == 0 {
		t.Fatal("a cut-short copy was deduplicated onto")
	}
	commit(t, nb)
	mustRead(t, s, h2, d2)
	if s.index.at(h2).pack == l.pack {
		t.Fatal("the index still points at the cut-short copy")
	}
	// A deleted pack: Present is false at once (its size is -1 after refresh).
	os.Remove(s.index.at(h2).pack.path)
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	if s.Present(h2) {
		t.Fatal("an object whose pack was deleted is present")
	}
}

// A read that finds damage marks the copy, durably: the next process stores a fresh copy from the
// live data instead of deduplicating onto the damaged one, and reads it from the fresh copy.
func TestDamageFoundIsNotDeduplicatedOnto(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	d := text(4, 20_000)
	b := s.NewBatch()
	h, _ := put(t, b, d)
	commit(t, b)
	flipData(t, s, h, 7)
	if _, err := readBlob(s, h); err == nil {
		t.Fatal("damage not detected")
	}
	if s.Present(h) {
		t.Fatal("a copy found damaged is still present")
	}
	s.Close()

	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.Present(h) {
		t.Fatal("the damage mark did not survive the process")
	}
	nb := s2.NewBatch()
	if _, n := put(t, nb, d); n == 0 {
		t.Fatal("no fresh copy stored")
	}
	commit(t, nb)
	mustRead(t, s2, h, d)
	// Reopened, the index prefers the intact copy to the damaged one.
	s3, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	mustRead(t, s3, h, d)
}

// A delta whose base is gone is not present: a checkpoint stores the tree again, whole.
func TestPresentChecksDeltaChains(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(1, 2))
	base := dirTree(r, 40)
	b := s.NewBatch()
	bh, _, err := b.PutTree(base)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	next := editOne(r, base)
	b = s.NewBatch()
	nh, _ := putDelta(t, b, next, bh)
	commit(t, b)
	if !isDelta(s, nh) || !s.Present(nh) {
		t.Fatal("setup: want a present delta")
	}
	os.Remove(s.index.at(bh).pack.path)
	os.Remove(strings.TrimSuffix(s.index.at(bh).pack.path, ".pack") + ".idx")
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	if s.Present(nh) {
		t.Fatal("a delta without its base is present")
	}
	if err := s.CheckObject(nh, false); err == nil {
		t.Fatal("CheckObject accepts a delta whose base is gone")
	}
	b = s.NewBatch()
	if _, n := putDelta(t, b, next, bh); n == 0 {
		t.Fatal("the tree was not stored again")
	}
	commit(t, b)
	mustReadTree(t, s, nh, next)
}

// A GC killed between deleting two packs (a delta's and its base's) leaves an intent: every
// reader skips what it names, so the orphaned delta is never offered for deduplication, and the
// next lock holder finishes the deletion.
func TestInterruptedGCIsFinished(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	base := dirTree(r, 40)
	b := s.NewBatch()
	bh, _, err := b.PutTree(base)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	next := editOne(r, base)
	b = s.NewBatch()
	nh, _ := putDelta(t, b, next, bh)
	commit(t, b)
	basePack, deltaPack := s.index.at(bh).pack, s.index.at(nh).pack
	s.Close()

	// What a GC killed after its first unlink leaves: the intent, and the delta's pack intact.
	st := &Store{be: NewDir(dir, false), dir: dir, packsDir: filepath.Join(dir, "packs"), tmpDir: filepath.Join(dir, "tmp")}
	if err := st.writeIntent([]string{basePack.id, deltaPack.id}); err != nil {
		t.Fatal(err)
	}
	os.Remove(strings.TrimSuffix(basePack.path, ".pack") + ".idx")
	os.Remove(basePack.path)

	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.Has(nh) || s2.Present(nh) {
		t.Fatal("a pack named by the gc intent was loaded")
	}
	if _, err := os.Stat(deltaPack.path); err != nil {
		t.Fatal("Open, without the lock, deleted a pack")
	}
	if err := s2.Refresh(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(deltaPack.path); err == nil {
		t.Fatal("Refresh did not finish the interrupted gc")
	}
	if _, err := os.Stat(filepath.Join(dir, gcIntentFile)); err == nil {
		t.Fatal("the gc intent outlived the gc")
	}
}

// A damaged intent is refused, not guessed at.
func TestDamagedIntentIsRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.WriteFile(filepath.Join(dir, gcIntentFile), []byte("not-a-pack\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir)
	faulttest.Require(t, err, fault.ErrIntegrity, "damaged gc intent")
}

// Refresh removes what a killed writer left in tmp/ (the caller holds the lock), and a torn line in
// the damage list is ignored.
func TestRefreshCleansTempAndToleratesTornDamageList(t *testing.T) {
	s := TestStore(t)
	junk := filepath.Join(s.tmpDir, strings.Repeat("a", 32)+".pack")
	if err := os.WriteFile(junk, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, damagedFile), []byte("abc\n"+strings.Repeat("b", 32)+" 12"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	put(t, b, text(9, 100))
	commit(t, b) // a new pack, so Refresh reloads and re-reads the damage list
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(junk); err == nil {
		t.Fatal("tmp/ junk survived a refresh under the lock")
	}
	if set, err := s.readDamaged(); err != nil || len(set) != 0 {
		t.Fatalf("torn damage lines were taken: %v, %v", set, err)
	}
	var zero tree.Hash
	if s.Present(zero) {
		t.Fatal("zero hash present")
	}
}

// Problems names, without reading data, what keeps indexed objects from being read.
func TestProblems(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if p := s.Problems(); len(p) != 0 {
		t.Fatalf("a fresh store has problems: %v", p)
	}
	r := rand.New(rand.NewPCG(5, 6))
	base := dirTree(r, 30)
	b := s.NewBatch()
	bh, _, err := b.PutTree(base)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	b = s.NewBatch()
	nh, _ := putDelta(t, b, editOne(r, base), bh)
	blob, _ := put(t, b, testkit.Noise(8, 40_000))
	commit(t, b)
	if len(s.Problems()) != 0 {
		t.Fatalf("healthy store: %v", s.Problems())
	}
	// The base's pack goes (its idx stays): a missing pack, and a delta whose chain is broken.
	basePack := s.index.at(bh).pack
	os.Remove(basePack.path)
	deltaPack := s.index.at(nh).pack
	os.Chmod(deltaPack.path, 0o600)
	os.Truncate(deltaPack.path, s.index.at(blob).offset+10) // the blob lies past the end now
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(s.Problems(), "\n")
	for _, want := range []string{"pack " + basePack.id + " is missing", "pack " + deltaPack.id + " is cut short", "base chain is broken"} {
		if !strings.Contains(got, want) {
			t.Errorf("Problems lacks %q:\n%s", want, got)
		}
	}
	// An interrupted gc is reported until a lock holder finishes it; a damaged intent too.
	if err := s.writeIntent([]string{basePack.id}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(s.Problems(), "\n"), "interrupted gc") {
		t.Error("pending gc not reported")
	}
	os.WriteFile(filepath.Join(dir, gcIntentFile), []byte("junk\n"), 0o600)
	if !strings.Contains(strings.Join(s.Problems(), "\n"), "gc intent") {
		t.Error("damaged intent not reported")
	}
}

// Deleting packs is idempotent (how an interrupted gc is finished) and refuses to report success
// when a pack cannot be removed; the intent then stays for the next try.
func TestDeletePacks(t *testing.T) {
	s := TestStore(t)
	if err := s.deletePacks(nil); err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	put(t, b, text(1, 100))
	commit(t, b)
	var id string
	for k := range s.packs {
		id = k
	}
	if err := s.deletePacks([]string{id}); err != nil {
		t.Fatal(err)
	}
	if err := s.deletePacks([]string{id}); err != nil {
		t.Fatalf("deleting again: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.dir, gcIntentFile)); err == nil {
		t.Fatal("intent left behind")
	}
	// A "pack" that is a non-empty directory cannot be removed: the error says the next command
	// finishes, and the intent stays.
	stuck := strings.Repeat("c", 32)
	os.MkdirAll(filepath.Join(s.packsDir, stuck+".pack", "x"), 0o700)
	err := s.deletePacks([]string{stuck})
	if err == nil || !strings.Contains(err.Error(), "next command finishes") {
		t.Fatalf("undeletable pack: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.dir, gcIntentFile)); err != nil {
		t.Fatal("the intent was dropped although the deletion did not finish")
	}
	if err := s.Refresh(); err == nil {
		t.Fatal("Refresh finished a deletion it could not do")
	}
	os.RemoveAll(filepath.Join(s.packsDir, stuck+".pack"))
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	// The intent cannot be written (a directory holds its name): nothing is deleted.
	obstacle := filepath.Join(s.dir, gcIntentFile)
	os.MkdirAll(filepath.Join(obstacle, "x"), 0o700)
	if err := s.deletePacks([]string{stuck}); err == nil {
		t.Fatal("no intent, yet deletion went ahead")
	}
	os.RemoveAll(obstacle)
}

// A reader whose pack vanished under it (a GC of another process rewrote it) re-reads the
// directory and finds the object's new home.
func TestReadAfterConcurrentRewrite(t *testing.T) {
	dir := t.TempDir()
	reader, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	d := text(3, 2000)
	b := reader.NewBatch()
	h, _ := put(t, b, d)
	put(t, b, testkit.Noise(4, 300_000)) // garbage that makes gc rewrite the pack
	commit(t, b)
	gc, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	if res, err := gc.GC(set(h)); err != nil || res.PacksRewritten != 1 {
		t.Fatalf("gc: %+v, %v", res, err)
	}
	mustRead(t, reader, h, d) // through retryGone
	if err := reader.CheckObject(h, true); err != nil {
		t.Fatal(err)
	}
	// An object the rewrite dropped is reported missing, not as damage of the old copy.
	gone := tree.Sum(testkit.Noise(4, 300_000))
	if _, err := readBlob(reader, gone); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("dropped object: %v", err)
	}
	if len(reader.damaged) != 0 {
		t.Fatalf("a vanished pack was recorded as damage: %v", reader.damaged)
	}
}

// toV1 rewrites every pack of the store in dir in format version 1 (no record trailers, idx with
// the old magic), as a store written before version 2 holds it.
func toV1(t *testing.T, dir string) {
	t.Helper()
	packs, _ := filepath.Glob(filepath.Join(dir, "packs", "*.pack"))
	for _, p := range packs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		entries, version, err := scanRecords(bytes.NewReader(b), int64(len(b)))
		if err != nil || version != packVersion {
			t.Fatalf("scan %s: %v %d", p, err, version)
		}
		out := binary.BigEndian.AppendUint32([]byte(packMagic), 1)
		var idx []idxEntry
		for _, e := range entries {
			_, hl, err := parseRecordHeader(b[e.offset:])
			if err != nil {
				t.Fatal(err)
			}
			ne := e
			ne.offset = int64(len(out))
			out = append(out, b[e.offset:e.offset+int64(hl)+e.comp]...)
			idx = append(idx, ne)
		}
		os.Chmod(p, 0o600)
		if err := os.WriteFile(p, out, 0o400); err != nil {
			t.Fatal(err)
		}
		ip := strings.TrimSuffix(p, ".pack") + ".idx"
		os.Chmod(ip, 0o600)
		if err := os.WriteFile(ip, encodeIdx(sortEntries(idx), 1), 0o400); err != nil {
			t.Fatal(err)
		}
	}
}

// A store written in format version 1 keeps working: reads, verification of every byte it can
// check, deduplication, a rebuilt idx, and gc, which rewrites into version 2 packs.
func TestVersion1PacksStillRead(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	small, large, garbage := text(1, 3000), testkit.Noise(2, 3<<20), testkit.Noise(3, 200_000)
	b := s.NewBatch()
	hs, _ := put(t, b, small)
	hl, _ := put(t, b, large)
	put(t, b, garbage)
	commit(t, b)
	s.Close()
	toV1(t, dir)

	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustRead(t, s, hs, small)
	mustRead(t, s, hl, large)
	if problems, err := s.ScanPacks(); err != nil || len(problems) != 0 {
		t.Fatalf("verify of a version 1 store: %v, %v", problems, err)
	}
	if !s.Present(hs) {
		t.Fatal("a version 1 copy is not deduplicated onto")
	}
	// A lost idx of a version 1 pack is rebuilt as version 1.
	for id := range s.packs {
		os.Remove(filepath.Join(dir, "packs", id+".idx"))
	}
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	mustRead(t, s, hs, small)
	for _, p := range s.packs {
		if p.version != 1 {
			t.Fatalf("rebuilt idx says version %d", p.version)
		}
	}
	// gc rewrites the live objects into a version 2 pack.
	if res, err := s.GC(set(hs)); err != nil || res.PacksRewritten != 1 {
		t.Fatalf("gc: %+v, %v", res, err)
	}
	for _, p := range s.packs {
		if p.version != packVersion {
			t.Fatalf("gc wrote a version %d pack", p.version)
		}
	}
	mustRead(t, s, hs, small)
	if problems, err := s.ScanPacks(); err != nil || len(problems) != 0 {
		t.Fatalf("verify after gc: %v, %v", problems, err)
	}
}

// A flipped byte that a version 1 pack could not show (the data of a large record that still
// decodes) is caught by the trailer, on verify and when gc would copy the record.
func TestTrailerCatchesWhatContentHashesCannot(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	h, _ := put(t, b, text(5, 5000))
	commit(t, b)
	l := s.index.at(h)
	// Flip the header checksum: the content still reads back, only the trailer knows.
	var hb [maxRecordHeader]byte
	f, _ := os.Open(l.pack.path)
	dataAt, _, err := readHeader(f, h, l, hb[:])
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(l.pack.path)
	writeAt(l.pack.path, dataAt+l.comp, ^raw[dataAt+l.comp])
	if _, err := readBlob(s, h); err != nil {
		t.Fatalf("content no longer reads: %v", err)
	}
	problems, err := s.ScanPacks()
	if err != nil || len(problems) != 1 || !strings.Contains(problems[0].Problem, "checksum") {
		t.Fatalf("ScanPacks: %v, %v", problems, err)
	}
	put(t, s.NewBatch(), testkit.Noise(6, 300_000)) // garbage for a rewrite
	if _, err := s.GC(set(h)); err == nil {
		// Either the pack was kept as is, or the copy refused: it must not bless the damage.
		for _, p := range s.packs {
			if p == l.pack {
				return
			}
		}
		t.Fatal("gc copied a record whose trailer does not match")
	}
}

// Healing: a damaged record and a missing pack stop being reported once their objects are stored
// afresh and RetireHealed has run; damage with no fresh copy is reported as unhealed and left.
func TestRetireHealed(t *testing.T) {
	s := TestStore(t)
	good, bad, lost, orphan := text(1, 4000), text(2, 5000), text(3, 6000), text(4, 7000)
	b := s.NewBatch()
	hGood, _ := put(t, b, good)
	hBad, _ := put(t, b, bad)
	commit(t, b)
	b = s.NewBatch()
	hLost, _ := put(t, b, lost)
	commit(t, b)
	b = s.NewBatch()
	hOrphan, _ := put(t, b, orphan)
	commit(t, b)
	flipData(t, s, hBad, 10)
	flipData(t, s, hOrphan, 10)
	os.Remove(s.index.at(hLost).pack.path)
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	if problems, _ := s.ScanPacks(); len(problems) == 0 {
		t.Fatal("setup: no damage seen")
	}
	// The live copies come back for bad and lost, not for orphan.
	for _, h := range []tree.Hash{hBad, hLost, hOrphan} {
		if !s.NeedsCopy(h) {
			t.Fatalf("%s does not need a copy", h)
		}
	}
	nb := s.NewBatch()
	put(t, nb, bad)
	put(t, nb, lost)
	commit(t, nb)
	rep, err := s.RetireHealed()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Unhealed, []tree.Hash{hOrphan}) || len(rep.Healed) != 2 || rep.PacksRewritten != 1 || rep.IdxDropped != 1 {
		t.Fatalf("report %+v", rep)
	}
	mustRead(t, s, hGood, good)
	mustRead(t, s, hBad, bad)
	mustRead(t, s, hLost, lost)
	problems, err := s.ScanPacks()
	if err != nil || len(problems) != 1 || !strings.Contains(problems[0].Problem, "record") {
		t.Fatalf("after healing, only the unhealed record may be reported: %v, %v", problems, err)
	}
	if len(s.Problems()) != 0 {
		t.Fatalf("doctor's problems after healing: %v", s.Problems())
	}
	if set, _ := s.readDamaged(); len(set) != 1 {
		t.Fatalf("damage list after healing: %v", set)
	}
}

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
			faulttest.Require(t, err, fault.ErrIntegrity, "read")
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
		faulttest.Require(t, err, fault.ErrIntegrity, "Refresh")
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
	faulttest.Require(t, err, fault.ErrIntegrity, "CheckObject")
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
