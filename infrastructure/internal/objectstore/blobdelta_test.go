package objectstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// edit returns data with a few lines replaced and one inserted, as an edit of a source file.
func edit(r *rand.Rand, data []byte) []byte {
	out := bytes.Clone(data)
	for range 3 {
		at := r.IntN(len(out) - 20)
		copy(out[at:], fmt.Sprintf("/* edit %d */", r.IntN(1_000_000)))
	}
	at := r.IntN(len(out))
	return append(out[:at:at], append([]byte(fmt.Sprintf("\n// inserted %d\n", r.Uint64())), out[at:]...)...)
}

func putFrom(t testing.TB, b *Batch, data []byte, base tree.Hash) (tree.Hash, int64) {
	t.Helper()
	h := tree.Sum(data)
	n, err := b.PutBlobDelta(bytes.NewReader(data), h, int64(len(data)), base)
	if err != nil {
		t.Fatalf("PutBlobDelta: %v", err)
	}
	return h, n
}

// Successive versions of a file, each an edit of the one before, stored against their
// predecessor: every one reads back byte for byte, is reported as a blob stored as a delta, costs
// a fraction of a whole copy, and chains stop at maxDeltaDepth (the next version is whole).
func TestBlobDeltaVersions(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(21, 21))
	versions := [][]byte{text(21, 30_000)}
	for len(versions) < 2*(maxDeltaDepth+1)+3 {
		versions = append(versions, edit(r, versions[len(versions)-1]))
	}
	prev := tree.ZeroHash
	var hashes []tree.Hash
	var deltaBytes, wholeBytes int64
	for i, v := range versions {
		b := s.NewBatch()
		h, n := putFrom(t, b, v, prev)
		if h2, n2 := putFrom(t, b, v, prev); h2 != h || n2 != 0 {
			t.Fatalf("second put of version %d stored %d bytes", i, n2)
		}
		commit(t, b)
		_, whole := put(t, TestStore(t).NewBatch(), v)
		want := i % (maxDeltaDepth + 1)
		if got := recordDepth(t, s, h); got != want {
			t.Fatalf("version %d: depth %d, want %d", i, got, want)
		}
		info, ok := s.Info(h)
		if !ok || info.Kind != BlobObject || info.Delta != (want > 0) || info.RawSize != int64(len(v)) {
			t.Fatalf("version %d: Info %+v", i, info)
		}
		if want > 0 {
			deltaBytes += n
			wholeBytes += whole
		}
		hashes = append(hashes, h)
		prev = h
	}
	if deltaBytes*10 > wholeBytes {
		t.Fatalf("deltas took %d bytes, whole copies %d: want less than a tenth", deltaBytes, wholeBytes)
	}
	for i, h := range hashes {
		mustRead(t, s, h, versions[i])
		if !s.Present(h) {
			t.Fatalf("version %d is not Present", i)
		}
		if err := s.CheckObject(h, true); err != nil {
			t.Fatalf("CheckObject version %d: %v", i, err)
		}
	}
	if problems, err := s.ScanPacks(); err != nil || len(problems) != 0 {
		t.Fatalf("ScanPacks: %v %v", problems, err)
	}
	if p := s.Problems(); len(p) != 0 {
		t.Fatalf("Problems: %v", p)
	}
}

// Stored whole instead: no base, the blob itself as base, a base the store does not hold, one
// that is not Present (known damaged), one too large, one whose delta does not pay (unrelated
// bytes), and a blob too large to be read into memory, which is streamed.
func TestBlobDeltaFallsBackToWhole(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	big, _ := put(t, b, text(31, maxDeltaObject+1))
	unrelated, _ := put(t, b, testkit.Noise(32, 8000))
	damagedD := text(33, 8000)
	damagedBase, _ := put(t, b, damagedD)
	commit(t, b)
	s.markDamaged(damagedBase, s.index.at(damagedBase))
	data := text(34, 8000)
	self := tree.Sum(data)
	for name, base := range map[string]tree.Hash{
		"zero": tree.ZeroHash, "self": self, "missing": tree.Sum([]byte("never stored")),
		"damaged": damagedBase, "too large": big, "unrelated": unrelated,
	} {
		t.Run(name, func(t *testing.T) {
			s := s
			d := data
			if name != "self" {
				d = append(bytes.Clone(data), name...)
			}
			if name == "damaged" {
				d = append(bytes.Clone(damagedD), "x"...)
			}
			b := s.NewBatch()
			h, n := putFrom(t, b, d, base)
			commit(t, b)
			if isDelta(s, h) {
				t.Fatalf("stored as a delta of %s", base)
			}
			_, whole := put(t, TestStore(t).NewBatch(), d)
			if n != whole {
				t.Fatalf("stored %d bytes, a whole copy is %d", n, whole)
			}
			mustRead(t, s, h, d)
		})
	}
	large := text(35, largeBlob+100)
	b = s.NewBatch()
	base, _ := put(t, b, large[:largeBlob-100])
	commit(t, b)
	b = s.NewBatch()
	h, _ := putFrom(t, b, large, base)
	commit(t, b)
	if isDelta(s, h) {
		t.Fatal("a blob larger than maxDeltaObject was stored as a delta")
	}
	mustRead(t, s, h, large)
}

