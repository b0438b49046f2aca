package objectstore

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// text returns n bytes of compressible, source-like content that depends on seed.
func text(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	words := []string{"func", "return", "if", "err", "!=", "nil", "{", "}", "package", "import", "for",
		"range", "var", ":=", "string", "int", "\n\t", "\n", "(", ")", "x", "y", "value", "index"}
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		b.WriteByte(' ')
		if r.IntN(50) == 0 {
			fmt.Fprintf(&b, "%d", r.Uint64())
		}
	}
	return b.Bytes()[:n]
}

func put(t testing.TB, b *Batch, data []byte) (tree.Hash, int64) {
	t.Helper()
	h := tree.Sum(data)
	n, err := b.PutBlob(bytes.NewReader(data), h, int64(len(data)))
	if err != nil {
		t.Fatalf("PutBlob: %v", err)
	}
	return h, n
}

func commit(t testing.TB, b *Batch) {
	t.Helper()
	if err := b.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func readBlob(s *Store, h tree.Hash) ([]byte, error) {
	r, err := s.OpenBlob(h)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func mustRead(t testing.TB, s *Store, h tree.Hash, want []byte) {
	t.Helper()
	got, err := readBlob(s, h)
	if err != nil {
		t.Fatalf("read %s: %v", h, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %s: got %d bytes, want %d (content differs)", h, len(got), len(want))
	}
}

func files(t testing.TB, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// genReader streams n pseudo-random, partly compressible bytes without holding them.
type genReader struct {
	r    *rand.ChaCha8
	left int64
	blk  int
}

func newGen(seed byte, n int64) *genReader {
	return &genReader{r: rand.NewChaCha8([32]byte{seed}), left: n}
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.left, 4096)]
	g.blk++
	if g.blk%2 == 0 {
		g.r.Read(p)
	} else {
		for i := range p {
			p[i] = byte('a' + i%17)
		}
	}
	g.left -= int64(len(p))
	return len(p), nil
}

func genHash(seed byte, n int64) tree.Hash {
	h := sha256.New()
	io.Copy(h, newGen(seed, n))
	return tree.Hash(h.Sum(nil))
}

func TestBlobRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	blobs := [][]byte{{}, []byte("x"), text(1, 5000), testkit.Noise(2, 70000), text(3, 3<<20), testkit.Noise(4, largeBlob)}
	b := s.NewBatch()
	var hs []tree.Hash
	for _, d := range blobs {
		h, n := put(t, b, d)
		if n <= 0 {
			t.Fatalf("blob of %d bytes: stored %d", len(d), n)
		}
		hs = append(hs, h)
	}
	const bigSize = 20 << 20
	bigHash := genHash(9, bigSize)
	n, err := b.PutBlob(newGen(9, bigSize), bigHash, bigSize)
	if err != nil || n <= 0 || n >= bigSize {
		t.Fatalf("PutBlob large: stored %d, %v", n, err)
	}
	if s.Has(hs[0]) || !b.Has(hs[0]) || !b.Has(bigHash) {
		t.Fatal("objects visible before Commit, or batch does not know them")
	}
	commit(t, b)
	check := func(s *Store) {
		for i, h := range hs {
			mustRead(t, s, h, blobs[i])
			if err := s.CheckObject(h, true); err != nil {
				t.Fatal(err)
			}
			info, ok := s.Info(h)
			if !ok || info.Kind != BlobObject || info.RawSize != int64(len(blobs[i])) || info.StoredSize <= 0 {
				t.Fatalf("Info = %+v, %v", info, ok)
			}
		}
		r, err := s.OpenBlob(bigHash)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.New()
		if n, err := io.Copy(sum, r); err != nil || n != bigSize {
			t.Fatalf("read large: %d, %v", n, err)
		}
		r.Close()
		if tree.Hash(sum.Sum(nil)) != bigHash {
			t.Fatal("large blob content differs")
		}
		if err := s.CheckObject(bigHash, true); err != nil {
			t.Fatal(err)
		}
	}
	check(s)
	if st := s.Stats(); st.Objects != len(blobs)+1 || st.Packs != 2 || st.RawBytes <= bigSize || st.StoredBytes <= 0 {
		t.Fatalf("Stats = %+v", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := readBlob(s, hs[1]); err == nil {
		t.Fatal("read after Close succeeded")
	}
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	check(s2)
	if got := files(t, filepath.Join(dir, "tmp")); len(got) != 0 {
		t.Fatalf("tmp not empty after commit: %v", got)
	}
}

func TestDedup(t *testing.T) {
	s := TestStore(t)
	data := text(5, 10000)
	b := s.NewBatch()
	h, n1 := put(t, b, data)
	_, n2 := put(t, b, data)
	if n1 == 0 || n2 != 0 {
		t.Fatalf("stored %d then %d", n1, n2)
	}
	// r must not be read when the object is already there.
	if n, err := b.PutBlob(errReader{}, h, int64(len(data))); n != 0 || err != nil {
		t.Fatalf("PutBlob of a known hash read its reader: %d, %v", n, err)
	}
	commit(t, b)
	b2 := s.NewBatch()
	if _, n3 := put(t, b2, data); n3 != 0 {
		t.Fatalf("second batch stored %d", n3)
	}
	commit(t, b2)
	if st := s.Stats(); st.Packs != 1 || st.Objects != 1 {
		t.Fatalf("empty batch wrote a pack: %+v", st)
	}
	if err := b.Commit(); err != nil {
		t.Fatalf("second Commit: %v", err)
	}
	b.Abort() // no-op after Commit
	mustRead(t, s, h, data)
	if _, err := b.PutBlob(bytes.NewReader([]byte("new")), tree.Sum([]byte("new")), 3); err == nil {
		t.Fatal("PutBlob after Commit succeeded")
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("boom") }

func TestConcurrentPutAndRead(t *testing.T) {
	old := packTarget
	packTarget = 256 << 10 // force rollovers while workers race
	defer func() { packTarget = old }()
	s := TestStore(t)
	b := s.NewBatch()
	const workers, per = 8, 60
	var wg sync.WaitGroup
	var mu sync.Mutex
	all := map[tree.Hash][]byte{}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				// Overlapping seeds make workers race on the same content.
				d := text(uint64(i*3+w%3), 2000+i*300)
				h := tree.Sum(d)
				if _, err := b.PutBlob(bytes.NewReader(d), h, int64(len(d))); err != nil {
					t.Error(err)
					return
				}
				if _, _, err := b.PutTree(Tree{{Name: fmt.Sprint("f", i), Kind: tree.KindFile, Mode: 0o644, Size: int64(len(d)), Hash: h}}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				all[h] = d
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	commit(t, b)
	if st := s.Stats(); st.Packs < 2 {
		t.Fatalf("expected rollover into several packs, got %+v", st)
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h, d := range all {
				got, err := readBlob(s, h)
				if err != nil || !bytes.Equal(got, d) {
					t.Errorf("concurrent read %s: %v", h, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestContentChanged(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	data := text(6, 4000)
	h := tree.Sum(data)
	other := append([]byte(nil), data...)
	other[10] ^= 1
	cases := map[string]struct {
		r    io.Reader
		size int64
	}{
		"different bytes": {bytes.NewReader(other), int64(len(data))},
		"shorter":         {bytes.NewReader(data[:100]), int64(len(data))},
		"longer":          {io.MultiReader(bytes.NewReader(data), strings.NewReader("more")), int64(len(data))},
	}
	for name, c := range cases {
		_, err := b.PutBlob(c.r, h, c.size)
		if !errors.Is(err, ErrContentChanged) || fault.Kind(err) != fault.ErrConflict {
			t.Errorf("%s: got %v", name, err)
		}
	}
	if _, err := b.PutBlob(errReader{}, h, 10); err == nil || errors.Is(err, ErrContentChanged) {
		t.Errorf("read error: got %v", err)
	}
	if _, err := b.PutBlob(errReader{}, h, -1); fault.Kind(err) != fault.ErrInvalid {
		t.Errorf("negative size: got %v", err)
	}
	// Large (streamed) blobs.
	const n = largeBlob + 1000
	bh := genHash(1, n)
	for name, c := range map[string]struct {
		r    io.Reader
		size int64
	}{
		"different bytes": {newGen(2, n), n},
		"shorter":         {newGen(1, n-1), n},
		"longer":          {newGen(1, n+1), n},
	} {
		_, err := b.PutBlob(c.r, bh, c.size)
		if !errors.Is(err, ErrContentChanged) {
			t.Errorf("large %s: got %v", name, err)
		}
	}
	if _, err := b.PutBlob(io.MultiReader(newGen(1, 100), errReader{}), bh, n); err == nil || errors.Is(err, ErrContentChanged) {
		t.Errorf("large read error: got %v", err)
	}
	if b.Has(h) || b.Has(bh) {
		t.Fatal("a changed blob was recorded")
	}
	if got := files(t, s.tmpDir); len(got) != 0 {
		t.Fatalf("discarded records left temp files: %v", got)
	}
	commit(t, b)
	if got := files(t, s.packsDir); len(got) != 0 {
		t.Fatalf("empty batch wrote %v", got)
	}
}

func TestAbortAndCleanTemp(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	h, _ := put(t, b, text(7, 1000))
	put(t, b, testkit.Noise(8, largeBlob+10))
	if len(files(t, s.tmpDir)) != 3 {
		t.Fatalf("tmp = %v", files(t, s.tmpDir))
	}
	junk := filepath.Join(s.tmpDir, "deadbeef.pack")
	if err := os.WriteFile(junk, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := s.CleanTemp()
	if err != nil || n != 1 {
		t.Fatalf("CleanTemp = %d, %v (tmp: %v)", n, err, files(t, s.tmpDir))
	}
	b.Abort()
	b.Abort()
	if got := files(t, s.tmpDir); len(got) != 0 {
		t.Fatalf("Abort left %v", got)
	}
	if s.Has(h) {
		t.Fatal("aborted object visible")
	}
	if err := b.Commit(); err == nil {
		t.Fatal("Commit after Abort succeeded")
	}
	if _, _, err := b.PutTree(nil); err == nil {
		t.Fatal("PutTree after Abort succeeded")
	}
}

func TestOpenErrors(t *testing.T) {
	base := t.TempDir()
	notDir := filepath.Join(base, "file")
	os.WriteFile(notDir, nil, 0o644)
	if _, err := Open(filepath.Join(notDir, "objects")); err == nil {
		t.Fatal("Open under a file succeeded")
	}
	// Files that are not ours are ignored.
	dir := filepath.Join(base, "objects")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	os.WriteFile(filepath.Join(dir, "packs", "README"), []byte("hi"), 0o644)
	os.WriteFile(filepath.Join(dir, "packs", "nothex.pack"), []byte("hi"), 0o644)
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st := s.Stats(); st.Packs != 0 {
		t.Fatalf("foreign files loaded: %+v", st)
	}
}

func TestKindString(t *testing.T) {
	if BlobObject.String() != "blob" || TreeObject.String() != "tree" || Kind(9).String() != "kind(9)" {
		t.Fatal("Kind.String")
	}
}
