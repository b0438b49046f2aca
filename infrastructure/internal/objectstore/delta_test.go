package objectstore

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// dirTree returns a source-like directory listing of n entries: files with random content hashes,
// a few (empty, so walkable) subdirectories and a symlink.
func dirTree(r *rand.Rand, n int) Tree {
	t := make(Tree, 0, n)
	for i := range n {
		e := TreeEntry{Name: fmt.Sprintf("file_%03d.go", i), Kind: tree.KindFile, Mode: 0o644, Size: int64(500 + r.IntN(20000))}
		switch {
		case i%10 == 9:
			e = TreeEntry{Name: fmt.Sprintf("pkg%02d", i), Kind: tree.KindDir, Mode: 0o755}
		case i == n-1:
			e = TreeEntry{Name: "zlink", Kind: tree.KindSymlink, Mode: 0o777, Target: "../common/file.go"}
		}
		if e.Kind == tree.KindFile {
			fillHash(r, &e.Hash)
		}
		t = append(t, e)
	}
	slices.SortFunc(t, func(a, b TreeEntry) int { return strings.Compare(a.Name, b.Name) })
	return t
}

func fillHash(r *rand.Rand, h *tree.Hash) {
	for i := range h {
		h[i] = byte(r.Uint32())
	}
}

// randomDirs gives t's directories random subtree hashes, as real ones have (not walkable).
func randomDirs(r *rand.Rand, t Tree) Tree {
	for i := range t {
		if t[i].Kind == tree.KindDir {
			fillHash(r, &t[i].Hash)
		}
	}
	return t
}

// editOne returns a copy of t with one file changed the way an edit changes it: new size and
// content hash.
func editOne(r *rand.Rand, t Tree) Tree {
	c := slices.Clone(t)
	for {
		e := &c[r.IntN(len(c))]
		if e.Kind != tree.KindFile {
			continue
		}
		e.Size += int64(1 + r.IntN(200))
		fillHash(r, &e.Hash)
		return c
	}
}

func putDelta(t testing.TB, b *Batch, tr Tree, base tree.Hash) (tree.Hash, int64) {
	t.Helper()
	h, n, err := b.PutTreeDelta(tr, base)
	if err != nil {
		t.Fatalf("PutTreeDelta: %v", err)
	}
	return h, n
}