// A delta whose base is found damaged later: reading it is an integrity error, the copy is no
// longer Present, and storing the content again (as a checkpoint of the live file does) heals it.
func TestBlobDeltaDamagedBase(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(41, 41))
	v0 := text(41, 20_000)
	v1 := edit(r, v0)
	b := s.NewBatch()
	h0, _ := put(t, b, v0)
	commit(t, b)
	b = s.NewBatch()
	h1, _ := putFrom(t, b, v1, h0)
	commit(t, b)
	if !isDelta(s, h1) {
		t.Fatal("setup: not a delta")
	}
	flipData(t, s, h0, 40)
	if _, err := readBlob(s, h1); !errors.Is(err, fault.ErrIntegrity) || !bytes.Contains([]byte(err.Error()), []byte(h1.String())) {
		t.Fatalf("read of a delta on a damaged base: %v (want an integrity error naming it)", err)
	}
	if s.Present(h1) || !s.NeedsCopy(h1) {
		t.Fatal("a delta on a damaged base is still Present")
	}
	b = s.NewBatch()
	if _, n := putFrom(t, b, v1, h0); n == 0 {
		t.Fatal("nothing stored afresh")
	}
	commit(t, b)
	if isDelta(s, h1) {
		t.Fatal("the fresh copy depends on the damaged base")
	}
	mustRead(t, s, h1, v1)
}

// GC keeps the base of a live delta that nothing else names, and the base of a dead delta in a
// pack it keeps; the bases come from the idx, without reading a record.
func TestGCKeepsBlobDeltaBase(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(51, 51))
	v0 := text(51, 20_000)
	v1 := edit(r, v0)
	w0 := text(52, 20_000)
	w1 := edit(r, w0)
	b := s.NewBatch()
	h0, _ := put(t, b, v0)
	g0, _ := put(t, b, w0)
	junk, _ := put(t, b, testkit.Noise(53, 200_000)) // garbage, so the pack is rewritten
	commit(t, b)
	b = s.NewBatch()
	h1, _ := putFrom(t, b, v1, h0)
	g1, _ := putFrom(t, b, w1, g0) // dead, but in the pack that stays
	big, _ := put(t, b, testkit.Noise(54, 100_000))
	commit(t, b)
	if !isDelta(s, h1) || !isDelta(s, g1) {
		t.Fatal("setup: not deltas")
	}
	res, err := s.GC(set(h1, h0, big))
	if err != nil || res.PacksRewritten != 2 || res.ObjectsReencoded != 0 {
		t.Fatalf("gc: %+v %v (want both packs rewritten)", res, err)
	}
	if s.Has(junk) {
		t.Fatal("gc kept the garbage")
	}
	if !s.Has(h0) {
		t.Fatal("gc dropped a live delta's base")
	}
	// The dead delta's pack held live objects: it was rewritten without it, and its base went.
	if s.Has(g1) || s.Has(g0) {
		t.Fatal("gc kept a dead delta, or its base")
	}
	mustRead(t, s, h1, v1)
	if len(s.bases) != 0 {
		t.Fatalf("gc read %d record(s) for bases the idx names", len(s.bases))
	}
}

