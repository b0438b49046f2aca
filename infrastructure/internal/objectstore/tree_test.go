package objectstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

func sampleTree() Tree {
	return Tree{
		{Name: "a", Kind: tree.KindDir, Mode: 0o755, Hash: tree.Sum([]byte("sub"))},
		{Name: "a-b", Kind: tree.KindFile, Mode: 0o644, Size: 12, Hash: tree.Sum([]byte("x"))},
		{Name: "empty", Kind: tree.KindFile, Mode: 0o600},
		{Name: "link", Kind: tree.KindSymlink, Mode: 0o777, Target: "../x"},
		{Name: "z\xff", Kind: tree.KindFile, Mode: 0o4755, Size: 1 << 40},
	}
}

func TestTreeRoundTrip(t *testing.T) {
	for _, tr := range []Tree{nil, sampleTree()} {
		h, enc, err := HashTree(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h != tree.Sum(enc) {
			t.Fatal("hash is not the SHA-256 of the encoding")
		}
		got, err := DecodeTree(enc)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr) == 0 && len(got) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, tr) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, tr)
		}
	}
}

func TestEncodeTreeRejects(t *testing.T) {
	good := sampleTree()
	mod := func(i int, f func(*TreeEntry)) Tree {
		c := slices.Clone(good)
		f(&c[i])
		return c
	}
	for name, tr := range map[string]Tree{
		"unsorted":         {good[1], good[0]},
		"duplicate":        {good[0], good[0]},
		"empty name":       mod(0, func(e *TreeEntry) { e.Name = "" }),
		"dot":              {{Name: ".", Kind: tree.KindFile}},
		"dotdot":           {{Name: "..", Kind: tree.KindFile}},
		"slash":            mod(0, func(e *TreeEntry) { e.Name = "a/b" }),
		"nul":              mod(0, func(e *TreeEntry) { e.Name = "a\x00" }),
		"long name":        {{Name: strings.Repeat("n", 256), Kind: tree.KindFile}},
		"mode":             mod(1, func(e *TreeEntry) { e.Mode = 0o10000 }),
		"kind":             mod(1, func(e *TreeEntry) { e.Kind = 9 }),
		"negative size":    mod(1, func(e *TreeEntry) { e.Size = -1 }),
		"file target":      mod(1, func(e *TreeEntry) { e.Target = "x" }),
		"dir size":         mod(0, func(e *TreeEntry) { e.Size = 1 }),
		"symlink size":     mod(3, func(e *TreeEntry) { e.Size = 4 }),
		"symlink hash":     mod(3, func(e *TreeEntry) { e.Hash[0] = 1 }),
		"empty target":     mod(3, func(e *TreeEntry) { e.Target = "" }),
		"long target":      mod(3, func(e *TreeEntry) { e.Target = strings.Repeat("t", 4097) }),
		"nul in target":    mod(3, func(e *TreeEntry) { e.Target = "a\x00b" }),
		"unsorted (bytes)": {{Name: "b", Kind: tree.KindFile}, {Name: "B", Kind: tree.KindFile}},
	} {
		if _, err := EncodeTree(tr); fault.Kind(err) != fault.ErrInvalid {
			t.Errorf("%s: got %v", name, err)
		}
		if _, _, err := HashTree(tr); err == nil {
			t.Errorf("%s: HashTree accepted", name)
		}
	}
}

