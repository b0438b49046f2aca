package objectstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// openDirStore opens a private store in a fresh directory, closed when the test ends.
func openDirStore(t *testing.T) (string, *Store) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return dir, s
}

// packCount counts the packs in dir's packs/ (the files, not the index's view).
func packCount(t *testing.T, dir string) int {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(dir, "packs"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, de := range des {
		if strings.HasSuffix(de.Name(), ".pack") {
			n++
		}
	}
	return n
}

// commitOne stores data in a batch of its own (a pack of its own), as one hook's checkpoint does.
func commitOne(t *testing.T, s *Store, data []byte) tree.Hash {
	t.Helper()
	b := s.NewBatch()
	defer b.Abort()
	h, _ := put(t, b, data)
	commit(t, b)
	return h
}

// A session of small writes, one pack each, consolidated after every write as the CLI does after
// every command: the packs stay few (the threshold plus a logarithmic tail), every object reads
// back byte for byte, also from a store opened afresh, and each byte was copied a logarithmic number
// of times, not once per later write.
func TestConsolidationKeepsPacksFewAndEveryObject(t *testing.T) {
	dir, s := openDirStore(t)
	const n = 400
	data := make(map[tree.Hash][]byte, n)
	var stored, written int64
	merges := 0
	for i := range n {
		d := text(uint64(1000+i), 2000+i%7*300)
		data[commitOne(t, s, d)] = d
		stored += int64(len(d))
		if !s.ConsolidationDue() {
			continue
		}
		res, err := s.Consolidate()
		if err != nil {
			t.Fatalf("consolidate after write %d: %v", i, err)
		}
		if res.PacksMerged > 0 {
			merges++
			written += res.BytesWritten
			if res.PacksWritten != 1 || res.BytesRemoved <= 0 {
				t.Fatalf("consolidation %+v", res)
			}
		}
	}
	if merges == 0 {
		t.Fatal("400 small packs were never consolidated")
	}
	if got := packCount(t, dir); got > consolidateAt+10 {
		t.Fatalf("%d packs after %d writes (want at most %d + a logarithmic tail)", got, n, consolidateAt)
	}
	// Each merge at least doubles what it writes over its largest input: at 400 writes every byte
	// is copied well under 10 times (log2 400 ≈ 8.6), stored compressed (text compresses).
	if written > 10*stored {
		t.Fatalf("consolidation wrote %d bytes for %d stored: not amortised", written, stored)
	}
	for h, d := range data {
		mustRead(t, s, h, d)
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for h, d := range data {
		mustRead(t, again, h, d)
	}
}

// Fewer small packs than the threshold, or packs past the size bound, are left as they are; so is
// a shared store (only its two-phase gc removes packs), and a store whose index was never read is
// not due.
func TestConsolidationLeavesWhatItMustNotMerge(t *testing.T) {
	dir, s := openDirStore(t)
	for i := range consolidateAt - 1 {
		commitOne(t, s, text(uint64(i), 1000))
	}
	if s.ConsolidationDue() {
		t.Fatal("due below the threshold")
	}
	if res, err := s.Consolidate(); err != nil || res.PacksMerged != 0 {
		t.Fatalf("below the threshold: %+v, %v", res, err)
	}
	lazy, err := OpenBackendLazy(NewDir(dir, false), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer lazy.Close()
	if lazy.ConsolidationDue() {
		t.Fatal("a store whose index was not read is due below the threshold")
	}
	commitOne(t, s, text(99, 1000))
	if !lazy.ConsolidationDue() {
		t.Fatal("a store whose index was not read is not due at the threshold")
	}
	if !s.ConsolidationDue() {
		t.Fatal("not due at the threshold")
	}

	be, sh := os2New(t, true)
	for i := range consolidateAt + 2 {
		os2Put(t, sh, text(uint64(200+i), 1000))
	}
	before := os2Names(t, be, "packs")
	if sh.ConsolidationDue() {
		t.Fatal("a shared store is due")
	}
	if res, err := sh.Consolidate(); err != nil || res.PacksMerged != 0 {
		t.Fatalf("shared store: %+v, %v", res, err)
	}
	if after := os2Names(t, be, "packs"); len(after) != len(before) {
		t.Fatalf("a shared store's packs changed: %d -> %d files", len(before), len(after))
	}

	big := []*packFile{{id: "a", size: consolidateMaxBytes}, {id: "b", size: 10}}
	if got := smallPacks(map[string]*packFile{"a": big[0], "b": big[1], "c": {id: "c", size: -1}}); len(got) != 1 || got[0].id != "b" {
		t.Fatalf("smallPacks: %v", got)
	}
}

// The run merged is geometric: what lies below the largest packs that already double is merged,
// with every next one smaller than twice the sum merged; a progression that already doubles is left
// alone; a tiny pack under many of one size does not keep them from being merged.
func TestMergeRun(t *testing.T) {
	ps := func(sizes ...int64) []*packFile {
		out := make([]*packFile, len(sizes))
		for i, n := range sizes {
			out[i] = &packFile{id: string(rune('a' + i)), size: n}
		}
		return out
	}
	ids := func(run []*packFile) string {
		var b strings.Builder
		for _, p := range run {
			b.WriteString(p.id)
		}
		return b.String()
	}
	for _, c := range []struct {
		sizes []int64
		want  string
	}{
		{[]int64{1, 1}, "ab"},
		{[]int64{1, 2}, ""},
		{[]int64{1, 1, 2, 9}, "abc"},
		{[]int64{9, 1, 1, 2}, "bcd"},
		{[]int64{1, 3, 7, 15}, ""},
		{[]int64{5}, ""},
		{[]int64{1, 100, 300, 310, 320, 1000}, "abcdef"},
		{[]int64{1, 2, 300, 310, 320, 5000}, "abcde"},
		{[]int64{300, 310, 320, 2000, 5000}, "abc"},
	} {
		if got := ids(mergeRun(ps(c.sizes...))); got != c.want {
			t.Errorf("mergeRun(%v) = %q, want %q", c.sizes, got, c.want)
		}
	}
}

// Delta records are copied as deltas and still read after their packs were merged, their base
// in the same new pack or elsewhere.
func TestConsolidationKeepsDeltas(t *testing.T) {
	s := TestStore(t)
	base := text(7, 20000)
	hb := commitOne(t, s, base)
	want := map[tree.Hash][]byte{hb: base}
	prev := hb
	for i := range consolidateAt + 2 {
		d := append(bytes.Clone(base), []byte(strings.Repeat("x", i+1))...)
		b := s.NewBatch()
		h := tree.Sum(d)
		if _, err := b.PutBlobDelta(bytes.NewReader(d), h, int64(len(d)), prev); err != nil {
			t.Fatal(err)
		}
		commit(t, b)
		want[h], prev = d, h
	}
	res, err := s.Consolidate()
	if err != nil || res.PacksMerged < 2 {
		t.Fatalf("consolidate: %+v, %v", res, err)
	}
	for h, d := range want {
		mustRead(t, s, h, d)
	}
	deltas := 0
	for _, l := range s.index.all() {
		if l.kind.delta() {
			deltas++
		}
	}
	if deltas == 0 {
		t.Fatal("the deltas were not kept as deltas")
	}
}

// A damaged record in a pack to merge fails the consolidation before anything is removed: every
// pack is still there, the damage is named, and every intact object reads.
func TestConsolidationRefusesDamage(t *testing.T) {
	dir, s := openDirStore(t)
	data := map[tree.Hash][]byte{}
	var victim tree.Hash
	for i := range consolidateAt {
		d := testkit.Noise(uint64(300+i), 3000)
		h := commitOne(t, s, d)
		data[h] = d
		if i == 0 {
			victim = h
		}
	}
	info, ok := s.Info(victim)
	if !ok {
		t.Fatal("no info")
	}
	p := filepath.Join(dir, "packs", info.Pack+".pack")
	testkit.FlipMiddleByte(t, p)
	before := packCount(t, dir)
	_, err := s.Consolidate()
	if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "nothing was removed") {
		t.Fatalf("consolidate over damage: %v", err)
	}
	if got := packCount(t, dir); got != before {
		t.Fatalf("packs %d -> %d after a refused consolidation", before, got)
	}
	for h, d := range data {
		if h != victim {
			mustRead(t, s, h, d)
		}
	}
}

// A crash at any step of a consolidation (after the new pack is durable, after the intent, after
// the first old pack went) loses nothing: a store opened afterwards reads every object, and the
// next command that takes the lock finishes or redoes it.
func TestConsolidationCrashLosesNothing(t *testing.T) {
	for _, point := range []string{"consolidate.written", "gc.intent", "gc.deleted-one"} {
		t.Run(point, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			data := map[tree.Hash][]byte{}
			for i := range consolidateAt + 3 {
				d := text(uint64(500+i), 1500)
				data[commitOne(t, s, d)] = d
			}
			failAt(s, point)
			if _, err := s.Consolidate(); !errors.Is(err, errCrash) {
				t.Fatalf("consolidate cut at %s: %v", point, err)
			}
			_ = s.Close()
			again, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			for h, d := range data {
				mustRead(t, again, h, d)
			}
			if _, err := again.Consolidate(); err != nil {
				t.Fatalf("the next consolidation: %v", err)
			}
			if got := packCount(t, dir); got > consolidateAt {
				t.Fatalf("%d packs after the next consolidation", got)
			}
			for h, d := range data {
				mustRead(t, again, h, d)
			}
		})
	}
}

// A store that cannot be listed under the lock is not consolidated, and says so.
func TestConsolidationNeedsARefresh(t *testing.T) {
	be, s := os2New(t, false)
	for i := range consolidateAt {
		os2Put(t, s, text(uint64(700+i), 1000))
	}
	lazy, err := OpenBackendLazy(be, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer lazy.Close()
	os2FailList(be, 1)
	if lazy.ConsolidationDue() {
		t.Fatal("due without a listing")
	}
	os2FailList(be, 1)
	if _, err := s.Consolidate(); !errors.Is(err, errOS2IO) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("consolidate without a listing: %v", err)
	}
}
