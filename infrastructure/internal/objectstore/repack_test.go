package objectstore

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// repackHistory stores 4 checkpoints of 40 small files (appended to, edited, left alone) and two
// larger similar files at different paths (a copy, edited), as a writer does: each file against
// its previous version.
func repackHistory(t *testing.T, s *Store) *history {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	h := &history{files: 42}
	cur := map[string][]byte{}
	for i := range 40 {
		cur[fmt.Sprintf("f%03d", i)] = text(uint64(i+1), 1500+r.IntN(4000))
	}
	big := text(99, 100<<10)
	cur["f040"], cur["f041"] = big, edit(r, big)
	var prev map[string][]byte
	for c := range 4 {
		next := map[string][]byte{}
		for i := range 42 {
			name := fmt.Sprintf("f%03d", i)
			next[name] = cur[name]
			if c > 0 {
				next[name] = workload("mixed", r, i, cur[name])
			}
		}
		h.states = append(h.states, next)
		h.roots = append(h.roots, storeState(t, s, next, prev, h.last()))
		prev, cur = next, next
	}
	return h
}

func liveOf(t *testing.T, s *Store, roots []tree.Hash) map[tree.Hash]struct{} {
	t.Helper()
	live, err := s.Referenced(roots)
	if err != nil {
		t.Fatal(err)
	}
	return live
}

func requireClean(t *testing.T, s *Store) {
	t.Helper()
	probs, err := s.ScanPacks()
	if err != nil || len(probs) != 0 {
		t.Fatalf("scan: %v, %v", probs, err)
	}
	if p := s.Problems(); len(p) != 0 {
		t.Fatalf("problems: %v", p)
	}
}