func TestDecodeTreeRejects(t *testing.T) {
	enc, _ := EncodeTree(sampleTree())
	one, _ := EncodeTree(Tree{{Name: "a", Kind: tree.KindFile, Mode: 0o644, Size: 1}})
	hdr := len(treeMagic)
	nonMinimal := append([]byte(treeMagic), 0x81, 0x00) // count 1, padded
	nonMinimal = append(nonMinimal, one[hdr+1:]...)
	cases := map[string][]byte{
		"empty":           nil,
		"bad magic":       []byte("PTREE2\n\x00"),
		"no count":        []byte(treeMagic),
		"trailing":        append(slices.Clone(enc), 0),
		"truncated":       enc[:len(enc)-1],
		"huge count":      binary.AppendUvarint([]byte(treeMagic), 1<<40),
		"non-minimal":     nonMinimal,
		"overlong varint": append([]byte(treeMagic), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
		"bad kind":        replaceAt(one, hdr+1, 9),
		"bad mode":        append(append([]byte(treeMagic), 1, 1), append(binary.AppendUvarint(nil, 0o10000), one[hdr+3:]...)...),
		"big size":        append(append(slices.Clone(one[:hdr+6]), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), make([]byte, 32)...),
		"name past end":   append([]byte(treeMagic), 1, 1, 0, 200, 'a', 'b', 'c', 'd', 'e', 'f'),
		"dot name":        replaceAt(one, hdr+5, '.'),
		"unsorted": func() []byte {
			b := binary.AppendUvarint([]byte(treeMagic), 2)
			for _, n := range []string{"b", "a"} {
				b = append(b, byte(tree.KindDir), 0, 1, n[0])
				b = append(b, make([]byte, 32)...)
			}
			return b
		}(),
		"long target": func() []byte {
			b := append([]byte(treeMagic), 1, byte(tree.KindSymlink), 0, 1, 'l')
			b = binary.AppendUvarint(b, 5000)
			return append(b, bytes.Repeat([]byte("t"), 5000)...)
		}(),
		"empty target": append([]byte(treeMagic), 1, byte(tree.KindSymlink), 0, 1, 'l', 0, 0, 0, 0, 0, 0),
		"nul target":   append([]byte(treeMagic), 1, byte(tree.KindSymlink), 0, 1, 'l', 1, 0, 0, 0, 0, 0, 0),
	}
	for name, b := range cases {
		if _, err := DecodeTree(b); fault.Kind(err) != fault.ErrIntegrity {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

func replaceAt(b []byte, i int, v byte) []byte {
	c := slices.Clone(b)
	c[i] = v
	return c
}

// model is a random directory tree; files are keyed by name, directories are nested models.
type model struct {
	mode  uint32
	files map[string]TreeEntry
	dirs  map[string]*model
}

var names = []string{"a", "a-b", "a.b", "ab", "b", "B", "c", "a0", "z"}

func randomModel(r *rand.Rand, depth int) *model {
	m := &model{mode: 0o755, files: map[string]TreeEntry{}, dirs: map[string]*model{}}
	for _, n := range names {
		switch x := r.IntN(10); {
		case x < 3:
			m.files[n] = randomLeaf(r, n)
		case x < 5 && depth > 0:
			m.dirs[n] = randomModel(r, depth-1)
		}
	}
	return m
}

func randomLeaf(r *rand.Rand, n string) TreeEntry {
	if r.IntN(4) == 0 {
		return TreeEntry{Name: n, Kind: tree.KindSymlink, Mode: 0o777, Target: []string{"x", "../y", "/etc"}[r.IntN(3)]}
	}
	return TreeEntry{Name: n, Kind: tree.KindFile, Mode: []uint32{0o644, 0o755}[r.IntN(2)], Size: int64(r.IntN(3)),
		Hash: tree.Hash{byte(r.IntN(3))}}
}

func (m *model) clone() *model {
	c := &model{mode: m.mode, files: map[string]TreeEntry{}, dirs: map[string]*model{}}
	for n, e := range m.files {
		c.files[n] = e
	}
	for n, d := range m.dirs {
		c.dirs[n] = d.clone()
	}
	return c
}

// mutate changes a few random things, at random depths, leaving most subtrees shared.
func (m *model) mutate(r *rand.Rand, depth int) {
	for range 1 + r.IntN(3) {
		n := names[r.IntN(len(names))]
		d, isDir := m.dirs[n]
		switch x := r.IntN(10); {
		case isDir && x < 5:
			d.mutate(r, depth-1)
		case isDir && x < 6:
			d.mode = 0o700
		case x < 7:
			delete(m.files, n)
			delete(m.dirs, n)
		case x < 8 && depth > 0:
			delete(m.files, n)
			m.dirs[n] = randomModel(r, depth-1)
		default:
			delete(m.dirs, n)
			m.files[n] = randomLeaf(r, n)
		}
	}
}

// store puts m's trees, each as a delta of the tree stored last at the same path (prev, updated),
// as the scanner does.
func (m *model) store(t testing.TB, b *Batch, prev map[string]tree.Hash, path string) tree.Hash {
	var tr Tree
	for _, e := range m.files {
		tr = append(tr, e)
	}
	for n, d := range m.dirs {
		tr = append(tr, TreeEntry{Name: n, Kind: tree.KindDir, Mode: d.mode, Hash: d.store(t, b, prev, path+"/"+n)})
	}
	slices.SortFunc(tr, func(a, b TreeEntry) int { return strings.Compare(a.Name, b.Name) })
	h, _, err := b.PutTreeDelta(tr, prev[path])
	if err != nil {
		t.Fatal(err)
	}
	prev[path] = h
	return h
}

func (m *model) flat(prefix string, out *[]tree.Entry) {
	for n, e := range m.files {
		*out = append(*out, flatEntry(join(prefix, n), e))
	}
	for n, d := range m.dirs {
		*out = append(*out, tree.Entry{Path: join(prefix, n), Kind: tree.KindDir, Mode: d.mode})
		d.flat(join(prefix, n), out)
	}
}

func TestFlattenAndDiffProperty(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(1, 2))
	var roots []tree.Hash
	var models []*model
	b := s.NewBatch()
	m := randomModel(r, 3)
	prev := map[string]tree.Hash{}
	for i := 0; i < 60; i++ {
		if i%15 == 0 {
			m = randomModel(r, 3)
		} else {
			m = m.clone()
			m.mutate(r, 3)
		}
		roots = append(roots, m.store(t, b, prev, ""))
		models = append(models, m)
		if i%4 == 3 { // some bases committed, some in the batch
			commit(t, b)
			b = s.NewBatch()
		}
	}
	commit(t, b)
	checkFlatten(t, s, roots, models)
	for i := range roots {
		for _, j := range []int{i, (i + 1) % len(roots), r.IntN(len(roots))} {
			fa, _ := s.Flatten(roots[i])
			fb, _ := s.Flatten(roots[j])
			want := tree.Diff(fa, fb)
			got, err := s.DiffTrees(roots[i], roots[j])
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("DiffTrees(%d, %d):\n got %v\nwant %v", i, j, got, want)
			}
		}
	}
	// The zero hash is the empty tree.
	fa, _ := s.Flatten(roots[0])
	got, err := s.DiffTrees(tree.ZeroHash, roots[0])
	if err != nil || !reflect.DeepEqual(got, tree.Diff(nil, fa)) {
		t.Fatalf("diff from the empty tree: %v", err)
	}
	// GC keeping a random subset of the versions (deltas or bases of the dropped ones): the kept
	// ones read the same, after a reopen too, and a second GC finds nothing to do.
	var keptRoots []tree.Hash
	var keptModels []*model
	for i := range roots {
		if r.IntN(3) == 0 {
			keptRoots = append(keptRoots, roots[i])
			keptModels = append(keptModels, models[i])
		}
	}
	deltas := 0
	for h := range s.index.all() {
		if isDelta(s, h) {
			deltas++
		}
	}
	t.Logf("%d of %d objects stored as deltas", deltas, s.index.len())
	if deltas < 20 {
		t.Fatalf("only %d trees stored as deltas", deltas)
	}
	live, err := s.Reachable(keptRoots)
	if err != nil {
		t.Fatal(err)
	}
	var stored []tree.Hash // the model's file hashes are not all stored
	for h := range live {
		if s.Has(h) {
			stored = append(stored, h)
		}
	}
	if res, err := s.GC(live); err != nil || res.PacksDeleted+res.PacksRewritten == 0 {
		t.Fatalf("GC = %+v, %v", res, err)
	}
	for _, h := range stored {
		if !s.Has(h) {
			t.Fatalf("live object %s gone", h)
		}
	}
	s2, err := Open(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	checkFlatten(t, s2, keptRoots, keptModels)
	for _, root := range keptRoots {
		if err := s2.Walk(root, func(_ string, e TreeEntry) error {
			if e.Kind == tree.KindDir {
				return s2.CheckObject(e.Hash, true)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := s2.GC(live); err != nil || res.PacksDeleted+res.PacksRewritten != 0 {
		t.Fatalf("second GC = %+v, %v", res, err)
	}
}

// checkFlatten compares Flatten of each root with its model.
func checkFlatten(t *testing.T, s *Store, roots []tree.Hash, models []*model) {
	t.Helper()
	for i, root := range roots {
		flat, err := s.Flatten(root)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.IsSortedFunc(flat, func(a, b tree.Entry) int { return tree.Compare(a.Path, b.Path) }) {
			t.Fatalf("Flatten not in tree.Compare order: %v", flat)
		}
		var want []tree.Entry
		models[i].flat("", &want)
		slices.SortFunc(want, func(a, b tree.Entry) int { return tree.Compare(a.Path, b.Path) })
		if len(want) != len(flat) {
			t.Fatalf("root %d: Flatten has %d entries, model %d", i, len(flat), len(want))
		}
		for k := range want {
			got := flat[k]
			if got.Kind == tree.KindDir {
				got.Hash = tree.Hash{} // the model does not know subtree hashes
			}
			if got != want[k] {
				t.Fatalf("root %d entry %d: got %+v want %+v", i, k, got, want[k])
			}
		}
	}
}

func TestDiffSkipsSharedSubtrees(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	shared := Tree{{Name: "f", Kind: tree.KindFile, Mode: 0o644, Hash: tree.Hash{1}}}
	sh, _, _ := b.PutTree(shared)
	x, _, _ := b.PutTree(Tree{{Name: "s", Kind: tree.KindDir, Mode: 0o755, Hash: sh}, {Name: "x", Kind: tree.KindFile, Hash: tree.Hash{1}}})
	y, _, _ := b.PutTree(Tree{{Name: "s", Kind: tree.KindDir, Mode: 0o755, Hash: sh}, {Name: "x", Kind: tree.KindFile, Hash: tree.Hash{2}}})
	commit(t, b)
	// Make the shared subtree unreadable: a diff that touched it would fail.
	s.index.del(sh)
	changes, err := s.DiffTrees(x, y)
	if err != nil || len(changes) != 1 || changes[0].Path != "x" || changes[0].Type != tree.Modified {
		t.Fatalf("DiffTrees = %v, %v", changes, err)
	}
	if _, err := s.DiffTrees(x, tree.ZeroHash); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("deleting a missing subtree: %v", err)
	}
	if _, err := s.DiffTrees(tree.Hash{9}, x); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("missing root: %v", err)
	}
	if _, err := s.DiffTrees(x, tree.Hash{9}); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("missing root: %v", err)
	}
}

func TestWalkAndReachable(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	f1, _ := put(t, b, []byte("one"))
	f2, _ := put(t, b, []byte("two"))
	sub, _, _ := b.PutTree(Tree{{Name: "f2", Kind: tree.KindFile, Mode: 0o644, Size: 3, Hash: f2}})
	root1, _, _ := b.PutTree(Tree{
		{Name: "d", Kind: tree.KindDir, Mode: 0o755, Hash: sub},
		{Name: "f1", Kind: tree.KindFile, Mode: 0o644, Size: 3, Hash: f1},
		{Name: "l", Kind: tree.KindSymlink, Mode: 0o777, Target: "f1"},
	})
	root2, _, _ := b.PutTree(Tree{{Name: "d", Kind: tree.KindDir, Mode: 0o755, Hash: sub}, {Name: "e", Kind: tree.KindDir, Mode: 0o755, Hash: sub}})
	commit(t, b)
	b = s.NewBatch() // its own pack, which GC can drop whole
	dead, _ := put(t, b, []byte("dead"))
	commit(t, b)
	var paths []string
	err := s.Walk(root1, func(p string, e TreeEntry) error {
		paths = append(paths, p)
		return nil
	})
	if err != nil || strings.Join(paths, ",") != "d,d/f2,f1,l" {
		t.Fatalf("Walk: %v %v", paths, err)
	}
	paths = nil
	s.Walk(root1, func(p string, e TreeEntry) error {
		paths = append(paths, p)
		if e.Kind == tree.KindDir {
			return fs.SkipDir
		}
		if p == "f1" {
			return fs.SkipAll
		}
		return nil
	})
	if strings.Join(paths, ",") != "d,f1" {
		t.Fatalf("Walk with SkipDir/SkipAll: %v", paths)
	}
	boom := errors.New("boom")
	if err := s.Walk(root1, func(string, TreeEntry) error { return boom }); err != boom {
		t.Fatalf("Walk error: %v", err)
	}
	live, err := s.Reachable([]tree.Hash{root1, root2, root1, tree.ZeroHash})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []tree.Hash{root1, root2, sub, f1, f2} {
		if _, ok := live[h]; !ok {
			t.Errorf("%s not reachable", h)
		}
	}
	if _, ok := live[dead]; ok || len(live) != 5 {
		t.Fatalf("Reachable = %d objects", len(live))
	}
	if _, err := s.Reachable([]tree.Hash{f1}); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a blob as root: %v", err)
	}
	if tr, err := s.ReadTree(tree.ZeroHash); err != nil || len(tr) != 0 {
		t.Fatal("zero hash is the empty tree")
	}
	// GC with the reachable set keeps every checkpoint whole.
	if _, err := s.GC(live); err != nil {
		t.Fatal(err)
	}
	if s.Has(dead) {
		t.Fatal("unreachable blob survived GC")
	}
	for _, root := range []tree.Hash{root1, root2} {
		flat, err := s.Flatten(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range flat {
			if e.Kind == tree.KindFile {
				if err := s.CheckObject(e.Hash, true); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