func mustReadTree(t testing.TB, s *Store, h tree.Hash, want Tree) {
	t.Helper()
	got, err := s.ReadTree(h)
	if err != nil {
		t.Fatalf("ReadTree %s: %v", h, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ReadTree %s: got %v, want %v", h, got, want)
	}
}

func isDelta(s *Store, h tree.Hash) bool {
	info, ok := s.Info(h)
	return ok && info.Delta
}

// Many successive versions, each one entry different from the one before, stored as deltas of
// their predecessor across several batches (and within one): all readable and verified, far
// smaller than stored whole, and no chain deeper than maxDeltaDepth.
func TestDeltaVersions(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(1, 1))
	const versions = 40
	trees := []Tree{dirTree(r, 35)}
	for len(trees) < versions {
		trees = append(trees, editOne(r, trees[len(trees)-1]))
	}
	var hashes []tree.Hash
	var deltaBytes, fullBytes int64
	scratch := TestStore(t)
	prev := tree.ZeroHash
	var b *Batch
	for i, tr := range trees {
		if i%2 == 0 {
			b = s.NewBatch() // two versions per batch: every other base is not committed yet
		}
		h, n := putDelta(t, b, tr, prev)
		if h2, n2 := putDelta(t, b, tr, prev); h2 != h || n2 != 0 {
			t.Fatalf("second put: %s %d", h2, n2)
		}
		if i%2 == 1 {
			commit(t, b)
		}
		if want, _, _ := HashTree(tr); h != want {
			t.Fatal("PutTreeDelta hash differs from HashTree")
		}
		deltaBytes += n
		full := scratch.NewBatch()
		_, fn, _ := full.PutTree(tr)
		full.Abort()
		fullBytes += fn
		hashes = append(hashes, h)
		prev = h
	}
	for i, h := range hashes {
		mustReadTree(t, s, h, trees[i])
		if err := s.CheckObject(h, true); err != nil {
			t.Fatal(err)
		}
		if err := s.CheckObject(h, false); err != nil {
			t.Fatal(err)
		}
		info, ok := s.Info(h)
		if !ok || info.Kind != TreeObject || info.RawSize != int64(len(mustEncode(t, trees[i]))) {
			t.Fatalf("Info(%d) = %+v", i, info)
		}
		// Every ninth version starts a new chain: depth never exceeds maxDeltaDepth.
		if want := i%(maxDeltaDepth+1) != 0; info.Delta != want {
			t.Fatalf("version %d: delta %v, want %v", i, info.Delta, want)
		}
		// A file whose bytes equal the encoding is the same object: OpenBlob serves the content.
		mustRead(t, s, h, mustEncode(t, trees[i]))
	}
	t.Logf("%d versions: %d bytes as deltas, %d whole (%.1fx)", versions, deltaBytes, fullBytes,
		float64(fullBytes)/float64(deltaBytes))
	if deltaBytes*3 > fullBytes {
		t.Fatalf("deltas take %d bytes, whole trees %d", deltaBytes, fullBytes)
	}
	// Readers see plain trees.
	for i := 1; i < len(hashes); i++ {
		changes, err := s.DiffTrees(hashes[i-1], hashes[i])
		if err != nil || len(changes) != 1 || changes[0].Type != tree.Modified {
			t.Fatalf("DiffTrees(%d): %v %v", i, changes, err)
		}
	}
	flat, err := s.Flatten(hashes[versions-1])
	if err != nil || len(flat) != 35 || flat[0] != flatEntry(trees[versions-1][0].Name, trees[versions-1][0]) {
		t.Fatalf("Flatten: %d %v", len(flat), err)
	}
	// Reachable from the last version: it and its chain down to the last whole version.
	live, err := s.Reachable(hashes[versions-1:])
	if err != nil {
		t.Fatal(err)
	}
	last := (versions - 1) / (maxDeltaDepth + 1) * (maxDeltaDepth + 1)
	for i := last; i < versions; i++ {
		if _, ok := live[hashes[i]]; !ok {
			t.Fatalf("version %d (on the chain) not reachable", i)
		}
	}
	if _, ok := live[hashes[last-1]]; ok {
		t.Fatal("version before the chain reachable")
	}
	// After a reopen (idx files only) and an idx rebuild (pack scan), the same.
	dir := s.dir
	s.Close()
	for _, rebuild := range []bool{false, true} {
		if rebuild {
			for _, f := range files(t, s.packsDir) {
				if strings.HasSuffix(f, ".idx") {
					os.Remove(s.packsDir + "/" + f)
				}
			}
		}
		s2, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range hashes {
			mustReadTree(t, s2, h, trees[i])
		}
		s2.Close()
	}
}

func mustEncode(t testing.TB, tr Tree) []byte {
	t.Helper()
	b, err := EncodeTree(tr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The base may be a tree added to the same batch, before commit.
func TestDeltaBaseInBatch(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(2, 2))
	t0 := dirTree(r, 30)
	t1 := editOne(r, t0)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	h1, n1 := putDelta(t, b, t1, h0)
	commit(t, b)
	if !isDelta(s, h1) || isDelta(s, h0) {
		t.Fatal("tree based on one of the same batch not stored as a delta")
	}
	if n1 > 200 {
		t.Fatalf("delta of one changed entry takes %d bytes", n1)
	}
	mustReadTree(t, s, h1, t1)
	// Past the memory budget, a base of the batch counts as missing: the tree is stored whole.
	b = s.NewBatch()
	b.treeBytes = batchTreeMemory
	t2 := editOne(r, t1)
	t3 := editOne(r, t2)
	h2, _ := putDelta(t, b, t2, h1)
	h3, _ := putDelta(t, b, t3, h2)
	commit(t, b)
	if !isDelta(s, h2) || isDelta(s, h3) {
		t.Fatalf("delta flags: %v %v", isDelta(s, h2), isDelta(s, h3))
	}
	mustReadTree(t, s, h3, t3)
	if _, _, err := b.PutTreeDelta(t3, h2); err != nil {
		t.Fatal("a present tree is a no-op even after commit")
	}
	if _, _, err := b.PutTreeDelta(editOne(r, t3), h3); err == nil {
		t.Fatal("put after commit succeeded")
	}
}

// The chain-depth cap: a base at depth maxDeltaDepth makes the next version whole, and a delta's
// depth is recorded in its record.
func TestDeltaDepthCap(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(3, 3))
	tr := dirTree(r, 20)
	b := s.NewBatch()
	prev, _ := putDelta(t, b, tr, tree.ZeroHash)
	commit(t, b)
	for depth := 1; depth <= maxDeltaDepth+2; depth++ {
		tr = editOne(r, tr)
		b := s.NewBatch()
		h, _ := putDelta(t, b, tr, prev)
		commit(t, b)
		want := depth % (maxDeltaDepth + 1)
		if got := recordDepth(t, s, h); got != want {
			t.Fatalf("version %d: depth %d, want %d", depth, got, want)
		}
		_, n, err := s.readChain(h, s.index.at(h), nil)
		if err != nil || n != want {
			t.Fatalf("readChain: %d deltas, %v", n, err)
		}
		prev = h
	}
}