// A repack writes every live object anew, small blobs bundled, a larger file as a delta against a
// similar one at another path, and deletes the old packs: the store is smaller, every checkpoint
// reads back byte for byte, in this process and the next, verify finds nothing, a plain gc then
// has nothing to do, and a second repack (of bundled blobs) is as small.
func TestRepackBundlesAndDeltasAgainstSimilarFiles(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := repackHistory(t, s)
	before := storeBytes(t, s)
	oldPacks := files(t, s.packsDir)
	live := liveOf(t, s, h.roots)
	res, err := s.Repack(live, h.roots, nil)
	if err != nil {
		t.Fatal(err)
	}
	after := storeBytes(t, s)
	t.Logf("repack: %+v; %d bytes before, %d after", res, before, after)
	if after >= before || res.BytesAfter != after || res.BytesBefore != before || res.PacksDeleted != len(oldPacks)/2 {
		t.Fatalf("repack %+v: %d bytes before, %d after", res, before, after)
	}
	if res.Bundles == 0 || res.Bundled < 40 || res.Similar == 0 || res.Objects < len(live) {
		t.Fatalf("repack %+v: want bundles, a similar-file delta and every live object", res)
	}
	for _, p := range oldPacks {
		if _, err := os.Stat(filepath.Join(s.packsDir, p)); err == nil {
			t.Fatalf("old pack %s outlived the repack", p)
		}
	}
	requireStates(t, s, h.roots, h.states)
	requireClean(t, s)
	if r, err := s.GCFrom(live, h.roots); err != nil || r != (GCResult{}) {
		t.Fatalf("gc after a repack: %+v, %v (want nothing to do)", r, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	requireStates(t, s, h.roots, h.states)
	// Stats count the files of a bundle, not the bundle.
	if st := s.Stats(); st.Objects != res.Objects {
		t.Fatalf("stats %+v after a repack of %d objects", st, res.Objects)
	}
	res2, err := s.Repack(live, h.roots, nil)
	if err != nil {
		t.Fatal(err)
	}
	again := storeBytes(t, s)
	if res2.Bundled != res.Bundled || float64(again) > 1.05*float64(after) {
		t.Fatalf("second repack %+v: %d bytes (first: %d, %+v)", res2, again, after, res)
	}
	requireStates(t, s, h.roots, h.states)
	requireClean(t, s)
}

// After a repack, pruning to the newest checkpoint and collecting frees the bundles the kept
// files no longer fill: a bundled blob whose bundle is less than half live is stored again (and a
// bundle that stays half live is kept whole), so the store ends within 1.2x a fresh store of the
// kept checkpoint.
func TestGCAfterRepackAndPruneFreesBundles(t *testing.T) {
	s := TestStore(t)
	h := repackHistory(t, s)
	if _, err := s.Repack(liveOf(t, s, h.roots), h.roots, nil); err != nil {
		t.Fatal(err)
	}
	keep := h.roots[len(h.roots)-1:]
	live := liveOf(t, s, keep)
	res, err := s.GCFrom(live, keep)
	if err != nil {
		t.Fatal(err)
	}
	if res.ObjectsReencoded == 0 {
		t.Fatalf("gc %+v: no bundled blob stored again", res)
	}
	requireStates(t, s, keep, h.states[len(h.states)-1:])
	requireClean(t, s)
	after := storeBytes(t, s)
	fresh := TestStore(t)
	storeState(t, fresh, h.states[len(h.states)-1], nil, tree.ZeroHash)
	if want := storeBytes(t, fresh); float64(after) > 1.2*float64(want) {
		t.Fatalf("after repack, prune and gc: %d bytes, a fresh store %d", after, want)
	}
	// Repacked again, the kept checkpoint is smaller than the fresh store.
	if _, err := s.Repack(live, keep, nil); err != nil {
		t.Fatal(err)
	}
	requireStates(t, s, keep, h.states[len(h.states)-1:])
	if r, err := s.GCFrom(live, keep); err != nil || r != (GCResult{}) {
		t.Fatalf("gc after the second repack: %+v, %v", r, err)
	}
}

// A repack refuses, before writing anything, a shared store, a store with a missing pack and a
// live object known damaged; a live object the store does not hold is GC's to report, not its.
func TestRepackRefusals(t *testing.T) {
	shared, err := OpenBackend(NewDir(t.TempDir(), true), "")
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	if _, err := shared.Repack(nil, nil, nil); err == nil {
		t.Fatal("a shared store was repacked")
	}

	s := TestStore(t)
	h := repackHistory(t, s)
	live := liveOf(t, s, h.roots)
	before := files(t, s.packsDir)
	victim := h.states[0]["f000"]
	flip(t, s, tree.Sum(victim), 0.5)
	if _, err := readBlob(s, tree.Sum(victim)); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("read of a flipped record: %v", err)
	}
	if _, err := s.Repack(live, h.roots, nil); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("repack with a damaged live object: %v", err)
	}
	if got := files(t, s.packsDir); !slices.Equal(got, before) {
		t.Fatalf("a refused repack changed the packs: %v -> %v", before, got)
	}

	s2 := TestStore(t)
	h2 := repackHistory(t, s2)
	b := s2.NewBatch()
	lone, _ := put(t, b, testkit.Noise(5, 3000))
	commit(t, b)
	if err := os.Remove(s2.index.at(lone).pack.path); err != nil {
		t.Fatal(err)
	}
	if err := s2.Refresh(); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Repack(liveOf(t, s2, h2.roots), h2.roots, nil); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("repack with a missing pack: %v", err)
	}

	// An object the live set names and the store does not hold is skipped.
	s3 := TestStore(t)
	h3 := repackHistory(t, s3)
	live3 := liveOf(t, s3, h3.roots)
	live3[tree.Sum([]byte("not stored"))] = struct{}{}
	if _, err := s3.Repack(live3, h3.roots, nil); err != nil {
		t.Fatal(err)
	}
	requireStates(t, s3, h3.roots, h3.states)
}

// A repack killed at any step loses nothing: before its packs are installed, between them, once
// they are (nothing deleted yet), with its intent written and after the first deletion. The next
// process reads every checkpoint, and the next repack completes, leaving only its own packs.
func TestRepackKilledAtEachStep(t *testing.T) {
	for _, point := range []string{"store.pack-installed", "gc.repacked", "gc.intent", "gc.deleted-one"} {
		t.Run(point, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			h := repackHistory(t, s)
			live := liveOf(t, s, h.roots)
			failAt(s, point)
			if _, err := s.Repack(live, h.roots, nil); !errors.Is(err, errCrash) {
				t.Fatalf("repack killed at %s: %v", point, err)
			}
			_ = s.Close()
			s, err = Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Close() }()
			requireStates(t, s, h.roots, h.states)
			if err := s.Refresh(); err != nil {
				t.Fatal(err)
			}
			requireStates(t, s, h.roots, h.states)
			res, err := s.Repack(live, h.roots, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(files(t, s.packsDir)); got != 2 {
				t.Fatalf("after the completed repack (%+v): %d files in packs/, want one pack and its idx", res, got)
			}
			requireStates(t, s, h.roots, h.states)
			requireClean(t, s)
		})
	}
}

