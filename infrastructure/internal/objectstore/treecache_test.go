package objectstore

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
)

// The trees a batch stores are kept, once committed, for the record the index locates them at: the
// next batch makes its delta against the cached encoding (no chain to read), and a tree read as a
// base is cached too. An entry is not used for another record of the same tree.
func TestTreeCacheAcrossBatches(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(1, 2))
	t0 := dirTree(r, 40)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	commit(t, b)
	l0, _ := s.lookup(h0)
	enc, depth, ok := s.trees.get(h0, l0)
	if !ok || depth != 0 || !bytes.Equal(enc, mustEncode(t, t0)) {
		t.Fatalf("a committed tree is not cached: %v %d", ok, depth)
	}
	t1 := editOne(r, t0)
	b = s.NewBatch()
	h1, _ := putDelta(t, b, t1, h0)
	commit(t, b)
	l1, _ := s.lookup(h1)
	if _, depth, ok := s.trees.get(h1, l1); !ok || depth != 1 {
		t.Fatalf("the delta is not cached at depth 1: %v %d", ok, depth)
	}
	// Another record of h1 (as after a gc rewrote it): no hit.
	moved := l1
	moved.offset++
	if _, _, ok := s.trees.get(h1, moved); ok {
		t.Fatal("a cached tree served another record")
	}
	// A fresh process's cache is empty: the base is read, and cached for the next version.
	s2, err := Open(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	b = s2.NewBatch()
	t2 := editOne(r, t1)
	h2, _ := putDelta(t, b, t2, h1)
	if _, depth, ok := s2.trees.get(h1, l1WithPack(t, s2, h1)); !ok || depth != 1 {
		t.Fatalf("a base read from the store is not cached: %v %d", ok, depth)
	}
	commit(t, b)
	mustReadTree(t, s2, h2, t2)
	if got := recordDepth(t, s2, h2); got != 2 {
		t.Fatalf("depth %d, want 2", got)
	}
}

func l1WithPack(t *testing.T, s *Store, h tree.Hash) location {
	t.Helper()
	l, ok := s.lookup(h)
	if !ok {
		t.Fatalf("%s not indexed", h)
	}
	return l
}

// The cache keeps at most treeCacheBytes, dropping the oldest first; an encoding too large for it,
// or a location without a pack, is not kept.
func TestTreeCacheBounds(t *testing.T) {
	var c treeCache
	l := location{pack: &packFile{id: "p"}, offset: 1}
	if _, _, ok := c.get(tree.Hash{1}, l); ok {
		t.Fatal("a hit in an empty cache")
	}
	c.put(tree.Hash{1}, make([]byte, treeCacheBytes/8+1), 0, l)
	c.put(tree.Hash{2}, []byte("x"), 0, location{})
	if len(c.m) != 0 {
		t.Fatalf("kept %d entries", len(c.m))
	}
	chunk := treeCacheBytes / 8
	for i := range 10 {
		c.put(tree.Hash{byte(i)}, make([]byte, chunk), i, l)
	}
	if c.bytes > treeCacheBytes || len(c.m) != 8 {
		t.Fatalf("%d bytes in %d entries", c.bytes, len(c.m))
	}
	if _, _, ok := c.get(tree.Hash{0}, l); ok {
		t.Fatal("the oldest entry survived")
	}
	if _, d, ok := c.get(tree.Hash{9}, l); !ok || d != 9 {
		t.Fatal("the newest entry is gone")
	}
	// Put again: replaced in place, counted once.
	c.put(tree.Hash{9}, []byte("y"), 3, l)
	if enc, d, ok := c.get(tree.Hash{9}, l); !ok || d != 3 || string(enc) != "y" || c.bytes != 7*chunk+1 {
		t.Fatalf("replaced entry: %q %d %v, %d bytes", enc, d, ok, c.bytes)
	}
	if _, _, ok := c.get(tree.Hash{9}, location{}); ok {
		t.Fatal("a hit without a pack")
	}
}