// recordDepth reads the depth stored in h's record (0 when stored whole).
func recordDepth(t *testing.T, s *Store, h tree.Hash) int {
	t.Helper()
	l := s.index.at(h)
	if !l.kind.delta() {
		return 0
	}
	buf := getBuf(0)
	defer putBuf(buf)
	data, err := s.readStored(h, l, buf)
	if err != nil {
		t.Fatal(err)
	}
	_, depth, _, err := parseDeltaPrefix(data)
	if err != nil {
		t.Fatal(err)
	}
	return depth
}

// A missing base, the zero hash, the tree itself, a base too big, or a delta no smaller than the
// tree: stored whole.
func TestDeltaFallsBackToWhole(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(4, 4))
	b := s.NewBatch()
	bigD := text(5, maxDeltaObject+1)
	big, _ := put(t, b, bigD)
	unrelatedD := testkit.Noise(6, 3000)
	unrelated, _ := put(t, b, unrelatedD)
	commit(t, b)
	cases := map[string]tree.Hash{
		"missing":   tree.Sum([]byte("never stored")),
		"zero":      tree.ZeroHash,
		"too big":   big,
		"unrelated": unrelated, // random bytes as dictionary: the delta is no smaller
	}
	for name, base := range cases {
		b := s.NewBatch()
		tr := dirTree(r, 25)
		h, n := putDelta(t, b, tr, base)
		_, full, _ := TestStore(t).NewBatch().PutTree(tr)
		commit(t, b)
		if isDelta(s, h) || n != full {
			t.Errorf("%s: delta %v, %d bytes (whole: %d)", name, isDelta(s, h), n, full)
		}
		mustReadTree(t, s, h, tr)
	}
	// Invalid trees are refused as by PutTree.
	if _, _, err := s.NewBatch().PutTreeDelta(Tree{{Name: "", Kind: tree.KindFile}}, unrelated); fault.Kind(err) != fault.ErrInvalid {
		t.Fatalf("invalid tree: %v", err)
	}
}

// A damaged base: the tree is stored whole rather than depend on it, and reading a delta built on
// it before the damage is an integrity error naming the delta.
func TestDeltaDamagedBase(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(5, 5))
	t0 := dirTree(r, 35)
	t1 := editOne(r, t0)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	commit(t, b)
	b = s.NewBatch()
	h1, _ := putDelta(t, b, t1, h0)
	commit(t, b)
	if !isDelta(s, h1) {
		t.Fatal("not a delta")
	}
	flip(t, s, h0, 0.5)
	for name, err := range map[string]error{
		"ReadTree":    func() error { _, err := s.ReadTree(h1); return err }(),
		"CheckObject": s.CheckObject(h1, true),
		"OpenBlob":    func() error { _, err := readBlob(s, h1); return err }(),
		"Flatten":     func() error { _, err := s.Flatten(h1); return err }(),
		"Reachable":   func() error { _, err := s.Reachable([]tree.Hash{h1}); return err }(),
	} {
		faulttest.Require(t, err, fault.ErrIntegrity, name)
		if !strings.Contains(err.Error(), h1.String()) || !strings.Contains(err.Error(), h0.String()) {
			t.Errorf("%s: error names neither the delta nor its base: %v", name, err)
		}
	}
	// Without reading data, CheckObject only sees that the base is present.
	if err := s.CheckObject(h1, false); err != nil {
		t.Fatal(err)
	}
	// A new version based on the damaged tree does not depend on it.
	t2 := editOne(r, t0)
	b = s.NewBatch()
	h2, _ := putDelta(t, b, t2, h0)
	commit(t, b)
	if isDelta(s, h2) {
		t.Fatal("delta of a damaged base")
	}
	mustReadTree(t, s, h2, t2)
}

