package objectstore

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// history is a workspace's checkpoints as a writer stores them: each file against its content at
// the checkpoint before, each root tree against the root before.
type history struct {
	files  int
	states []map[string][]byte
	roots  []tree.Hash
}

// workload returns the next content of file i after version v under kind: appended to (a log),
// rewritten in place (an edited source file), or left alone; mixed gives each file one of them.
func workload(kind string, r *rand.Rand, i int, old []byte) []byte {
	if kind == "mixed" {
		kind = []string{"appended", "rewritten", "same", "same"}[i%4]
	}
	switch kind {
	case "appended":
		return append(bytes.Clone(old), text(r.Uint64(), 600)...)
	case "rewritten":
		return edit(r, old)
	}
	return old
}

func newHistory(t *testing.T, s *Store, kind string, files, checkpoints int) *history {
	t.Helper()
	r := rand.New(rand.NewPCG(7, uint64(len(kind))))
	h := &history{files: files}
	cur := map[string][]byte{}
	for i := range files {
		cur[fmt.Sprintf("f%03d", i)] = text(uint64(i+100), 3000+r.IntN(3000))
	}
	for range checkpoints {
		next := map[string][]byte{}
		for i := range files {
			name := fmt.Sprintf("f%03d", i)
			next[name] = workload(kind, r, i, cur[name])
		}
		h.states = append(h.states, next)
		h.roots = append(h.roots, storeState(t, s, next, cur, h.last()))
		cur = next
	}
	return h
}

func (h *history) last() tree.Hash {
	if len(h.roots) == 0 {
		return tree.ZeroHash
	}
	return h.roots[len(h.roots)-1]
}

// storeState stores one checkpoint of state, as the scanner does, and returns its root.
func storeState(t *testing.T, s *Store, state, prev map[string][]byte, prevRoot tree.Hash) tree.Hash {
	t.Helper()
	b := s.NewBatch()
	var tr Tree
	for i := range len(state) {
		name := fmt.Sprintf("f%03d", i)
		base := tree.ZeroHash
		if p, ok := prev[name]; ok {
			base = tree.Sum(p)
		}
		h, _ := putFrom(t, b, state[name], base)
		tr = append(tr, TreeEntry{Name: name, Kind: tree.KindFile, Mode: 0o644, Size: int64(len(state[name])), Hash: h})
	}
	root, _, err := b.PutTreeDelta(tr, prevRoot)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	return root
}

