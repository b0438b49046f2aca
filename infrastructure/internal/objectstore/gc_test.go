package objectstore

import (
	"bytes"
	"errors"
	"io"
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

func set(hs ...tree.Hash) map[tree.Hash]struct{} {
	m := map[tree.Hash]struct{}{}
	for _, h := range hs {
		m[h] = struct{}{}
	}
	return m
}

func TestGC(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	// Pack 1: a small live blob next to a big dead one -> rewritten.
	b := s.NewBatch()
	aD := testkit.Noise(1, 10_000)
	a, _ := put(t, b, aD)
	dead1, _ := put(t, b, testkit.Noise(2, 200_000))
	commit(t, b)
	// Pack 2: only dead -> deleted.
	b = s.NewBatch()
	dead2, _ := put(t, b, testkit.Noise(3, 5000))
	commit(t, b)
	// Pack 3: mostly live -> kept as is. A live large blob in its own pack -> kept.
	b = s.NewBatch()
	eD := testkit.Noise(4, 100_000)
	e, _ := put(t, b, eD)
	dead3, _ := put(t, b, testkit.Noise(5, 10_000))
	bigD := testkit.Noise(6, largeBlob+1)
	big, _ := put(t, b, bigD)
	commit(t, b)
	before := s.Stats()
	if before.Packs != 4 {
		t.Fatalf("setup: %+v", before)
	}
	p3, _ := s.Info(e)

	res, err := s.GC(set(a, e, big))
	if err != nil {
		t.Fatal(err)
	}
	if res.PacksDeleted != 1 || res.PacksRewritten != 1 || res.BytesReclaimed < 200_000 {
		t.Fatalf("GC = %+v", res)
	}
	check := func(s *Store) {
		t.Helper()
		mustRead(t, s, a, aD)
		mustRead(t, s, e, eD)
		mustRead(t, s, big, bigD)
		for _, h := range []tree.Hash{dead1, dead2} {
			if s.Has(h) {
				t.Fatalf("dead object %s survived", h)
			}
		}
		if !s.Has(dead3) {
			t.Fatal("dead object in a kept pack should stay (GC does not rewrite mostly-live packs)")
		}
		if info, _ := s.Info(e); info.Pack != p3.Pack {
			t.Fatal("mostly-live pack was rewritten")
		}
		st := s.Stats()
		if st.Packs != 3 || st.Objects != 4 || st.StoredBytes >= before.StoredBytes-200_000 {
			t.Fatalf("after GC: %+v (before %+v)", st, before)
		}
	}
	check(s)
	if n := len(files(t, filepath.Join(dir, "packs"))); n != 6 {
		t.Fatalf("packs dir has %d files", n)
	}
	s.Close()
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	check(s)
	// Nothing to do the second time.
	if res, err := s.GC(set(a, e, big, dead3)); err != nil || res != (GCResult{}) {
		t.Fatalf("second GC = %+v, %v", res, err)
	}
	// Everything dead.
	if res, err := s.GC(nil); err != nil || res.PacksDeleted != 3 {
		t.Fatalf("GC(nil) = %+v, %v", res, err)
	}
	if st := s.Stats(); st != (StoreStats{}) {
		t.Fatalf("after GC(nil): %+v", st)
	}
}

// A crash between a rewrite's commit and the deletion of the old pack leaves the same objects in two
// packs; that must read fine, and the next GC drops the redundant pack.
func TestGCDuplicatePacks(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	d := text(1, 50_000)
	h, _ := put(t, b, d)
	commit(t, b)
	info, _ := s.Info(h)
	s.Close()
	src := filepath.Join(dir, "packs", info.Pack+".pack")
	raw, _ := os.ReadFile(src)
	copyID := strings.Repeat("f", 32)
	os.WriteFile(filepath.Join(dir, "packs", copyID+".pack"), raw, 0o444)
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st := s.Stats(); st.Packs != 2 || st.Objects != 1 {
		t.Fatalf("stats %+v", st)
	}
	mustRead(t, s, h, d)
	res, err := s.GC(set(h))
	if err != nil || res.PacksDeleted != 1 {
		t.Fatalf("GC = %+v, %v", res, err)
	}
	mustRead(t, s, h, d)
}

// GC refuses to delete anything when a live object cannot be copied.
func TestGCDamagedLiveObject(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	aD := text(2, 3000)
	a, _ := put(t, b, aD)
	put(t, b, testkit.Noise(3, 100_000))
	commit(t, b)
	l := s.index.at(a)
	os.Chmod(l.pack.path, 0o600)
	os.Truncate(l.pack.path, l.offset+10)
	_, err := s.GC(set(a))
	faulttest.Require(t, err, fault.ErrIntegrity, "GC of a damaged live object")
	if _, err := os.Stat(l.pack.path); err != nil {
		t.Fatal("GC deleted a pack after failing")
	}
	if got := files(t, s.tmpDir); len(got) != 0 {
		t.Fatalf("failed GC left %v", got)
	}
}

func TestReaderClose(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	small, _ := put(t, b, []byte("hello"))
	bigD := text(3, 2*wholeRead)
	big, _ := put(t, b, bigD)
	commit(t, b)
	for _, h := range []tree.Hash{small, big} {
		r, err := s.OpenBlob(h)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		if _, err := r.Read(make([]byte, 1)); err == nil || err == io.EOF {
			t.Fatalf("read after close: %v", err)
		}
	}
	// The small reader decodes on first Read; a partial read then close is fine.
	r, _ := s.OpenBlob(big)
	io.CopyN(io.Discard, r, 100)
	r.Close()
	mustRead(t, s, big, bigD)
}

// GC refuses to collect around live objects in a pack cut short, counting every one and naming
// the first in hash order, and deletes nothing.
func TestOS2GCRefusesLiveObjectsInAPackCutShort(t *testing.T) {
	s := TestStore(t)
	root, hs := os2Put(t, s, text(60, 3000), text(61, 3000))
	os2Put(t, s, testkit.Noise(62, 5000)) // dead, in a pack of its own
	pack := os2PackOf(t, s, hs[0])
	p := filepath.Join(s.packsDir, pack+".pack")
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 20); err != nil {
		t.Fatal(err)
	}
	before := files(t, s.packsDir)
	_, err := s.GC(set(root, hs[0], hs[1]))
	faulttest.Require(t, err, fault.ErrIntegrity, "GC with live objects in a pack cut short")
	first := slices.MinFunc([]tree.Hash{root, hs[0], hs[1]}, func(a, b tree.Hash) int { return bytes.Compare(a[:], b[:]) })
	if !strings.Contains(err.Error(), "3 live object(s)") || !strings.Contains(err.Error(), first.String()) || !strings.Contains(err.Error(), "nothing was deleted") {
		t.Fatalf("GC error: %v (want 3 objects counted and %s named)", err, first)
	}
	if got := files(t, s.packsDir); !slices.Equal(got, before) {
		t.Fatalf("packs after the refused GC: %v, want %v", got, before)
	}
}