// A base missing from the store (its pack gone, or the index entry): integrity errors naming the
// delta, from every reader, and from CheckObject without reading data.
func TestDeltaMissingBase(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(6, 6))
	t0 := dirTree(r, 35)
	t1 := editOne(r, t0)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	commit(t, b)
	b = s.NewBatch()
	h1, _ := putDelta(t, b, t1, h0)
	commit(t, b)
	s.index.del(h0)
	for name, err := range map[string]error{
		"ReadTree":      func() error { _, err := s.ReadTree(h1); return err }(),
		"CheckObject":   s.CheckObject(h1, false),
		"CheckObject+d": s.CheckObject(h1, true),
		"Walk":          s.Walk(h1, func(string, TreeEntry) error { return nil }),
		"DiffTrees":     func() error { _, err := s.DiffTrees(tree.ZeroHash, h1); return err }(),
		"GC":            func() error { _, err := s.GC(set(h1)); return err }(),
	} {
		faulttest.Require(t, err, fault.ErrIntegrity, name)
		if !strings.Contains(err.Error(), h1.String()) || !strings.Contains(err.Error(), "missing") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if !s.Has(h1) {
		t.Fatal("GC deleted something after failing")
	}
}

// Damage to the delta record itself, and to the chain's structure.
func TestDeltaDamagedRecord(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(7, 7))
	t0 := dirTree(r, 35)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	commit(t, b)
	var hs []tree.Hash
	prev := h0
	tr := t0
	for range 3 {
		tr = editOne(r, tr)
		b = s.NewBatch()
		h, _ := putDelta(t, b, tr, prev)
		commit(t, b)
		hs = append(hs, h)
		prev = h
	}
	// A flipped byte in the frame of the middle delta: it and the one above fail, the one below reads.
	flip(t, s, hs[1], 0.8)
	for _, h := range hs[1:] {
		_, err := s.ReadTree(h)
		faulttest.Require(t, err, fault.ErrIntegrity, "ReadTree over a damaged delta")
	}
	if _, err := s.ReadTree(hs[0]); err != nil {
		t.Fatal(err)
	}
	// A flipped byte in the base hash or depth of a delta's prefix.
	for _, off := range []int{0, 32} {
		s2 := TestStore(t)
		b := s2.NewBatch()
		g0, _ := putDelta(t, b, t0, tree.ZeroHash)
		commit(t, b)
		b = s2.NewBatch()
		g1, _ := putDelta(t, b, editOne(r, t0), g0)
		commit(t, b)
		flipData(t, s2, g1, off)
		_, err := s2.ReadTree(g1)
		faulttest.Require(t, err, fault.ErrIntegrity, "damaged prefix")
		faulttest.Require(t, s2.CheckObject(g1, false), fault.ErrIntegrity, "CheckObject of a damaged prefix")
	}
	// Sizes out of range, in the index (as a crafted idx would have them).
	l := s.index.at(hs[2])
	l.raw = maxDeltaObject + 1
	_, _, err := s.readChain(hs[2], l, nil)
	faulttest.Require(t, err, fault.ErrIntegrity, "huge delta")
	bl := s.index.at(hs[1])
	s.index.set(hs[1], location{pack: bl.pack, offset: bl.offset, comp: bl.comp, raw: maxDeltaObject + 1, kind: bl.kind})
	_, err = s.ReadTree(hs[2])
	faulttest.Require(t, err, fault.ErrIntegrity, "huge base")
	s.index.set(hs[1], bl)
}