// storeBytes is what the store's packs and indexes take on disk.
func storeBytes(t *testing.T, s *Store) int64 {
	t.Helper()
	var n int64
	for _, name := range files(t, s.packsDir) {
		fi, err := os.Stat(filepath.Join(s.packsDir, name))
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// requireStates reads every file of the kept roots back.
func requireStates(t *testing.T, s *Store, roots []tree.Hash, states []map[string][]byte) {
	t.Helper()
	for i, root := range roots {
		tr, err := s.ReadTree(root)
		if err != nil {
			t.Fatalf("root %d: %v", i, err)
		}
		for _, e := range tr {
			mustRead(t, s, e.Hash, states[i][e.Name])
		}
	}
}

// After keeping the newest N of 20 checkpoints and collecting, the store is within 1.2x a fresh
// store of those N checkpoints, for files appended to, rewritten in place, and a mix of both with
// files that do not change: no version only a pruned checkpoint held stays as a delta base.
func TestGCAfterPruneIsAFreshStore(t *testing.T) {
	for _, kind := range []string{"appended", "rewritten", "mixed"} {
		for _, keep := range []int{1, 5} {
			t.Run(fmt.Sprintf("%s/keep-%d", kind, keep), func(t *testing.T) {
				dir := t.TempDir()
				s, err := Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				h := newHistory(t, s, kind, 40, 20)
				before := storeBytes(t, s)
				roots := h.roots[len(h.roots)-keep:]
				states := h.states[len(h.states)-keep:]
				live, err := s.Referenced(roots)
				if err != nil {
					t.Fatal(err)
				}
				res, err := s.GCFrom(live, roots)
				if err != nil {
					t.Fatal(err)
				}
				after := storeBytes(t, s)

				fresh := TestStore(t)
				var prev map[string][]byte
				prevRoot := tree.ZeroHash
				for _, st := range states {
					prevRoot = storeState(t, fresh, st, prev, prevRoot)
					prev = st
				}
				want := storeBytes(t, fresh)
				ratio := float64(after) / float64(want)
				t.Logf("%s keep %d: %d bytes before, %d after gc (%+v), fresh %d: %.3fx", kind, keep, before, after, res, want, ratio)
				if ratio > 1.2 {
					t.Fatalf("the store after prune and gc is %.2fx a fresh store of the kept checkpoints (want <= 1.2x)", ratio)
				}
				if res.ObjectsReencoded == 0 {
					t.Fatal("nothing re-encoded")
				}
				requireStates(t, s, roots, states)
				// Another process, and another gc: nothing left to re-encode, nothing changes.
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if s, err = Open(dir); err != nil {
					t.Fatal(err)
				}
				defer func() { _ = s.Close() }()
				requireStates(t, s, roots, states)
				if res, err := s.GCFrom(live, roots); err != nil || res != (GCResult{}) {
					t.Fatalf("second gc: %+v, %v (want nothing to do)", res, err)
				}
				if p := s.Problems(); len(p) != 0 {
					t.Fatalf("problems: %v", p)
				}
			})
		}
	}
}

// Without an order (GC), a kept delta whose base is dead is stored against the first live object
// down its old chain, or whole when there is none; a kept delta whose base is live stays.
func TestGCReencodesAgainstALiveBaseDownTheChain(t *testing.T) {
	s := TestStore(t)
	r := randFor(71)
	v := [][]byte{text(71, 20_000)}
	for range 4 {
		v = append(v, edit(r, v[len(v)-1]))
	}
	hs := make([]tree.Hash, len(v))
	prev := tree.ZeroHash
	for i, d := range v {
		b := s.NewBatch()
		hs[i], _ = putFrom(t, b, d, prev)
		commit(t, b)
		prev = hs[i]
	}
	// Keep v0, v2 and v4: v2's base v1 is dead, v4's base v3 too.
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
	if !isDelta(s, hs[2]) || !isDelta(s, hs[4]) {
		t.Fatal("not stored as deltas against the live versions")
	}
	if base, _ := s.cachedBase(hs[4], s.index.at(hs[4])); base != hs[2] {
		t.Fatalf("v4's base is %s, want v2", base)
	}
	// Only v4 kept: no live object down its chain, so it is stored whole.
	res, err = s.GC(set(hs[4]))
	if err != nil || res.ObjectsReencoded != 1 || isDelta(s, hs[4]) || s.Has(hs[2]) || s.Has(hs[0]) {
		t.Fatalf("GC: %+v, %v", res, err)
	}
	mustRead(t, s, hs[4], v[4])
}

// A whole object whose delta against its predecessor does not pay stays as it is, and a
// predecessor whose encoding leads back to the object (two roots that swap contents) is not used.
func TestGCReencodeKeepsWholeWhenADeltaDoesNotPay(t *testing.T) {
	s := TestStore(t)
	a, c := testkit.Noise(81, 30_000), testkit.Noise(82, 30_000) // nothing in common
	base := text(83, 10_000)
	shared := edit(randFor(84), base)
	b := s.NewBatch()
	hb, _ := put(t, b, base)
	commit(t, b)
	mk := func(x, y []byte, from tree.Hash) tree.Hash {
		b := s.NewBatch()
		hx, _ := put(t, b, x)
		hy, _ := putFrom(t, b, y, hb)
		root, _, err := b.PutTree(Tree{
			{Name: "a", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(x)), Hash: hx},
			{Name: "s", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(y)), Hash: hy},
		})
		if err != nil {
			t.Fatal(err)
		}
		commit(t, b)
		return root
	}
	r1 := mk(a, shared, tree.ZeroHash)
	r2 := mk(c, shared, r1)
	r3 := mk(a, shared, r2) // r1 again: r2's successor, and its predecessor: a cycle not to follow
	if r3 != r1 {
		t.Fatal("setup: r3 is not r1")
	}
	roots := []tree.Hash{r1, r2, r3}
	live, err := s.Referenced(roots)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.GCFrom(live, roots)
	// The delta whose base is dead (whole: nothing live down its chain), and r2 against r1.
	if err != nil || res.ObjectsReencoded != 2 || !isDelta(s, r2) || isDelta(s, r1) || isDelta(s, tree.Sum(shared)) {
		t.Fatalf("GC: %+v, %v", res, err)
	}
	if isDelta(s, tree.Sum(a)) || isDelta(s, tree.Sum(c)) || s.Has(hb) {
		t.Fatal("a noise file became a delta, or the dead base stayed")
	}
	mustRead(t, s, tree.Sum(shared), shared)
	mustRead(t, s, tree.Sum(a), a)
	mustRead(t, s, tree.Sum(c), c)
}

