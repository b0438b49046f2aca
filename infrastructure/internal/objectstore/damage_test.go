package objectstore

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
)

type fixture struct {
	dir            string
	small, large   tree.Hash
	smallD, largeD []byte
	tr             tree.Hash
	smallPack      string // path of the pack holding small and tr
	largePack      string
}

var (
	fixtureOnce sync.Once
	fixtureTmpl fixture
	fixtureErr  error
)

// TestMain removes the fixture template the damage tests copy from.
func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureTmpl.dir != "" {
		os.RemoveAll(fixtureTmpl.dir)
	}
	os.Exit(code)
}

// newFixture returns a fresh copy of a closed store holding a small blob, a tree and a large
// (streamed) blob. The template is built once: compressing the large blob under -race is slow.
func newFixture(t *testing.T) fixture {
	t.Helper()
	fixtureOnce.Do(func() { fixtureTmpl, fixtureErr = buildFixture(t) })
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	f := fixtureTmpl
	f.dir = t.TempDir()
	if err := os.CopyFS(f.dir, os.DirFS(fixtureTmpl.dir)); err != nil {
		t.Fatal(err)
	}
	f.smallPack = filepath.Join(f.dir, "packs", filepath.Base(f.smallPack))
	f.largePack = filepath.Join(f.dir, "packs", filepath.Base(f.largePack))
	return f
}

func buildFixture(t *testing.T) (fixture, error) {
	dir, err := os.MkdirTemp("", "objectstore-fixture")
	if err != nil {
		return fixture{}, err
	}
	f := fixture{dir: dir, smallD: text(11, 3000), largeD: text(12, largeBlob+5)}
	s, err := Open(f.dir)
	if err != nil {
		return f, err
	}
	defer s.Close()
	b := s.NewBatch()
	f.small, _ = put(t, b, f.smallD)
	f.large, _ = put(t, b, f.largeD)
	f.tr, _, err = b.PutTree(Tree{{Name: "a", Kind: tree.KindFile, Mode: 0o644, Size: 3000, Hash: f.small}})
	if err != nil {
		return f, err
	}
	if err := b.Commit(); err != nil {
		return f, err
	}
	info, _ := s.Info(f.small)
	f.smallPack = filepath.Join(f.dir, "packs", info.Pack+".pack")
	info, _ = s.Info(f.large)
	f.largePack = filepath.Join(f.dir, "packs", info.Pack+".pack")
	return f, nil
}