// A changed byte in a bundle is damage of the blobs read from it whose content it changes, and of
// no other: their reads fail as integrity errors (the others still read, their own hashes
// checked); verify then reports the bundle, and every blob read from it needs a copy, a fresh copy of each (as a checkpoint or a heal stores from the
// workspace) is read instead, and the bundle, which nothing is read from any more, is then spent:
// retired with its pack, and verify is clean.
func TestDamagedBundle(t *testing.T) {
	s := TestStore(t)
	h := repackHistory(t, s)
	if _, err := s.Repack(liveOf(t, s, h.roots), h.roots, nil); err != nil {
		t.Fatal(err)
	}
	content := map[tree.Hash][]byte{}
	for _, st := range h.states {
		for _, d := range st {
			content[tree.Sum(d)] = d
		}
	}
	var bundle tree.Hash
	members := map[tree.Hash][]tree.Hash{}
	for x, l := range s.index.all() {
		if l.kind == BundledBlobObject {
			base, err := s.cachedBase(x, l)
			if err != nil {
				t.Fatal(err)
			}
			members[base] = append(members[base], x)
			bundle = base
		}
	}
	if bundle.IsZero() {
		t.Fatal("no bundle")
	}
	flip(t, s, bundle, 0.5)
	failed := 0
	for _, m := range members[bundle] {
		got, err := readBlob(s, m)
		switch {
		case err != nil:
			faulttest.Require(t, err, fault.ErrIntegrity, "a blob of a damaged bundle")
			failed++
		case !bytes.Equal(got, content[m]):
			t.Fatalf("a blob of a damaged bundle read as other content")
		}
	}
	if failed == 0 {
		t.Fatal("no blob of the damaged bundle failed its read")
	}
	for b, ms := range members {
		if b != bundle {
			mustRead(t, s, ms[0], content[ms[0]])
		}
	}
	probs, err := s.ScanPacks()
	if err != nil || len(probs) == 0 {
		t.Fatalf("scan of a damaged bundle: %v, %v", probs, err)
	}
	for _, m := range members[bundle] {
		if !s.NeedsCopy(m) {
			t.Fatalf("a blob of a damaged bundle needs no copy")
		}
	}
	b := s.NewBatch()
	for _, m := range members[bundle] {
		put(t, b, content[m])
	}
	commit(t, b)
	for _, m := range members[bundle] {
		mustRead(t, s, m, content[m])
	}
	rep, err := s.RetireHealed()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rep.Spent, bundle) {
		t.Fatalf("heal %+v: the bundle is not spent", rep)
	}
	requireStates(t, s, h.roots, h.states)
	requireClean(t, s)
}