// A shared store re-encodes in its mark phase, before the mark: a sweep then deletes the packs
// that held the dead bases, and the kept checkpoints read from every workspace.
func TestSharedGCReencodesBeforeItsMark(t *testing.T) {
	be, s := os2New(t, true)
	h := newHistory(t, s, "appended", 20, 12)
	roots := h.roots[len(h.roots)-2:]
	before := storeBytes2(t, be)
	res, err := s.SharedGC(os2Live(roots...), 0)
	if err != nil || res.ObjectsReencoded == 0 || res.PacksDeleted == 0 {
		t.Fatalf("SharedGC: %+v, %v", res, err)
	}
	after := storeBytes2(t, be)
	if after*2 > before {
		t.Fatalf("the store went from %d to %d bytes: the dead bases stayed", before, after)
	}
	other := os2Open(t, be)
	requireStates(t, other, roots, h.states[len(h.states)-2:])
	requireStates(t, s, roots, h.states[len(h.states)-2:])
}

func storeBytes2(t *testing.T, be *os2Backend) int64 {
	t.Helper()
	fis, err := be.List("packs")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, fi := range fis {
		n += fi.Size
	}
	return n
}

// A sweep deletes a pack holding a delta before the pack its base is in, so that a sweep killed
// half-way leaves no delta without its base; packs that depend on each other keep their id order.
func TestSweepDeletesDependentsFirst(t *testing.T) {
	_, s := os2New(t, true)
	r := randFor(91)
	v0 := text(91, 20_000)
	v1 := edit(r, v0)
	v2 := edit(r, v1)
	var hs []tree.Hash
	prev := tree.ZeroHash
	for _, v := range [][]byte{v0, v1, v2} {
		b := s.NewBatch()
		h, _ := putFrom(t, b, v, prev)
		commit(t, b)
		hs = append(hs, h)
		prev = h
	}
	p0, p1, p2 := s.index.at(hs[0]).pack, s.index.at(hs[1]).pack, s.index.at(hs[2]).pack
	got := s.dependentsFirst([]string{p0.id, p1.id, p2.id})
	if want := []string{p2.id, p1.id, p0.id}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	// p0 made to read a base from p2 too: a cycle, left in the order given.
	p0.deltas = append(p0.deltas, deltaRec{hash: tree.Sum([]byte("x")), kind: BlobDeltaObject, base: hs[2]})
	ids := []string{p0.id, p1.id, p2.id}
	if got := s.dependentsFirst(ids); !slices.Equal(got, ids) {
		t.Fatalf("order %v, want %v", got, ids)
	}
	// A pack no longer loaded orders as one without deltas.
	if got := s.dependentsFirst([]string{"0000000000000000000000000000000f", p1.id}); len(got) != 2 {
		t.Fatalf("order %v", got)
	}
}