// flipData inverts the byte at off in h's record data.
func flipData(t *testing.T, s *Store, h tree.Hash, off int) {
	t.Helper()
	l := s.index.at(h)
	var hb [maxRecordHeader]byte
	f, _ := os.Open(l.pack.path)
	f.ReadAt(hb[:], l.offset)
	f.Close()
	_, hl, _ := parseRecordHeader(hb[:])
	at := l.offset + int64(hl) + int64(off)
	os.Chmod(l.pack.path, 0o600)
	fh, err := os.OpenFile(l.pack.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var b [1]byte
	fh.ReadAt(b[:], at)
	b[0] ^= 0x55
	fh.WriteAt(b[:], at)
}

// Two batches racing can store each of two trees as a delta of the other; an index pointing at
// both deltas is a cycle, which a reader must stop.
func TestDeltaCycle(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(13, 13))
	t0 := dirTree(r, 35)
	t1 := editOne(r, t0)
	b1, b2 := s.NewBatch(), s.NewBatch()
	x, _ := putDelta(t, b1, t0, tree.ZeroHash)
	y, _ := putDelta(t, b1, t1, x)
	putDelta(t, b2, t1, tree.ZeroHash)
	putDelta(t, b2, t0, y)
	commit(t, b1)
	commit(t, b2)
	if isDelta(s, x) || isDelta(s, y) {
		t.Fatal("whole copies not preferred")
	}
	px, py := s.index.at(x).pack, s.index.at(y).pack
	s.index.set(x, py.delta(x).location(py))
	s.index.set(y, px.delta(y).location(px))
	_, err := s.ReadTree(x)
	faulttest.Require(t, err, fault.ErrIntegrity, "cycle")
	if !strings.Contains(err.Error(), "chain longer") {
		t.Fatalf("cycle: %v", err)
	}
}

// GC keeps the base chain of a live delta even when the caller's live set does not name it, and
// the delta stays readable after the rewrite and a reopen.
func TestGCKeepsDeltaBase(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	r := rand.New(rand.NewPCG(8, 8))
	t0 := dirTree(r, 35)
	t1 := editOne(r, t0)
	t2 := editOne(r, t1)
	// Pack 1: the base with a lot of dead weight (rewritten). Pack 2: a middle version alone (only
	// a base: would be dropped). Pack 3: the live delta.
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	put(t, b, testkit.Noise(1, 100_000))
	commit(t, b)
	b = s.NewBatch()
	h1, _ := putDelta(t, b, t1, h0)
	commit(t, b)
	b = s.NewBatch()
	h2, _ := putDelta(t, b, t2, h1)
	commit(t, b)
	live, err := s.Reachable([]tree.Hash{h2})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []tree.Hash{h0, h1, h2} {
		if _, ok := live[h]; !ok {
			t.Fatalf("Reachable misses %s", h)
		}
	}
	// Named with its chain, the chain stays as it is.
	res, err := s.GC(live)
	if err != nil {
		t.Fatal(err)
	}
	if res.PacksDeleted != 0 || res.PacksRewritten != 1 || res.ObjectsReencoded != 0 {
		t.Fatalf("GC = %+v", res)
	}
	mustReadTree(t, s, h2, t2)
	// The caller names only the delta: its bases are dead, so GC stores it again (whole: no live
	// object is down its chain) and the chain goes.
	res, err = s.GC(set(h2))
	if err != nil {
		t.Fatal(err)
	}
	if res.ObjectsReencoded != 1 || res.PacksDeleted != 3 || isDelta(s, h2) || s.Has(h0) || s.Has(h1) {
		t.Fatalf("GC = %+v", res)
	}
	mustReadTree(t, s, h2, t2)
	s.Close()
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	mustReadTree(t, s, h2, t2)
	// Nothing live: everything goes.
	if res, err := s.GC(nil); err != nil || res.PacksDeleted != 1 {
		t.Fatalf("GC(nil) = %+v, %v", res, err)
	}
	if st := s.Stats(); st != (StoreStats{}) {
		t.Fatalf("after GC(nil): %+v", st)
	}
}