func (f fixture) open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// flip inverts one byte of an object's record: in its data (at frac of it) or, with frac < 0, in
// its header.
func flip(t *testing.T, s *Store, h tree.Hash, frac float64) {
	t.Helper()
	l := s.index.at(h)
	os.Chmod(l.pack.path, 0o600)
	fh, err := os.OpenFile(l.pack.path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var hb [maxRecordHeader]byte
	fh.ReadAt(hb[:], l.offset)
	_, hl, _ := parseRecordHeader(hb[:])
	off := l.offset + 20
	if frac >= 0 {
		off = l.offset + int64(hl) + int64(frac*float64(l.comp))
	}
	var b [1]byte
	fh.ReadAt(b[:], off)
	b[0] ^= 0x55
	if _, err := fh.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

func TestFlippedByte(t *testing.T) {
	for _, frac := range []float64{-1, 0.5, 0.99} {
		f := newFixture(t)
		s := f.open(t)
		for _, h := range []tree.Hash{f.small, f.large, f.tr} {
			flip(t, s, h, frac)
		}
		for _, h := range []tree.Hash{f.small, f.large} {
			_, err := readBlob(s, h)
			faulttest.Require(t, err, fault.ErrIntegrity, "read flipped blob")
			faulttest.Require(t, s.CheckObject(h, true), fault.ErrIntegrity, "CheckObject flipped blob")
		}
		_, err := s.ReadTree(f.tr)
		faulttest.Require(t, err, fault.ErrIntegrity, "ReadTree flipped")
		_, err = s.Flatten(f.tr)
		faulttest.Require(t, err, fault.ErrIntegrity, "Flatten flipped")
		if frac < 0 {
			faulttest.Require(t, s.CheckObject(f.small, false), fault.ErrIntegrity, "CheckObject header")
		}
	}
}

func TestLargeBlobDamageSurfacesFromRead(t *testing.T) {
	f := newFixture(t)
	s := f.open(t)
	flip(t, s, f.large, 0.5)
	r, err := s.OpenBlob(f.large)
	if err != nil {
		t.Fatalf("OpenBlob checks only the header: %v", err)
	}
	defer r.Close()
	_, err = io.ReadAll(r)
	faulttest.Require(t, err, fault.ErrIntegrity, "Read")
	if _, err := r.Read(make([]byte, 10)); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("error not sticky: %v", err)
	}
}

func TestTruncatedPack(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{f.smallPack, f.largePack} {
		fi, _ := os.Stat(p)
		os.Chmod(p, 0o600)
		if err := os.Truncate(p, fi.Size()-10); err != nil {
			t.Fatal(err)
		}
	}
	s := f.open(t)
	_, err := readBlob(s, f.large)
	faulttest.Require(t, err, fault.ErrIntegrity, "read truncated large")
	faulttest.Require(t, s.CheckObject(f.large, false), fault.ErrIntegrity, "CheckObject truncated large")
	// The small pack's last record is the one cut.
	var last tree.Hash
	for h, l := range s.index.all() {
		if l.pack.path == f.smallPack && (last.IsZero() || l.offset > s.index.at(last).offset) {
			last = h
		}
	}
	faulttest.Require(t, s.CheckObject(last, false), fault.ErrIntegrity, "CheckObject truncated small")
	if last == f.tr {
		_, err = s.ReadTree(last)
	} else {
		_, err = readBlob(s, last)
	}
	faulttest.Require(t, err, fault.ErrIntegrity, "read truncated small")
	// Zero-length pack: damage, not an empty pack.
	os.Truncate(f.smallPack, 0)
	s2 := f.open(t)
	faulttest.Require(t, s2.CheckObject(f.small, false), fault.ErrIntegrity, "zero-length pack")
}

func TestDeletedPack(t *testing.T) {
	f := newFixture(t)
	os.Remove(f.smallPack)
	os.Remove(f.largePack)
	s := f.open(t)
	if !s.Has(f.small) {
		t.Fatal("an idx whose pack is gone must still list its objects, so verify can name them")
	}
	_, err := readBlob(s, f.small)
	faulttest.Require(t, err, fault.ErrIntegrity, "read from deleted pack")
	_, err = s.OpenBlob(f.large)
	faulttest.Require(t, err, fault.ErrIntegrity, "OpenBlob from deleted pack")
	_, err = s.ReadTree(f.tr)
	faulttest.Require(t, err, fault.ErrIntegrity, "ReadTree from deleted pack")
	faulttest.Require(t, s.CheckObject(f.small, false), fault.ErrIntegrity, "CheckObject")
	if !strings.Contains(s.CheckObject(f.small, false).Error(), "missing") {
		t.Fatal("message should say the pack is missing")
	}
	// Missing objects.
	_, err = readBlob(s, tree.Sum([]byte("nope")))
	faulttest.Require(t, err, fault.ErrIntegrity, "missing object")
	if !strings.Contains(err.Error(), "object "+tree.Sum([]byte("nope")).String()+" is missing") {
		t.Fatalf("message: %v", err)
	}
	_, err = s.ReadTree(tree.Sum([]byte("nope")))
	faulttest.Require(t, err, fault.ErrIntegrity, "missing tree")
	faulttest.Require(t, s.CheckObject(tree.Sum([]byte("nope")), false), fault.ErrIntegrity, "missing CheckObject")
	// GC keeps idx entries of a missing pack that still hold live objects, drops the dead ones.
	res, err := s.GC(map[tree.Hash]struct{}{f.small: {}})
	if err != nil || res.PacksDeleted != 1 || res.PacksRewritten != 0 {
		t.Fatalf("GC = %+v, %v", res, err)
	}
	if !s.Has(f.small) || s.Has(f.large) {
		t.Fatal("GC handled a missing pack wrongly")
	}
}

func TestCorruptIdx(t *testing.T) {
	for name, mutate := range map[string]func([]byte) []byte{
		"flipped":     func(b []byte) []byte { b[20] ^= 1; return b },
		"zero-length": func([]byte) []byte { return nil },
		"truncated":   func(b []byte) []byte { return b[:len(b)-1] },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			idx := strings.TrimSuffix(f.smallPack, ".pack") + ".idx"
			b, _ := os.ReadFile(idx)
			os.Chmod(idx, 0o644)
			os.WriteFile(idx, mutate(b), 0o644)
			s, err := Open(f.dir)
			if err == nil { // a layout that holds: the idx is checked at its first use
				var r io.ReadCloser
				if r, err = s.OpenBlob(f.small); err == nil {
					_, err = io.ReadAll(r)
					_ = r.Close()
				}
				_ = s.Close()
			}
			faulttest.Require(t, err, fault.ErrIntegrity, "a read through a corrupt idx")
			if !strings.Contains(err.Error(), idx) {
				t.Fatalf("error does not name the file: %v", err)
			}
			// The advertised repair: delete the idx, Open rebuilds it.
			os.Remove(idx)
			s = f.open(t)
			mustRead(t, s, f.small, f.smallD)
		})
	}
}

