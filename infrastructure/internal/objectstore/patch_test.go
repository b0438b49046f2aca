package objectstore

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
)

// recordData returns the stored data of h's record (for a delta: prefix, then frame or patch).
func recordData(t *testing.T, s *Store, h tree.Hash) []byte {
	t.Helper()
	l, ok := s.lookup(h)
	if !ok {
		t.Fatalf("%s not indexed", h)
	}
	buf := getBuf(0)
	data, err := s.readStored(h, l, buf)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(data)
}

// mutateTree returns a copy of t with entries changed, removed and added, kept sorted.
func mutateTree(r *rand.Rand, t Tree, n int) Tree {
	c := slices.Clone(t)
	for range n {
		switch r.IntN(4) {
		case 0:
			if len(c) > 1 {
				i := r.IntN(len(c))
				c = slices.Delete(c, i, i+1)
			}
		case 1:
			e := TreeEntry{Name: fmt.Sprintf("new_%d.txt", r.IntN(1_000_000)), Kind: tree.KindFile, Mode: 0o644, Size: int64(r.IntN(100))}
			fillHash(r, &e.Hash)
			if _, found := slices.BinarySearchFunc(c, e.Name, func(a TreeEntry, n string) int { return strings.Compare(a.Name, n) }); !found {
				c = append(c, e)
				slices.SortFunc(c, func(a, b TreeEntry) int { return strings.Compare(a.Name, b.Name) })
			}
		case 2:
			e := TreeEntry{Name: fmt.Sprintf("link_%d", r.IntN(1_000_000)), Kind: tree.KindSymlink, Mode: 0o777, Target: "t/" + fmt.Sprint(r.IntN(9))}
			if _, found := slices.BinarySearchFunc(c, e.Name, func(a TreeEntry, n string) int { return strings.Compare(a.Name, n) }); !found {
				c = append(c, e)
				slices.SortFunc(c, func(a, b TreeEntry) int { return strings.Compare(a.Name, b.Name) })
			}
		default:
			if slices.ContainsFunc(c, func(e TreeEntry) bool { return e.Kind == tree.KindFile }) {
				c = editOne(r, c)
			}
		}
	}
	return c
}

// A tree patch rebuilds the new encoding exactly, whatever changed (entries edited, removed,
// added, the count and so the header too), and one of a small change is small.
func TestTreePatchRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		base := randomDirs(r, dirTree(r, 2+r.IntN(120)))
		next := mutateTree(r, base, 1+r.IntN(6))
		be, ne := mustEncode(t, base), mustEncode(t, next)
		p, ok := appendTreePatch([]byte("prefix"), be, ne)
		if !ok || !bytes.HasPrefix(p, []byte("prefix"+patchMagic)) {
			t.Fatalf("case %d: no patch (%v)", i, ok)
		}
		got, err := applyPatch(p[len("prefix"):], be, int64(len(ne)), nil)
		if err != nil || !bytes.Equal(got, ne) {
			t.Fatalf("case %d: applied %v, want the new encoding", i, err)
		}
	}
	base := dirTree(r, 100)
	be, ne := mustEncode(t, base), mustEncode(t, editOne(r, base))
	p, _ := appendTreePatch(nil, be, ne)
	if len(p) > 80 {
		t.Fatalf("a one-entry change of a 100-entry tree: a patch of %d bytes", len(p))
	}
	// The same tree: one copy of everything.
	if p, _ := appendTreePatch(nil, be, be); len(p) > len(patchMagic)+1+3+1 {
		t.Fatalf("an unchanged tree: a patch of %d bytes", len(p))
	}
}

// appendTreePatch declines what it cannot split into entries, on either side.
func TestTreePatchRefusesMalformed(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	good := mustEncode(t, dirTree(r, 12))
	bad := map[string][]byte{
		"no magic":        []byte("garbage"),
		"no count":        []byte(treeMagic),
		"count too large": append([]byte(treeMagic), 0xff, 0x01),
		"truncated":       good[:len(good)-5],
		"trailing bytes":  append(bytes.Clone(good), 0),
		"unknown kind":    append([]byte(treeMagic), 1, 9, 0, 1, 'a'),
		"no mode":         append([]byte(treeMagic), 1, byte(tree.KindFile)),
		"no name length":  append([]byte(treeMagic), 1, byte(tree.KindFile), 0),
		"long name":       append([]byte(treeMagic), 1, byte(tree.KindFile), 0, 40, 'a'),
		"no size":         append([]byte(treeMagic), 1, byte(tree.KindFile), 0, 1, 'a'),
		"short hash":      append([]byte(treeMagic), 1, byte(tree.KindDir), 0, 1, 'a', 1, 2),
		"no target":       append([]byte(treeMagic), 1, byte(tree.KindSymlink), 0, 1, 'a'),
		"no kind":         append([]byte(treeMagic), 2, byte(tree.KindSymlink), 0, 1, 'a', 1, 'b'),
	}
	for name, b := range bad {
		if _, ok := appendTreePatch(nil, b, good); ok {
			t.Errorf("%s as base: patched", name)
		}
		if _, ok := appendTreePatch(nil, good, b); ok {
			t.Errorf("%s as the new tree: patched", name)
		}
	}
}