// A dead delta in a pack that holds live objects would stay in the index, and a later put of the
// same tree would trust it: GC rewrites that pack without it rather than keep its base, and the
// same tree put again is stored afresh.
func TestGCDeadDeltaInKeptPack(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	r := rand.New(rand.NewPCG(9, 9))
	t0 := dirTree(r, 35)
	t1 := editOne(r, t0)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	commit(t, b)
	b = s.NewBatch()
	h1, _ := putDelta(t, b, t1, h0)
	liveD := text(3, 50_000)
	keep, _ := put(t, b, liveD) // keeps pack 2 as it is
	commit(t, b)
	res, err := s.GC(set(keep))
	if err != nil {
		t.Fatal(err)
	}
	if res.PacksDeleted != 1 || res.PacksRewritten != 1 {
		t.Fatalf("GC = %+v", res)
	}
	if s.Has(h1) || s.Has(h0) {
		t.Fatal("dead delta or its base kept")
	}
	mustRead(t, s, keep, liveD)
	b = s.NewBatch()
	if _, n, _ := b.PutTree(t1); n == 0 {
		t.Fatal("deduplicated onto a collected tree")
	}
	commit(t, b)
	mustReadTree(t, s, h1, t1)
	// After a reopen, the dead delta is learnt by reading its record (an idx without bases).
	s.Close()
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(set(keep, h1)); err != nil {
		t.Fatal(err)
	}
	mustReadTree(t, s, h1, t1)
	if res, err := s.GC(nil); err != nil || res.PacksDeleted != 2 {
		t.Fatalf("GC(nil) = %+v, %v", res, err)
	}
}

// A dead delta whose record cannot be read does not stop GC (it is unreadable anyway); a live one
// does, since its base cannot be known.
func TestGCDamagedDelta(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(10, 10))
	t0 := dirTree(r, 35)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	commit(t, b)
	b = s.NewBatch()
	h1, _ := putDelta(t, b, editOne(r, t0), h0)
	keep, _ := put(t, b, text(3, 50_000))
	commit(t, b)
	s.index.at(h1).pack.deltas[0].base = tree.ZeroHash // as after a reopen
	flip(t, s, h1, -1)                                 // the record header
	_, err := s.GC(set(keep, h1))
	faulttest.Require(t, err, fault.ErrIntegrity, "GC of a live damaged delta")
	if !s.Has(h0) {
		t.Fatal("GC deleted after failing")
	}
	if _, err := s.GC(set(keep)); err != nil {
		t.Fatal(err)
	}
	if s.Has(h0) {
		t.Fatal("base of a damaged dead delta kept")
	}
}

// A dead delta in a kept pack whose base is a damaged delta: GC keeps what it can and succeeds.
func TestGCDeadChainDamaged(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(14, 14))
	t0 := dirTree(r, 35)
	t1 := editOne(r, t0)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	commit(t, b)
	b = s.NewBatch()
	h1, _ := putDelta(t, b, t1, h0)
	commit(t, b)
	b = s.NewBatch()
	h2, _ := putDelta(t, b, editOne(r, t1), h1)
	keep, _ := put(t, b, text(3, 50_000))
	commit(t, b)
	for _, p := range s.packs {
		for i := range p.deltas {
			p.deltas[i].base = tree.ZeroHash // as after a reopen
		}
	}
	flip(t, s, h1, -1)
	if _, err := s.GC(set(keep)); err != nil {
		t.Fatal(err)
	}
	// The dead delta's pack is rewritten without it, so none of its chain stays.
	if s.Has(h2) || s.Has(h1) || s.Has(h0) || !s.Has(keep) {
		t.Fatalf("after GC: %v %v %v %v", s.Has(h2), s.Has(h1), s.Has(h0), s.Has(keep))
	}
}

// Two copies of one tree, whole and as a delta: the index prefers the whole one, at commit and at
// Open, whatever the pack order.
func TestIndexPrefersWholeCopy(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 11))
	t0 := dirTree(r, 35)
	t1 := editOne(r, t0)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	commit(t, b)
	b1 := s.NewBatch()
	b2 := s.NewBatch()
	h1, _ := putDelta(t, b1, t1, h0)
	putDelta(t, b2, t1, tree.ZeroHash)
	commit(t, b1)
	if !isDelta(s, h1) {
		t.Fatal("setup")
	}
	commit(t, b2)
	if isDelta(s, h1) {
		t.Fatal("whole copy committed later not preferred")
	}
	s.Close()
	for range 2 {
		s, err = Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if isDelta(s, h1) {
			t.Fatal("whole copy not preferred at Open")
		}
		mustReadTree(t, s, h1, t1)
		s.Close()
	}
}