func TestIdxRebuild(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{f.smallPack, f.largePack} {
		os.Remove(strings.TrimSuffix(p, ".pack") + ".idx")
	}
	s := f.open(t)
	mustRead(t, s, f.small, f.smallD)
	mustRead(t, s, f.large, f.largeD)
	if tr, err := s.ReadTree(f.tr); err != nil || len(tr) != 1 {
		t.Fatalf("ReadTree after rebuild: %v, %v", tr, err)
	}
	// Open, which runs before the workspace lock is taken, indexes in memory only: a GC may be
	// deleting the pack. Refresh, under the lock, writes the idx back.
	for _, p := range []string{f.smallPack, f.largePack} {
		if _, err := os.Stat(strings.TrimSuffix(p, ".pack") + ".idx"); err == nil {
			t.Fatal("Open wrote an idx without the lock")
		}
	}
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	mustRead(t, s, f.small, f.smallD)
	for _, p := range []string{f.smallPack, f.largePack} {
		if _, err := os.Stat(strings.TrimSuffix(p, ".pack") + ".idx"); err != nil {
			t.Fatalf("idx not written back: %v", err)
		}
	}
	if got := files(t, s.tmpDir); len(got) != 0 {
		t.Fatalf("rebuild left %v", got)
	}
}

func TestRebuildOfDamagedPackFails(t *testing.T) {
	for name, mutate := range map[string]func(string){
		"zero-length": func(p string) { os.Truncate(p, 0) },
		"truncated":   func(p string) { fi, _ := os.Stat(p); os.Truncate(p, fi.Size()-1) },
		"bad magic":   func(p string) { writeAt(p, 0, 'X') },
		"bad version": func(p string) { writeAt(p, 11, 9) },
		"bad kind":    func(p string) { writeAt(p, int64(packHeaderLen), 7) },
		"header only": func(p string) { os.Truncate(p, int64(packHeaderLen)) },
		"cut header":  func(p string) { os.Truncate(p, int64(packHeaderLen)+20) },
		"cut sizes":   func(p string) { os.Truncate(p, int64(packHeaderLen)+33) },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			os.Remove(strings.TrimSuffix(f.smallPack, ".pack") + ".idx")
			os.Chmod(f.smallPack, 0o600)
			mutate(f.smallPack)
			_, err := Open(f.dir)
			faulttest.Require(t, err, fault.ErrIntegrity, "Open")
			if !strings.Contains(err.Error(), f.smallPack) {
				t.Fatalf("error does not name the pack: %v", err)
			}
		})
	}
}

func writeAt(p string, off int64, b byte) {
	os.Chmod(p, 0o600)
	fh, _ := os.OpenFile(p, os.O_RDWR, 0)
	fh.WriteAt([]byte{b}, off)
	fh.Close()
}

func TestDecodeIdxRejects(t *testing.T) {
	e := []idxEntry{{hash: tree.Hash{1}, kind: BlobObject, offset: 12, comp: 5, raw: 5}, {hash: tree.Hash{2}, kind: TreeObject, offset: 50, comp: 5, raw: 5}}
	for _, v := range []uint32{1, packVersion} {
		if got, gotV, err := decodeIdx(encodeIdx(e, v)); err != nil || len(got) != 2 || got[1] != e[1] || gotV != v {
			t.Fatalf("round trip of a version %d idx: %v %d %v", v, got, gotV, err)
		}
	}
	for name, bad := range map[string][]idxEntry{
		"order":  {e[1], e[0]},
		"kind":   {{hash: tree.Hash{1}, kind: 9, offset: 12}},
		"offset": {{hash: tree.Hash{1}, kind: BlobObject, offset: 3}},
	} {
		if _, _, err := decodeIdx(encodeIdx(bad, packVersion)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	b := encodeIdx(e, packVersion)
	b[11]++ // count
	if _, _, err := decodeIdx(b); err == nil {
		t.Error("wrong count accepted (checksum)")
	}
}

func TestParseRecordHeader(t *testing.T) {
	h := appendRecordHeader(nil, BlobObject, tree.Hash{3}, 1000, 77)
	e, n, err := parseRecordHeader(h)
	if err != nil || n != len(h) || e.raw != 1000 || e.comp != 77 {
		t.Fatalf("%v %d %v", e, n, err)
	}
	var pad [paddedVarintLen]byte
	putPaddedUvarint(pad[:], 123456789)
	h2 := appendRecordHeader(nil, BlobObject, tree.Hash{3}, 1000, 0)[:35]
	h2 = append(h2, pad[:]...)
	if e, _, err := parseRecordHeader(h2); err != nil || e.comp != 123456789 {
		t.Fatalf("padded: %v %v", e, err)
	}
	for _, bad := range [][]byte{h[:10], h[:33], h[:35], append([]byte{9}, h[1:]...)} {
		if _, _, err := parseRecordHeader(bad); err == nil {
			t.Errorf("accepted %x", bad)
		}
	}
}