// A blob that differs from its base in one short run is patched (prefix and suffix copied);
// one that differs in a longer run is not.
func TestBlobPatch(t *testing.T) {
	base := []byte(strings.Repeat("a log line of some length\n", 40))
	cases := map[string][]byte{
		"append":   append(bytes.Clone(base), "one more line\n"...),
		"prepend":  append([]byte("header\n"), base...),
		"edit":     bytes.Replace(base, []byte("some"), []byte("any"), 1),
		"truncate": base[:len(base)-26],
		"same":     base,
		"empty":    {},
	}
	for name, raw := range cases {
		p, ok := appendBlobPatch(nil, base, raw)
		if !ok {
			t.Fatalf("%s: no patch", name)
		}
		if len(p) > len(patchMagic)+2*6+len(raw)-min(len(raw), len(base))+8 && name != "edit" {
			t.Errorf("%s: a patch of %d bytes", name, len(p))
		}
		got, err := applyPatch(p, base, int64(len(raw)), nil)
		if err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("%s: applied %q, %v", name, got, err)
		}
	}
	long := append(bytes.Clone(base), strings.Repeat("x", patchLiteral+1)...)
	if _, ok := appendBlobPatch(nil, base, long); ok {
		t.Fatal("a run longer than patchLiteral was patched")
	}
}

// applyPatch refuses every malformed patch with an error, never a panic or more than the limit.
func TestApplyPatchRefusesMalformed(t *testing.T) {
	base := []byte("0123456789")
	m := patchMagic
	bad := map[string]string{
		"not a patch":       "zstd",
		"truncated op":      m + "\x80",
		"zero length":       m + "\x00\x00",
		"literal past end":  m + "\x0b" + "ab",
		"copy offset cut":   m + "\x04",
		"copy past base":    m + "\x08\x08",
		"offset past base":  m + "\x02\x0b",
		"past the limit":    m + "\x17" + "0123456789a",
		"past limit by two": m + "\x14\x00" + "\x03x",
	}
	for name, p := range bad {
		if out, err := applyPatch([]byte(p), base, 10, nil); err == nil {
			t.Errorf("%s: applied to %q", name, out)
		}
	}
	// A well-formed patch still answers what it makes: readChain checks size and hash.
	if out, err := applyPatch([]byte(m+"\x06\x02"+"\x03!"), base, 10, nil); err != nil || string(out) != "234!" {
		t.Fatalf("copy and literal: %q %v", out, err)
	}
}

// Trees stored as deltas are patches, read back, verified and checked like any delta; appends to a
// blob are stored as patches too. A damaged patch is damage.
func TestPatchesInTheStore(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(9, 9))
	t0 := dirTree(r, 60)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	blob0 := []byte(strings.Repeat("log line\n", 100))
	b0, _ := put(t, b, blob0)
	commit(t, b)
	t1 := editOne(r, t0)
	blob1 := append(bytes.Clone(blob0), "appended\n"...)
	b = s.NewBatch()
	h1, n := putDelta(t, b, t1, h0)
	b1, _ := putFrom(t, b, blob1, b0)
	commit(t, b)
	if !isDelta(s, h1) || !isDelta(s, b1) || n > 100 {
		t.Fatalf("tree delta %v (%d bytes), blob delta %v", isDelta(s, h1), n, isDelta(s, b1))
	}
	for _, h := range []tree.Hash{h1, b1} {
		if d := recordData(t, s, h); !isPatch(d[deltaPrefixLen:]) {
			t.Fatalf("%s: not stored as a patch", h)
		}
		if err := s.CheckObject(h, true); err != nil {
			t.Fatal(err)
		}
	}
	mustReadTree(t, s, h1, t1)
	if got, err := readBlob(s, b1); err != nil || !bytes.Equal(got, blob1) {
		t.Fatal("the patched blob reads back differently")
	}
	// A byte of the patch changed: the record is damaged (its trailer, and the content's hash).
	flipData(t, s, h1, deltaPrefixLen+len(patchMagic)+1)
	_, err := s.ReadTree(h1)
	faulttest.Require(t, err, fault.ErrIntegrity, "a damaged patch")
}

