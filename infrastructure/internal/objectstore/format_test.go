package objectstore

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
)

// os1DeltaPack stores a tree stored whole and a tree delta against it in one pack and returns the
// store, the pack's bytes and the two records' locations (whole first, in file order).
func os1DeltaPack(t *testing.T) (*Store, []byte, location, location) {
	t.Helper()
	s := TestStore(t)
	r := rand.New(rand.NewPCG(381, 381))
	t0 := dirTree(r, 35)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	h1, _ := putDelta(t, b, editOne(r, t0), h0)
	commit(t, b)
	if !isDelta(s, h1) {
		t.Fatal("setup: not a delta")
	}
	l0, l1 := s.index.at(h0), s.index.at(h1)
	data, err := os.ReadFile(l0.pack.path)
	if err != nil {
		t.Fatal(err)
	}
	return s, data, l0, l1
}

// Re-indexing a pack that ends before the size it was listed with (cut short in a record's data,
// or in a delta's base) fails: no entry of it is returned to be indexed, and nothing panics.
func TestScanPackShorterThanListed(t *testing.T) {
	_, data, l0, l1 := os1DeltaPack(t)
	hdrLen := func(l location) int64 {
		_, n, err := parseRecordHeader(data[l.offset:])
		if err != nil {
			t.Fatal(err)
		}
		return int64(n)
	}
	for name, cut := range map[string]int64{
		"in a whole record's data": l0.offset + hdrLen(l0) + 5,
		"in a delta's base":        l1.offset + hdrLen(l1) + 10,
	} {
		t.Run(name, func(t *testing.T) {
			entries, _, err := scanPack(bytes.NewReader(data[:cut]), int64(len(data)))
			if err == nil || len(entries) != 0 {
				t.Fatalf("scanPack of a pack cut at %d of %d: %d entries, %v", cut, len(data), len(entries), err)
			}
		})
	}
	if entries, _, err := scanPack(bytes.NewReader(data), int64(len(data))); err != nil || len(entries) != 2 {
		t.Fatalf("scanPack of the whole pack: %d entries, %v", len(entries), err)
	}
}

// An idx whose checksum is right but whose delta bases do not add up (a partial base, or a base
// more than it has deltas) is refused whole: Open fails with an integrity error naming the file,
// rather than index deltas with the wrong bases.
func TestIdxWithBasesThatDoNotAddUp(t *testing.T) {
	for name, extra := range map[string]int{"partial base": 5, "one base too many": 32} {
		t.Run(name, func(t *testing.T) {
			s, _, l0, _ := os1DeltaPack(t)
			dir := s.Dir()
			ip := strings.TrimSuffix(l0.pack.path, ".pack") + ".idx"
			b, err := os.ReadFile(ip)
			if err != nil {
				t.Fatal(err)
			}
			body := append(bytes.Clone(b[:len(b)-sha256.Size]), make([]byte, extra)...)
			for i := len(body) - extra; i < len(body); i++ {
				body[i] = 0xab
			}
			sum := sha256.Sum256(body)
			if _, _, err := decodeIdx(append(bytes.Clone(body), sum[:]...)); err == nil {
				t.Fatal("decodeIdx accepted it")
			}
			os.Chmod(ip, 0o600)
			if err := os.WriteFile(ip, append(body, sum[:]...), 0o400); err != nil {
				t.Fatal(err)
			}
			s2, err := Open(dir)
			if err == nil { // a layout that holds: the idx is checked at its first use
				err = s2.CheckIndex()
				s2.Close()
			}
			faulttest.Require(t, err, fault.ErrIntegrity, "the idx's check")
			if !strings.Contains(err.Error(), ip) {
				t.Fatalf("the error does not name the idx: %v", err)
			}
		})
	}
}

// verify --read-data compares every pack with its idx: an idx cut short after the store loaded it
// is reported as damaged, and the records themselves still check out.
func TestScanPacksReportsAnIdxCutShort(t *testing.T) {
	s, _, l0, _ := os1DeltaPack(t)
	ip := strings.TrimSuffix(l0.pack.path, ".pack") + ".idx"
	os.Chmod(ip, 0o600)
	if err := os.Truncate(ip, 20); err != nil {
		t.Fatal(err)
	}
	problems, err := s.ScanPacks()
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || problems[0].Pack != l0.pack.id || !strings.Contains(problems[0].Problem, "idx is damaged") {
		t.Fatalf("ScanPacks = %+v, want only the idx reported damaged", problems)
	}
}

// A tree encoding announcing more entries than it holds is damage, as ReadTree meets it when a
// damaged listing names a file as a directory: the file's bytes are read as a tree.
func TestTreeEncodingWithFewerEntriesThanAnnounced(t *testing.T) {
	enc, err := EncodeTree(Tree{{Name: strings.Repeat("n", 40), Kind: tree.KindFile, Mode: 0o644, Size: 1, Hash: tree.Hash{1}}})
	if err != nil {
		t.Fatal(err)
	}
	if enc[len(treeMagic)] != 1 {
		t.Fatalf("setup: count byte %d", enc[len(treeMagic)])
	}
	enc[len(treeMagic)] = 2
	if _, err := DecodeTree(enc); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("DecodeTree = %v, want it truncated", err)
	}
	s := TestStore(t)
	b := s.NewBatch()
	h, _ := put(t, b, enc)
	commit(t, b)
	_, err = s.ReadTree(h)
	faulttest.Require(t, err, fault.ErrIntegrity, "ReadTree")
}