// GC rewriting a sparse pack whose live record has a damaged header refuses to copy it: the pack
// stays as it is, with its dead object, and the error is an integrity error.
func TestOS2GCRewriteOfADamagedRecordHeader(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	liveD, deadD := text(63, 2000), testkit.Noise(64, 60_000)
	live, _ := put(t, b, liveD)
	dead, _ := put(t, b, deadD)
	commit(t, b)
	flip(t, s, live, -1)
	before := files(t, s.packsDir)
	_, err := s.GC(set(live))
	faulttest.Require(t, err, fault.ErrIntegrity, "GC copying a record whose header is damaged")
	if !strings.Contains(err.Error(), "rewrite pack") {
		t.Fatalf("GC error: %v", err)
	}
	if got := files(t, s.packsDir); !slices.Equal(got, before) {
		t.Fatalf("packs after the failed GC: %v, want %v", got, before)
	}
	mustRead(t, s, dead, deadD)
}

// A private GC that cannot read the base of a dead delta in a pack that holds live objects stops
// before deleting anything: it cannot tell whether that pack must be rewritten. Once the error is
// gone, the pack is rewritten without the dead delta, and the dead chain goes. The record of the
// dead delta's base is never needed: a GC that cannot read it collects all the same.
func TestOS2GCStopsWhenADeltaBaseCannotBeRead(t *testing.T) {
	x := os2NewDeltaStore(t, false)
	x.be.on("Open", func(n string) bool { return n == packName(x.pLive) })
	_, err := x.s.GC(set(x.root, x.live))
	if !errors.Is(err, errOS2IO) || !strings.Contains(err.Error(), "nothing was deleted") {
		t.Fatalf("GC: %v (want the I/O error, and that nothing was deleted)", err)
	}
	if got := os2Names(t, x.be, "packs"); !slices.Equal(got, x.packsAtTheOpen) {
		t.Fatalf("packs: %v, want %v", got, x.packsAtTheOpen)
	}
	x.be.setHook(nil)
	res, err := x.s.GC(set(x.root, x.live))
	if err != nil || res.PacksDeleted != 2 || res.PacksRewritten != 1 {
		t.Fatalf("GC: %+v, %v (want the dead chain gone, its pack rewritten)", res, err)
	}
	if x.s.Has(x.h2) || x.s.Has(x.h1) || x.s.Has(x.h0) {
		t.Fatal("the dead chain stayed")
	}
	mustRead(t, x.s, x.live, x.liveD)

	y := os2NewDeltaStore(t, false)
	y.be.on("Open", func(n string) bool { return n == packName(y.p1) })
	if res, err := y.s.GC(set(y.root, y.live)); err != nil || res.PacksDeleted != 2 {
		t.Fatalf("GC with the dead base unreadable: %+v, %v", res, err)
	}
	y.be.setHook(nil)
	mustRead(t, y.s, y.live, y.liveD)
}