// A bundled blob's record is checked against its bundle: an offset that does not parse or points
// outside the bundle is damage; an older pack or idx naming one is refused.
func TestBundleSliceAndVersions(t *testing.T) {
	bundle := []byte("0123456789")
	if got, err := bundleSlice(appendBundleRef(nil, 2), 3, bundle); err != nil || string(got) != "234" {
		t.Fatalf("slice: %q, %v", got, err)
	}
	for name, c := range map[string]struct {
		ref []byte
		raw int64
	}{
		"empty ref":    {nil, 1},
		"trailing":     {append(appendBundleRef(nil, 1), 0), 1},
		"past the end": {appendBundleRef(nil, 8), 3},
		"offset out":   {appendBundleRef(nil, 11), 0},
		"negative":     {appendBundleRef(nil, 1), -1},
	} {
		if _, err := bundleSlice(c.ref, c.raw, bundle); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := unpackLink(location{kind: BundledBlobObject, raw: 5}, appendBundleRef(nil, 9), bundle); err == nil {
		t.Fatal("unpackLink: a slice outside its bundle accepted")
	}
	e := []idxEntry{{hash: tree.Sum([]byte("a")), kind: BundledBlobObject, offset: int64(packHeaderLen), comp: 40, raw: 3, base: tree.Sum(bundle)}}
	for _, v := range []uint32{3, 4} {
		if _, _, err := decodeIdx(encodeIdx(e, v)); err == nil {
			t.Fatalf("a version %d idx naming a bundled blob accepted", v)
		}
	}
	if _, v, err := decodeIdx(encodeIdx(e, 5)); err != nil || v != 5 {
		t.Fatalf("version 5 idx: %d, %v", v, err)
	}
}

// The bundle cache keeps the latest bundles up to its bound, dropping the oldest first, and
// refuses one larger than the bound.
func TestBundleCache(t *testing.T) {
	var c bundleCache
	big := make([]byte, bundleCacheBytes/2)
	var hs []tree.Hash
	for i := range 3 {
		h := tree.Sum([]byte{byte(i)})
		hs = append(hs, h)
		c.put(h, big)
		c.put(h, big) // a second put of one bundle changes nothing
	}
	if _, ok := c.get(hs[0]); ok {
		t.Fatal("the oldest bundle was kept past the bound")
	}
	for _, h := range hs[1:] {
		if _, ok := c.get(h); !ok {
			t.Fatal("a recent bundle was dropped")
		}
	}
	c.put(tree.Sum([]byte("huge")), make([]byte, bundleCacheBytes+1))
	if _, ok := c.get(tree.Sum([]byte("huge"))); ok || c.size > bundleCacheBytes {
		t.Fatalf("a bundle over the bound was kept (size %d)", c.size)
	}
}

// A blob delta whose record's prefix is damaged (its depth) fails the repack before anything is
// deleted: the repack reads the depth it writes again from the record.
func TestRepackOfADamagedDeltaPrefix(t *testing.T) {
	s := TestStore(t)
	h := repackHistory(t, s)
	var victim tree.Hash
	for x, l := range s.index.all() {
		if l.kind == BlobDeltaObject {
			victim = x
			break
		}
	}
	if victim.IsZero() {
		t.Fatal("no blob delta")
	}
	before := files(t, s.packsDir)
	flipData(t, s, victim, 32)
	if _, err := s.Repack(liveOf(t, s, h.roots), h.roots, nil); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("repack of a damaged delta prefix: %v", err)
	}
	if got := files(t, s.packsDir); !slices.Equal(got, before) {
		t.Fatalf("a failed repack changed the packs: %v -> %v", before, got)
	}
}

// A lone small file is stored whole, not bundled; more large files than the window holds are
// compared with the latest ones only; files too different to share a delta stay whole; a zero
// root is skipped. A root the store cannot read, or a live record whose bytes changed unnoticed,
// fails the repack before anything is deleted.
func TestRepackEdgeCases(t *testing.T) {
	s := TestStore(t)
	state := map[string][]byte{"f000": text(1, 3000)}
	for i := 1; i <= repackWindow+2; i++ {
		state[fmt.Sprintf("f%03d", i)] = testkit.Noise(uint64(i), 20<<10)
	}
	big := text(7, 150<<10)
	n := repackWindow + 3
	state[fmt.Sprintf("f%03d", n)] = big
	state[fmt.Sprintf("f%03d", n+1)] = edit(rand.New(rand.NewPCG(1, 2)), big)
	root := storeState(t, s, state, nil, tree.ZeroHash)
	roots := []tree.Hash{tree.ZeroHash, root}
	live := liveOf(t, s, roots[1:])
	res, err := s.Repack(live, roots, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Bundles != 0 || res.Similar != 1 {
		t.Fatalf("repack %+v: want no bundle (one small file) and one similar-file delta", res)
	}
	requireStates(t, s, roots[1:], []map[string][]byte{state})

	before := files(t, s.packsDir)
	if _, err := s.Repack(live, []tree.Hash{tree.Sum([]byte("no such tree"))}, nil); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("repack from a missing root: %v", err)
	}
	flip(t, s, tree.Sum(state["f001"]), 0.5)
	if _, err := s.Repack(live, roots, nil); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("repack of a changed record: %v", err)
	}
	if got := files(t, s.packsDir); !slices.Equal(got, before) {
		t.Fatalf("a failed repack changed the packs: %v -> %v", before, got)
	}
	if len(files(t, s.tmpDir)) != 0 {
		t.Fatalf("a failed repack left files in tmp/: %v", files(t, s.tmpDir))
	}
}