// A store of older packs reads on: a patch whose base is a tree delta stored as a zstd frame (as a
// version 3 writer stored every delta) rebuilds, and so does the chain below it.
func TestPatchOverAZstdDelta(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(11, 12))
	t0 := dirTree(r, 50)
	t1 := editOne(r, t0)
	t2 := editOne(r, t1)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	h1, enc1, err := HashTree(t1)
	if err != nil {
		t.Fatal(err)
	}
	frame, err := encodeWithDict(enc1, mustEncode(t, t0), appendDeltaPrefix(nil, h0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.append(idxEntry{hash: h1, kind: TreeDeltaObject, raw: int64(len(enc1)), comp: int64(len(frame)), base: h0},
		func(w io.Writer) error { _, err := w.Write(frame); return err }); err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	s2, err := Open(s.dir) // a process that has nothing cached
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	b = s2.NewBatch()
	h2, _ := putDelta(t, b, t2, h1)
	commit(t, b)
	if d := recordData(t, s2, h2); !isPatch(d[deltaPrefixLen:]) || recordDepth(t, s2, h2) != 2 {
		t.Fatal("the new version is not a patch at depth 2")
	}
	if d := recordData(t, s2, h1); isPatch(d[deltaPrefixLen:]) {
		t.Fatal("the crafted delta is a patch")
	}
	mustReadTree(t, s2, h1, t1)
	mustReadTree(t, s2, h2, t2)
	for _, h := range []tree.Hash{h1, h2} {
		if err := s2.CheckObject(h, true); err != nil {
			t.Fatal(err)
		}
	}
}

// gc re-encodes what a kept object stored as a patch needs when its base goes: the appended
// versions kept read back, the pruned ones are gone.
func TestGCReencodesPatches(t *testing.T) {
	s := TestStore(t)
	v := [][]byte{[]byte(strings.Repeat("first lines of a log\n", 50))}
	for i := range 4 {
		v = append(v, append(bytes.Clone(v[len(v)-1]), fmt.Sprintf("appended %d\n", i)...))
	}
	hs := make([]tree.Hash, len(v))
	prev := tree.ZeroHash
	for i, d := range v {
		b := s.NewBatch()
		hs[i], _ = putFrom(t, b, d, prev)
		commit(t, b)
		prev = hs[i]
		if i > 0 && !isPatch(recordData(t, s, hs[i])[deltaPrefixLen:]) {
			t.Fatalf("v%d is not a patch", i)
		}
	}
	res, err := s.GC(set(hs[0], hs[2], hs[4]))
	if err != nil || res.ObjectsReencoded != 2 {
		t.Fatalf("GC: %+v, %v", res, err)
	}
	for _, i := range []int{1, 3} {
		if s.Has(hs[i]) {
			t.Fatalf("v%d stayed", i)
		}
	}
	for _, i := range []int{0, 2, 4} {
		mustRead(t, s, hs[i], v[i])
	}
}

// A listing most of whose entries changed is stored as the smallest of its patch, its zstd delta and
// its whole compressed encoding, and reads back.
func TestTreeDeltaMostlyChanged(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(13, 14))
	t0 := dirTree(r, 300)
	for i := range t0 {
		t0[i].Name = fmt.Sprintf("a_rather_long_and_repetitive_source_file_name_%04d.go", i)
	}
	t1 := slices.Clone(t0)
	for i := range t1 {
		if t1[i].Kind == tree.KindFile {
			t1[i].Size++
			fillHash(r, &t1[i].Hash)
		}
	}
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	commit(t, b)
	e0, e1 := mustEncode(t, t0), mustEncode(t, t1)
	p, _ := appendTreePatch(nil, e0, e1)
	z, err := encodeWithDict(e1, e0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(z) >= len(p) {
		t.Fatalf("the case does not exercise the choice: zstd delta %d, patch %d", len(z), len(p))
	}
	b = s.NewBatch()
	h1, n := putDelta(t, b, t1, h0)
	commit(t, b)
	if n > int64(deltaPrefixLen+len(z)) {
		t.Fatalf("stored %d bytes, the zstd delta takes %d", n, deltaPrefixLen+len(z))
	}
	mustReadTree(t, s, h1, t1)
}