// Reachable adds a blob delta's base chain, so that gc keeps what the checkpoint's files need.
func TestReachableIncludesBlobChain(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(61, 61))
	v := [][]byte{text(61, 10_000)}
	for range 3 {
		v = append(v, edit(r, v[len(v)-1]))
	}
	prev := tree.ZeroHash
	var hs []tree.Hash
	for _, d := range v {
		b := s.NewBatch()
		h, _ := putFrom(t, b, d, prev)
		commit(t, b)
		hs, prev = append(hs, h), h
	}
	b := s.NewBatch()
	root, _, err := b.PutTree(Tree{{Name: "f", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(v[3])), Hash: hs[3]}})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	reached, err := s.Reachable([]tree.Hash{root})
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hs {
		if _, ok := reached[h]; !ok {
			t.Fatalf("version %d of the chain is not reachable", i)
		}
	}
	if _, err := s.GC(reached); err != nil {
		t.Fatal(err)
	}
	mustRead(t, s, hs[3], v[3])
}

// A version 3 idx names every delta's base; one rebuilt from its pack names them too (read from
// the records), and Present needs no record read for them.
func TestIdxNamesDeltaBases(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(71, 71))
	v0 := text(71, 9000)
	b := s.NewBatch()
	h0, _ := put(t, b, v0)
	t0 := dirTree(r, 30)
	th0, _ := putDelta(t, b, t0, tree.ZeroHash)
	commit(t, b)
	b = s.NewBatch()
	h1, _ := putFrom(t, b, edit(r, v0), h0)
	th1, _ := putDelta(t, b, editOne(r, t0), th0)
	commit(t, b)
	s.Close()
	check := func(when string) {
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.Refresh(); err != nil {
			t.Fatal(err)
		}
		for h, base := range map[tree.Hash]tree.Hash{h1: h0, th1: th0} {
			l := s.index.at(h)
			d := l.pack.delta(h)
			if d == nil || d.base != base || l.pack.version != packVersion {
				t.Fatalf("%s: delta record %+v of pack version %d, want base %s", when, d, l.pack.version, base)
			}
			if !s.Present(h) {
				t.Fatalf("%s: not Present", when)
			}
		}
		if len(s.bases) != 0 {
			t.Fatalf("%s: Present read %d record(s) for bases the idx names", when, len(s.bases))
		}
	}
	check("written")
	idx, _ := filepath.Glob(filepath.Join(dir, "packs", "*.idx"))
	for _, p := range idx {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	check("rebuilt")
}

// idx files of every version decode to what was encoded, and a version 3 idx whose bases do not
// match its deltas, or a blob delta in an older one, is refused.
func TestIdxVersions(t *testing.T) {
	base := tree.Sum([]byte("base"))
	e := []idxEntry{
		{hash: tree.Hash{1}, kind: BlobObject, offset: 12, comp: 5, raw: 5},
		{hash: tree.Hash{2}, kind: BlobDeltaObject, offset: 70, comp: 40, raw: 500, base: base},
		{hash: tree.Hash{3}, kind: TreeDeltaObject, offset: 200, comp: 40, raw: 500, base: tree.Hash{9}},
	}
	// Packs of version 3 and 4 share the idx format ("PLANIDX3"): it reads as version 3.
	got, v, err := decodeIdx(encodeIdx(e, 4))
	if err != nil || v != 3 || len(got) != 3 || got[1] != e[1] || got[2] != e[2] {
		t.Fatalf("version 3: %+v %d %v", got, v, err)
	}
	old := []idxEntry{e[0], e[2]}
	for _, ver := range []uint32{1, 2} {
		got, v, err := decodeIdx(encodeIdx(old, ver))
		if err != nil || v != ver || got[1].base != (tree.Hash{}) || got[1].kind != TreeDeltaObject {
			t.Fatalf("version %d: %+v %d %v", ver, got, v, err)
		}
		if _, _, err := decodeIdx(encodeIdx(e, ver)); err == nil {
			t.Fatalf("a version %d idx with a blob delta was accepted", ver)
		}
	}
	b := encodeIdx(e, 3)
	cut := append(bytes.Clone(b[:len(b)-32-32]), make([]byte, 32)...) // one base missing, checksum redone
	cut = cut[:len(cut)-32]
	sum := tree.Sum(cut)
	cut = append(cut, sum[:]...)
	if _, _, err := decodeIdx(cut); err == nil {
		t.Fatal("an idx missing a delta base was accepted")
	}
}