// Blobs are ordered as git orders its delta window: by extension, file name, directory and size,
// through nested directories; a directory two checkpoints share is read once. A store of large
// files only writes no bundle. A repack that cannot write (tmp/ is not a directory) fails before deleting.
func TestRepackNestedTreesAndFailedWrites(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	file := func(name string, data []byte) TreeEntry {
		h, _ := put(t, b, data)
		return TreeEntry{Name: name, Kind: tree.KindFile, Mode: 0o644, Size: int64(len(data)), Hash: h}
	}
	sub, _, err := b.PutTree(Tree{file("a.go", text(1, 900)), file("a.md", text(2, 900)), file("b.go", text(3, 900))})
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := b.PutTree(Tree{file("a.go", text(4, 900)), file("a.go2", text(4, 901)), file("c.go", text(5, 900))})
	if err != nil {
		t.Fatal(err)
	}
	dir := func(name string, h tree.Hash) TreeEntry {
		return TreeEntry{Name: name, Kind: tree.KindDir, Mode: 0o755, Hash: h}
	}
	r1, _, err := b.PutTree(Tree{file("a.go", text(6, 900)), dir("x", sub), dir("y", other)})
	if err != nil {
		t.Fatal(err)
	}
	r2, _, err := b.PutTree(Tree{file("a.go", text(8, 700)), dir("x", sub), dir("z", other)})
	if err != nil {
		t.Fatal(err)
	}
	r3, _, err := b.PutTree(Tree{file("a.go", text(9, 900))})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	roots := []tree.Hash{r1, r2, r3}
	want, err := s.Flatten(r1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Repack(liveOf(t, s, roots), roots, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Bundles != 1 || res.Bundled != 9 {
		t.Fatalf("repack %+v: want the 9 small files in one bundle", res)
	}
	got, err := s.Flatten(r1)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("after the repack: %v, %v", got, err)
	}
	for _, e := range got {
		if _, err := readBlob(s, e.Hash); err != nil {
			t.Fatal(err)
		}
	}

	large := TestStore(t)
	lb := large.NewBatch()
	lh, _ := put(t, lb, testkit.Noise(9, 40<<10))
	commit(t, lb)
	lres, err := large.Repack(set(lh), nil, nil)
	if err != nil || lres.Bundles != 0 || lres.Objects != 1 {
		t.Fatalf("repack of a large file: %+v, %v", lres, err)
	}
	mustRead(t, large, lh, testkit.Noise(9, 40<<10))

	before := files(t, s.packsDir)
	// tmp/ replaced by a file: nothing can be created in it, whoever runs the test.
	if err := os.RemoveAll(s.tmpDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.tmpDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.Remove(s.tmpDir); _ = os.Mkdir(s.tmpDir, 0o700) }()
	if _, err := s.Repack(liveOf(t, s, roots), roots, nil); err == nil {
		t.Fatal("a repack that cannot write succeeded")
	}
	if got := files(t, s.packsDir); !slices.Equal(got, before) {
		t.Fatalf("a failed repack changed the packs: %v -> %v", before, got)
	}
}

// A bundled blob whose record points at the wrong bytes of an intact bundle is damage of that
// record, not of the bundle (the bundle's own hash says so), and the other bundled blobs still read.
func TestBundledRecordDamageIsTheRecords(t *testing.T) {
	s := TestStore(t)
	h := repackHistory(t, s)
	if _, err := s.Repack(liveOf(t, s, h.roots), h.roots, nil); err != nil {
		t.Fatal(err)
	}
	var victim, bundle tree.Hash
	for x, l := range s.index.all() {
		if l.kind == BundledBlobObject && l.raw > 200 {
			if b, err := s.cachedBase(x, l); err == nil {
				victim, bundle = x, b
				break
			}
		}
	}
	if victim.IsZero() {
		t.Fatal("no bundled blob")
	}
	flipData(t, s, victim, deltaPrefixLen) // the first byte of its offset
	_, err := readBlob(s, victim)
	faulttest.Require(t, err, fault.ErrIntegrity, "a bundled record pointing at the wrong bytes")
	vl, bl := s.index.at(victim), s.index.at(bundle)
	s.mu.RLock()
	_, recordMarked := s.damaged[damageKey{pack: vl.pack.id, hash: victim}]
	_, bundleMarked := s.damaged[damageKey{pack: bl.pack.id, hash: bundle}]
	s.mu.RUnlock()
	if !recordMarked || bundleMarked {
		t.Fatalf("damage marked on the record: %v, on the bundle: %v", recordMarked, bundleMarked)
	}
	for _, st := range h.states {
		for _, d := range st {
			if x := tree.Sum(d); x != victim && s.index.at(x).kind == BundledBlobObject {
				mustRead(t, s, x, d)
			}
		}
	}
}

// A repacked store's pack is merged by consolidation like any small pack: bundles and their blobs
// are copied as they are, in one batch, and every checkpoint still reads.
func TestConsolidationOfARepackedStore(t *testing.T) {
	s := TestStore(t)
	h := repackHistory(t, s)
	if _, err := s.Repack(liveOf(t, s, h.roots), h.roots, nil); err != nil {
		t.Fatal(err)
	}
	repacked := files(t, s.packsDir)
	extra := map[tree.Hash][]byte{}
	for i := 0; !s.ConsolidationDue(); i++ {
		d := testkit.Noise(uint64(5000+i), 60<<10) // packs about the repacked one's size: it joins the run
		extra[commitOne(t, s, d)] = d
	}
	res, err := s.Consolidate()
	if err != nil {
		t.Fatalf("consolidate: %+v, %v", res, err)
	}
	for _, f := range repacked {
		if _, err := os.Stat(filepath.Join(s.packsDir, f)); err == nil {
			t.Fatalf("the repacked pack %s was not merged (%+v)", f, res)
		}
	}
	bundled := 0
	for _, l := range s.index.all() {
		if l.kind == BundledBlobObject {
			bundled++
		}
	}
	if bundled == 0 {
		t.Fatal("consolidation lost the bundled records")
	}
	requireStates(t, s, h.roots, h.states)
	for x, d := range extra {
		mustRead(t, s, x, d)
	}
	requireClean(t, s)
}

// A repack that would not make the store smaller (here the second in a row, which writes the same
// bytes again) drops what it wrote and keeps the old packs: gc --aggressive never grows the store.
func TestRepackThatDoesNotHelpKeepsTheOldPacks(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	h := repackHistory(t, s)
	live := liveOf(t, s, h.roots)
	if res, err := s.Repack(live, h.roots, nil); err != nil || res.Kept {
		t.Fatalf("the first repack: %+v, %v", res, err)
	}
	packs, before := files(t, s.packsDir), storeBytes(t, s)
	res, err := s.Repack(live, h.roots, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Kept || res.PacksDeleted != 0 || res.BytesBefore != before || res.BytesAfter < before {
		t.Fatalf("a repack that does not help: %+v (%d bytes before)", res, before)
	}
	if got := files(t, s.packsDir); !slices.Equal(got, packs) || storeBytes(t, s) != before {
		t.Fatalf("packs %v after, %v before (%d bytes, %d before)", got, packs, storeBytes(t, s), before)
	}
	if tmp, err := os.ReadDir(s.tmpDir); err != nil || len(tmp) > 0 {
		t.Fatalf("the dropped packs left temporary files: %v", tmp)
	}
	requireStates(t, s, h.roots, h.states)
	requireClean(t, s)
}

// recordedProgress is a Progress that remembers what it was told.
type recordedProgress struct {
	label       string
	total, done int64
	finished    bool
}

func (p *recordedProgress) Start(label string, total int64) { p.label, p.total = label, total }
func (p *recordedProgress) Add(n int64)                     { p.done += n }
func (p *recordedProgress) Done()                           { p.finished = true }

// A repack says how far it is: the bytes of the live objects written, of all of them.
func TestRepackReportsProgress(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	h := repackHistory(t, s)
	var p recordedProgress
	if _, err := s.Repack(liveOf(t, s, h.roots), h.roots, &p); err != nil {
		t.Fatal(err)
	}
	if p.label != "repacking" || p.total == 0 || p.done != p.total || !p.finished {
		t.Fatalf("progress %+v", p)
	}
}