// Ranging over the index stops when the loop does (the range-over-func contract: an iterator that
// went on would panic), and a nil index yields nothing.
func TestObjIndexAllStopsWhenTheLoopDoes(t *testing.T) {
	var none *objIndex
	for h := range none.all() {
		t.Fatalf("a nil index yielded %s", h)
	}
	x := newObjIndex(0)
	p := &packFile{id: "p"}
	for i := range 5 {
		x.set(tree.Hash{byte(i + 1)}, location{pack: p, offset: int64(packHeaderLen + i), kind: BlobObject})
	}
	n := 0
	for range x.all() {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("the loop ran %d times after its break", n)
	}
}

// StoreEntries stores everything or nothing: content that does not match its hash, a tree that
// cannot be written, and a commit that fails all return the error and leave the store without a
// new pack.
func TestStoreEntriesFailuresStoreNothing(t *testing.T) {
	nested := []tree.Entry{
		{Path: "d", Kind: tree.KindDir, Mode: 0o755},
		{Path: "d/l", Kind: tree.KindSymlink, Mode: 0o777, Target: "x"},
	}
	t.Run("content not matching its hash", func(t *testing.T) {
		s := TestStore(t)
		want := []byte("abc")
		e := tree.Entry{Path: "f", Kind: tree.KindFile, Mode: 0o644, Size: 3, Hash: tree.Sum(want)}
		_, err := s.StoreEntries([]tree.Entry{e}, map[tree.Hash][]byte{e.Hash: []byte("abd")})
		if !errors.Is(err, ErrContentChanged) || !strings.Contains(err.Error(), `"f"`) {
			t.Fatalf("StoreEntries = %v, want the changed content of f", err)
		}
		if got := files(t, s.packsDir); len(got) != 0 {
			t.Fatalf("packs/ = %v", got)
		}
	})
	t.Run("tree not writable", func(t *testing.T) {
		s := TestStore(t)
		os.RemoveAll(s.tmpDir)
		if _, err := s.StoreEntries(nested, nil); err == nil || !strings.Contains(err.Error(), "create pack") {
			t.Fatalf("StoreEntries = %v, want the pack creation failure", err)
		}
		if got := files(t, s.packsDir); len(got) != 0 {
			t.Fatalf("packs/ = %v", got)
		}
	})
	t.Run("commit fails", func(t *testing.T) {
		dir := t.TempDir()
		fb := newOS1Faults(dir, false)
		s, err := OpenBackend(fb, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		fb.set(os1FailOn("sync", "packs", errOS1Injected))
		if _, err := s.StoreEntries(nested, nil); !errors.Is(err, errOS1Injected) {
			t.Fatalf("StoreEntries = %v, want the commit failure", err)
		}
		if s.Stats().Objects != 0 {
			t.Fatal("objects of a failed StoreEntries are in use")
		}
		if got, _ := filepath.Glob(filepath.Join(s.tmpDir, "*")); len(got) != 0 {
			t.Fatalf("tmp/ = %v", got)
		}
	})
}

// The idx parsers refuse input too short to hold a header, whatever its first bytes, and never
// read past it.
func TestIdxParsersRefuseShortInput(t *testing.T) {
	for _, b := range [][]byte{nil, []byte("PLAN"), []byte(idxMagic), []byte(idxMagic + "\x00\x00\x00\x00")} {
		if v := idxVersion(b); len(b) < len(idxMagic) && v != 0 {
			t.Fatalf("idxVersion(%q) = %d, want none", b, v)
		}
		called := false
		if _, err := walkIdx(b, func(*idxEntry) { called = true }); err == nil || called {
			t.Fatalf("walkIdx(%q) = %v (entries seen: %v)", b, err, called)
		}
		if _, _, err := decodeIdx(b); err == nil {
			t.Fatalf("decodeIdx(%q) accepted it", b)
		}
	}
}

// Sizes are encoded clamped: a negative size (a bug upstream) is written as 0, never wrapped into
// a huge value a reader would then try to honour.
func TestNegativeSizesAreClampedNotWrapped(t *testing.T) {
	if got := u64(-5); got != 0 {
		t.Fatalf("u64(-5) = %d", got)
	}
	if got := u64(1 << 40); got != 1<<40 {
		t.Fatalf("u64(1<<40) = %d", got)
	}
	hdr := appendRecordHeader(nil, BlobObject, tree.Hash{1}, -1, -1)
	e, n, err := parseRecordHeader(hdr)
	if err != nil || n != len(hdr) || e.raw != 0 || e.comp != 0 {
		t.Fatalf("header of negative sizes reads back as %+v (%d of %d bytes), %v", e, n, len(hdr), err)
	}
}

// Every record kind rebuilds to a blob or a tree: a delta to what it is a delta of, a whole
// object to itself.
func TestKindObject(t *testing.T) {
	for k, want := range map[Kind]Kind{
		BlobObject: BlobObject, TreeObject: TreeObject,
		BlobDeltaObject: BlobObject, TreeDeltaObject: TreeObject,
	} {
		if got := k.object(); got != want {
			t.Fatalf("%v.object() = %v, want %v", k, got, want)
		}
		if k.delta() != (k != want) {
			t.Fatalf("%v.delta() = %v", k, k.delta())
		}
		if want.delta() || deltaOf(want).object() != want {
			t.Fatalf("deltaOf(%v) = %v", want, deltaOf(want))
		}
	}
}