func TestDeltaPrefixAndKind(t *testing.T) {
	base := tree.Sum([]byte("b"))
	p := appendDeltaPrefix(nil, base, 3)
	if got, d, rest, err := parseDeltaPrefix(append(p, 'x')); err != nil || got != base || d != 3 || string(rest) != "x" {
		t.Fatalf("round trip: %v %d %q %v", got, d, rest, err)
	}
	for name, b := range map[string][]byte{
		"short":     p[:32],
		"depth 0":   appendDeltaPrefix(nil, base, 0),
		"too deep":  appendDeltaPrefix(nil, base, maxDeltaDepth+1),
		"zero base": appendDeltaPrefix(nil, tree.ZeroHash, 1),
	} {
		if _, _, _, err := parseDeltaPrefix(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if TreeDeltaObject.String() != "tree-delta" || !TreeDeltaObject.valid() || BlobDeltaObject.String() != "blob-delta" ||
		!BlobDeltaObject.valid() || BundledBlobObject.String() != "blob-bundled" || !BundledBlobObject.valid() ||
		Kind(6).valid() || Kind(0).valid() || Kind(6).String() != "kind(6)" {
		t.Fatal("Kind")
	}
}

// A delta-stored object named by a file entry (content equal to a tree encoding) keeps its chain
// reachable too.
func TestReachableBlobStoredAsDelta(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(12, 12))
	t0 := dirTree(r, 10)
	t1 := editOne(r, t0)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	h1, _ := putDelta(t, b, t1, h0)
	enc := mustEncode(t, t1)
	if n, err := b.PutBlob(bytes.NewReader(enc), sha256.Sum256(enc), int64(len(enc))); err != nil || n != 0 {
		t.Fatalf("PutBlob of a tree's bytes: %d %v", n, err)
	}
	root, _ := putDelta(t, b, Tree{{Name: "f", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(enc)), Hash: h1}}, tree.ZeroHash)
	commit(t, b)
	live, err := s.Reachable([]tree.Hash{root})
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 3 {
		t.Fatalf("Reachable = %d objects", len(live))
	}
	for _, h := range []tree.Hash{root, h0, h1} {
		if _, ok := live[h]; !ok {
			t.Fatalf("%s not reachable", h)
		}
	}
	// A tree first reached as a base (of h3) must still be walked when a directory names it: blobB
	// is only in h2.
	b = s.NewBatch()
	blobA, _ := put(t, b, []byte("a"))
	blobB, _ := put(t, b, []byte("b"))
	blobC, _ := put(t, b, []byte("c"))
	t2 := Tree{{Name: "x", Kind: tree.KindFile, Mode: 0o644, Size: 1, Hash: blobA}, {Name: "y", Kind: tree.KindFile, Mode: 0o644, Size: 1, Hash: blobB}}
	t3 := Tree{{Name: "x", Kind: tree.KindFile, Mode: 0o644, Size: 1, Hash: blobA}, {Name: "y", Kind: tree.KindFile, Mode: 0o644, Size: 1, Hash: blobC}}
	h2, _ := putDelta(t, b, t2, tree.ZeroHash)
	h3, _ := putDelta(t, b, t3, h2)
	top, _ := putDelta(t, b, Tree{{Name: "a", Kind: tree.KindDir, Mode: 0o755, Hash: h3}, {Name: "b", Kind: tree.KindDir, Mode: 0o755, Hash: h2}}, tree.ZeroHash)
	commit(t, b)
	if !isDelta(s, h3) {
		t.Fatal("setup: h3 not a delta")
	}
	live, err = s.Reachable([]tree.Hash{top})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := live[blobB]; !ok || len(live) != 6 {
		t.Fatalf("Reachable = %d objects", len(live))
	}
}