// A store written by the previous version (version 2 packs: tree deltas whose bases the idx
// does not name) reads, dedups and collects as before; what gc rewrites becomes version 3.
func TestVersion2PacksStillRead(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(81, 81))
	t0 := dirTree(r, 30)
	t1 := editOne(r, t0)
	blob := text(81, 5000)
	b := s.NewBatch()
	th0, _ := putDelta(t, b, t0, tree.ZeroHash)
	hb, _ := put(t, b, blob)
	put(t, b, testkit.Noise(82, 300_000))
	commit(t, b)
	b = s.NewBatch()
	th1, _ := putDelta(t, b, t1, th0)
	commit(t, b)
	s.Close()
	toVersion(t, dir, 2)

	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range s.packs {
		if p.version != 2 {
			t.Fatalf("pack read as version %d", p.version)
		}
	}
	mustReadTree(t, s, th1, t1)
	mustRead(t, s, hb, blob)
	if !s.Present(th1) || !isDelta(s, th1) {
		t.Fatal("a version 2 tree delta is not Present")
	}
	if len(s.bases) == 0 {
		t.Fatal("the base of a version 2 delta was not read from its record")
	}
	if problems, err := s.ScanPacks(); err != nil || len(problems) != 0 {
		t.Fatalf("ScanPacks: %v %v", problems, err)
	}
	if _, err := s.GC(set(th1, hb)); err != nil {
		t.Fatal(err)
	}
	mustReadTree(t, s, th1, t1)
	mustRead(t, s, hb, blob)
	rewritten := false
	for _, p := range s.packs {
		rewritten = rewritten || p.version == packVersion
	}
	if !rewritten {
		t.Fatal("gc left every pack in version 2")
	}
	if problems, err := s.ScanPacks(); err != nil || len(problems) != 0 {
		t.Fatalf("ScanPacks after gc: %v %v", problems, err)
	}
}

// toVersion rewrites every pack of the store in dir as format version 2 writes it: the same
// records under a version 2 header, and an idx without bases.
func toVersion(t *testing.T, dir string, v uint32) {
	t.Helper()
	packs, _ := filepath.Glob(filepath.Join(dir, "packs", "*.pack"))
	for _, p := range packs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		entries, _, err := scanPack(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		for i := range entries {
			if entries[i].kind == BlobDeltaObject {
				t.Fatal("a blob delta cannot be written in version 2")
			}
		}
		copy(b[len(packMagic):], []byte{0, 0, 0, byte(v)})
		os.Chmod(p, 0o600)
		if err := os.WriteFile(p, b, 0o400); err != nil {
			t.Fatal(err)
		}
		ip := p[:len(p)-len(".pack")] + ".idx"
		os.Chmod(ip, 0o600)
		if err := os.WriteFile(ip, encodeIdx(entries, v), 0o400); err != nil {
			t.Fatal(err)
		}
	}
}

// OpenBlob of a delta streams nothing from its pack: the content is rebuilt whole, checked, and
// then read in small pieces.
func TestBlobDeltaReadInPieces(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(91, 91))
	v0 := text(91, 50_000)
	v1 := edit(r, v0)
	b := s.NewBatch()
	h0, _ := put(t, b, v0)
	commit(t, b)
	b = s.NewBatch()
	h1, _ := putFrom(t, b, v1, h0)
	commit(t, b)
	rc, err := s.OpenBlob(h1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got bytes.Buffer
	buf := make([]byte, 777)
	if _, err := io.CopyBuffer(&got, io.LimitReader(rc, 1<<30), buf); err != nil || !bytes.Equal(got.Bytes(), v1) {
		t.Fatalf("read in pieces: %v", err)
	}
}

// Deltas of blobs of every window class are small and read back: a small file, one of a few
// megabytes, and one just under maxDeltaObject, each edited in the middle and at the end.
func TestBlobDeltaSizes(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(101, 101))
	for _, size := range []int{5000, 3 << 20, maxDeltaObject - 4096} {
		v0 := text(uint64(size), size)
		v1 := edit(r, v0)[:size-100]
		v1 = append(v1, "the end changed"...)
		b := s.NewBatch()
		h0, _ := put(t, b, v0)
		commit(t, b)
		b = s.NewBatch()
		h1, n := putFrom(t, b, v1, h0)
		commit(t, b)
		_, whole := put(t, TestStore(t).NewBatch(), v1)
		if !isDelta(s, h1) || n*10 > whole {
			t.Fatalf("%d bytes: delta %v, %d bytes stored (whole: %d)", size, isDelta(s, h1), n, whole)
		}
		mustRead(t, s, h1, v1)
		if err := s.CheckObject(h1, true); err != nil {
			t.Fatal(err)
		}
	}
}