// A re-encoding that cannot read what it needs (a kept root's listing, the old chain of a kept
// delta, its new base) fails the gc before anything is deleted; once the error is gone, the gc
// re-encodes and every kept state reads.
func TestGCReencodeFailsBeforeDeleting(t *testing.T) {
	pick := map[string]func(s *Store, h *history) tree.Hash{
		"a kept root's listing": func(_ *Store, h *history) tree.Hash { return h.roots[len(h.roots)-1] },
		"a kept delta's chain": func(s *Store, h *history) tree.Hash {
			tr, err := s.ReadTree(h.roots[len(h.roots)-2])
			if err != nil {
				t.Fatal(err)
			}
			return tr[0].Hash
		},
	}
	for name, obj := range pick {
		t.Run(name, func(t *testing.T) {
			be, s := os2New(t, false)
			h := newHistory(t, s, "appended", 6, 12)
			roots := h.roots[len(h.roots)-2:]
			live, err := s.Referenced(roots)
			if err != nil {
				t.Fatal(err)
			}
			failing := s.index.at(obj(s, h)).pack.id
			s.Close()
			s = os2Open(t, be)
			before := os2Names(t, be, "packs")
			be.on("Open", func(n string) bool { return n == packName(failing) })
			_, err = s.GCFrom(live, roots)
			if !errors.Is(err, errOS2IO) || !strings.Contains(err.Error(), "nothing was deleted") {
				t.Fatalf("GC: %v (want the I/O error, and that nothing was deleted)", err)
			}
			if got := os2Names(t, be, "packs"); !slices.Equal(got, before) {
				t.Fatalf("packs %v, want %v", got, before)
			}
			be.setHook(nil)
			res, err := s.GCFrom(live, roots)
			if err != nil || res.ObjectsReencoded == 0 {
				t.Fatalf("GC: %+v, %v", res, err)
			}
			requireStates(t, s, roots, h.states[len(h.states)-2:])
		})
	}
}

// A writer that deduplicates onto a version only pruned checkpoints held (its file went back to
// that content) while a gc re-encodes around it: if it confirms after the mark, it copies the
// version out of the condemned pack; if its record is visible before the sweep computes the live
// set, the sweep keeps the pack. Either way what it references survives the sweep, and so do the
// kept checkpoints, re-encoded.
func TestSharedReencodeWithAWriterOnTheOldBase(t *testing.T) {
	for _, confirms := range []bool{true, false} {
		t.Run(fmt.Sprintf("confirms=%v", confirms), func(t *testing.T) {
			be, s := os2New(t, true)
			h := newHistory(t, s, "appended", 4, 12)
			kept := h.roots[len(h.roots)-1:]
			old := h.states[3]["f000"] // a version only a pruned checkpoint held
			be.advance(2 * time.Hour)
			w := os2Open(t, be) // the writer's process, its index loaded before the gc
			res, err := s.SharedGC(os2Live(kept...), time.Hour)
			if err != nil || res.ObjectsReencoded == 0 || res.PacksCondemned == 0 || res.PacksDeleted != 0 {
				t.Fatalf("mark: %+v, %v", res, err)
			}
			// The writer stores a tree naming the old version: Present in its stale index.
			b := w.NewBatch()
			hOld, _ := put(t, b, old)
			root, _, err := b.PutTree(Tree{{Name: "f000", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(old)), Hash: hOld}})
			if err != nil {
				t.Fatal(err)
			}
			commit(t, b)
			if confirms {
				if err := w.Confirm(); err != nil {
					t.Fatalf("Confirm: %v", err)
				}
			}
			be.advance(2 * time.Hour)
			res, err = s.SharedGC(os2Live(append([]tree.Hash{root}, kept...)...), time.Hour)
			if err != nil || res.PacksDeleted == 0 {
				t.Fatalf("sweep: %+v, %v", res, err)
			}
			if !confirms && res.PacksKept == 0 {
				t.Fatalf("sweep: %+v (want the pack the writer relies on kept)", res)
			}
			fresh := os2Open(t, be)
			mustRead(t, fresh, hOld, old)
			requireStates(t, fresh, kept, h.states[len(h.states)-1:])
			if p := fresh.Problems(); len(p) != 0 {
				t.Fatalf("problems: %v", p)
			}
		})
	}
}

// A kept delta whose pack is missing cannot be re-encoded: GC keeps its chain, as before, and
// collects the rest.
func TestGCDoesNotReencodeFromAMissingPack(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := randFor(95)
	v0 := text(95, 20_000)
	v1 := edit(r, v0)
	b := s.NewBatch()
	h0, _ := put(t, b, v0)
	commit(t, b)
	b = s.NewBatch()
	h1, _ := putFrom(t, b, v1, h0)
	commit(t, b)
	b = s.NewBatch()
	junk, _ := put(t, b, testkit.Noise(96, 5000))
	commit(t, b)
	p1 := s.index.at(h1).pack.id
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "packs", p1+".pack")); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	res, err := s.GC(set(h1))
	if err != nil || res.ObjectsReencoded != 0 || !s.Has(h0) || s.Has(junk) {
		t.Fatalf("GC: %+v, %v", res, err)
	}
}