// Workers storing delta chains into one batch while others read committed ones (run with -race).
func TestDeltaConcurrent(t *testing.T) {
	s := TestStore(t)
	const workers, versions = 4, 12
	chains := make([][]Tree, workers)
	for w := range chains {
		r := rand.New(rand.NewPCG(uint64(w), 99))
		chains[w] = []Tree{dirTree(r, 30)}
		for len(chains[w]) < 2*versions {
			chains[w] = append(chains[w], editOne(r, chains[w][len(chains[w])-1]))
		}
	}
	// The first half committed, the second half stored concurrently on top of it.
	heads := make([]tree.Hash, workers)
	b := s.NewBatch()
	for w := range chains {
		for _, tr := range chains[w][:versions] {
			heads[w], _ = putDelta(t, b, tr, heads[w])
		}
	}
	commit(t, b)
	b = s.NewBatch()
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers)
	for w := range chains {
		wg.Add(2)
		go func() {
			defer wg.Done()
			h := heads[w]
			for _, tr := range chains[w][versions:] {
				var err error
				if h, _, err = b.PutTreeDelta(tr, h); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := s.Flatten(heads[w]); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	commit(t, b)
	for w := range chains {
		for _, tr := range chains[w] {
			h, _, _ := HashTree(tr)
			mustReadTree(t, s, h, tr)
		}
	}
}

// The case deltas are for: a checkpoint after 1% of a 10k-file workspace changed (100 files in 100
// directories). The trees it writes (changed directories and their ancestors) take, on disk with
// record headers and idx, a fraction of what they take whole.
func TestCheckpointTreeBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 15))
	// root -> 8 dirs -> 6 dirs each -> 6 leaf dirs each of 35 files: 344 trees, 10,080 files.
	type dir struct {
		entries Tree
		subs    []*dir
	}
	var build func(level int) *dir
	build = func(level int) *dir {
		d := &dir{}
		if level == 3 {
			d.entries = dirTree(r, 35)
			for i := range d.entries {
				if d.entries[i].Kind == tree.KindDir { // leaves hold files only
					d.entries[i] = TreeEntry{Name: d.entries[i].Name, Kind: tree.KindFile, Mode: 0o644, Size: 1000}
					fillHash(r, &d.entries[i].Hash)
				}
			}
			return d
		}
		for i := range []int{8, 6, 6}[level] {
			d.subs = append(d.subs, build(level+1))
			d.entries = append(d.entries, TreeEntry{Name: fmt.Sprintf("d%d", i), Kind: tree.KindDir, Mode: 0o755})
		}
		return d
	}
	root := build(0)
	var leaves []*dir
	var collect func(d *dir)
	collect = func(d *dir) {
		if d.subs == nil {
			leaves = append(leaves, d)
		}
		for _, s := range d.subs {
			collect(s)
		}
	}
	collect(root)
	prev := map[*dir]tree.Hash{}
	var store func(b *Batch, d *dir, delta bool) tree.Hash
	store = func(b *Batch, d *dir, delta bool) tree.Hash {
		for i, s := range d.subs {
			d.entries[i].Hash = store(b, s, delta)
		}
		base := prev[d]
		if !delta {
			base = tree.ZeroHash
		}
		h, _ := putDelta(t, b, d.entries, base)
		prev[d] = h
		return h
	}
	diskBytes := func(s *Store) int64 {
		var n int64
		for _, f := range files(t, s.packsDir) {
			fi, _ := os.Stat(s.packsDir + "/" + f)
			n += fi.Size()
		}
		return n
	}
	orig := make([]Tree, len(leaves))
	edited := make([]Tree, len(leaves))
	for i, leaf := range leaves {
		orig[i], edited[i] = leaf.entries, leaf.entries
	}
	for _, i := range r.Perm(len(leaves))[:100] {
		edited[i] = editOne(r, orig[i])
	}
	var used [2]int64
	for i, delta := range []bool{false, true} {
		s := TestStore(t)
		for k := range leaves {
			leaves[k].entries = orig[k]
		}
		b := s.NewBatch()
		store(b, root, delta)
		commit(t, b)
		before := diskBytes(s)
		for k := range leaves {
			leaves[k].entries = edited[k]
		}
		b = s.NewBatch()
		store(b, root, delta)
		commit(t, b)
		used[i] = diskBytes(s) - before
	}
	t.Logf("trees of a 1%% checkpoint: %d bytes whole, %d as deltas (%.1fx)", used[0], used[1], float64(used[0])/float64(used[1]))
	if used[1]*4 > used[0] {
		t.Fatalf("deltas: %d bytes, whole: %d", used[1], used[0])
	}
}