// A content read through the cache (a diff) caches every tree of the chain it decodes at that
// record's depth, and a later read of any of them stops there; verify still reads the records.
func TestReadTreeCachedChain(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(3, 3))
	trees := []Tree{dirTree(r, 30)}
	hs := []tree.Hash{}
	prev := tree.ZeroHash
	for i := range 5 {
		if i > 0 {
			trees = append(trees, editOne(r, trees[i-1]))
		}
		b := s.NewBatch()
		h, _ := putDelta(t, b, trees[i], prev)
		commit(t, b)
		hs, prev = append(hs, h), h
	}
	s2, err := Open(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err := s2.readTreeCached(hs[4])
	if err != nil || len(got) != len(trees[4]) {
		t.Fatalf("readTreeCached: %v", err)
	}
	for i, h := range hs {
		l, _ := s2.lookup(h)
		if _, depth, ok := s2.trees.get(h, l); !ok || depth != recordDepth(t, s2, h) {
			t.Fatalf("v%d: cached %v at depth %d, want %d", i, ok, depth, recordDepth(t, s2, h))
		}
	}
	changes, err := s2.DiffTrees(hs[3], hs[4])
	if err != nil || len(changes) != 1 {
		t.Fatalf("DiffTrees: %v %v", changes, err)
	}
	mustReadTree(t, s2, hs[2], trees[2])
	// A record damaged after it was cached: a content read answers the content its hash names,
	// CheckObject reads the record and reports the damage.
	flipData(t, s2, hs[2], deltaPrefixLen+2)
	if _, err := s2.readTreeCached(hs[2]); err != nil {
		t.Fatal(err)
	}
	faulttest.Require(t, s2.CheckObject(hs[2], true), fault.ErrIntegrity, "CheckObject of a damaged record")
}

// readTreeCached refuses what ReadTree refuses: a blob read as a tree, a tree too large to be one;
// and a base whose record cannot be read makes the new version whole, not a failure.
func TestReadTreeCachedRefuses(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(4, 4))
	b := s.NewBatch()
	blob, _ := put(t, b, []byte("not a tree"))
	t0 := dirTree(r, 20)
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	commit(t, b)
	if _, err := s.readTreeCached(blob); err == nil {
		t.Fatal("a blob read as a tree")
	}
	l := s.index.at(h0)
	big := l
	big.raw = maxTreeSize + 1
	s.index.set(h0, big)
	_, err := s.readTreeCached(h0)
	faulttest.Require(t, err, fault.ErrIntegrity, "a tree too large")
	s.index.set(h0, l)
	if got, err := s.readTreeCached(tree.ZeroHash); err != nil || got != nil {
		t.Fatalf("the empty tree: %v %v", got, err)
	}
	// The base's bytes damaged on disk (not yet known): the next version is stored whole.
	s2, err := Open(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	flipData(t, s2, h0, 3)
	b = s2.NewBatch()
	h1, _ := putDelta(t, b, editOne(r, t0), h0)
	commit(t, b)
	if isDelta(s2, h1) {
		t.Fatal("a delta against an unreadable base")
	}
}

// Small blobs are kept like trees, so that the next version of an appended file is patched against
// the last one from memory; a blob over cacheBlobMax is not kept, and a batch keeps blobs only
// within their own budget.
func TestTreeCacheKeepsSmallBlobs(t *testing.T) {
	s := TestStore(t)
	small := bytes.Repeat([]byte("a line of a log\n"), 100)
	large := bytes.Repeat([]byte("0123456789abcdef"), cacheBlobMax/16+1)
	b := s.NewBatch()
	hs, _ := put(t, b, small)
	hl, _ := put(t, b, large)
	commit(t, b)
	ls, _ := s.lookup(hs)
	if enc, _, ok := s.trees.get(hs, ls); !ok || !bytes.Equal(enc, small) {
		t.Fatal("a small blob is not cached")
	}
	ll, _ := s.lookup(hl)
	if _, _, ok := s.trees.get(hl, ll); ok {
		t.Fatal("a large blob is cached")
	}
	v := hs
	content := small
	for i := range 3 {
		content = append(bytes.Clone(content), []byte{'x', byte('0' + i), '\n'}...)
		b = s.NewBatch()
		v, _ = putFrom(t, b, content, v)
		commit(t, b)
		l, _ := s.lookup(v)
		if _, depth, ok := s.trees.get(v, l); !ok || depth != i+1 || recordDepth(t, s, v) != i+1 {
			t.Fatalf("version %d: cached %v at depth %d", i+1, ok, depth)
		}
	}
	mustRead(t, s, v, content)
	// The batch's own budget for blobs.
	b = s.NewBatch()
	b.blobBytes = batchTreeMemory
	h, _ := put(t, b, []byte("one more small blob"))
	if _, _, ok := b.recalled(h); ok {
		t.Fatal("a blob kept past the batch's budget")
	}
	b.Abort()
}
