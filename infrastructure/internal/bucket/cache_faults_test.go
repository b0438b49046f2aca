package bucket

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
)

// stored reads name from the bucket itself, past every cache.
func stored(t *testing.T, b *Backend, name string) []byte {
	t.Helper()
	obj, err := b.client.GetObject(context.Background(), b.bucket, b.key(name), minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if err != nil {
		t.Fatalf("read %s from the bucket: %v", name, err)
	}
	return data
}

// emptyDir fails t unless dir holds nothing: what a failed cache write leaves in the cache's tmp.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		t.Errorf("left behind in %s: %s", dir, de.Name())
	}
}

// The cache is an optimisation: when it cannot keep a copy (a path in it is a file where a
// directory belongs, or a directory where a file belongs), reads, writes and uploads still work,
// from and to the bucket, and no temporary file is left behind.
func TestACacheThatCannotKeepCopies(t *testing.T) {
	getenv := s3env(t)
	b := freshBucket(t, getenv, "")
	pack := make([]byte, 2<<20)
	_, _ = rand.Read(pack)
	src := filepath.Join(b.cache.tmp, "upload")
	if err := os.WriteFile(src, pack, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Install(src, "packs/p.pack"); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteFile("workspaces/w.json", []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}

	other, err := Open(context.Background(), Config{URL: "s3://" + b.bucket, CacheDir: t.TempDir(), Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	// packs/ and workspaces/ are files in the cache: nothing below them can be made.
	for _, d := range []string{"packs", "workspaces"} {
		if err := os.WriteFile(filepath.Join(other.cache.files, d), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // not kept, so the second read goes to the bucket again
		if got, err := other.ReadFile("workspaces/w.json"); err != nil || string(got) != `{"a":1}` {
			t.Fatalf("read past a cache that cannot keep it: %q, %v", got, err)
		}
	}
	if st := other.Stats(); st.Misses != 2 || st.Hits != 0 {
		t.Errorf("two reads the cache could not keep: %+v, want two misses", st)
	}
	f, err := other.Open("packs/p.pack")
	if err != nil {
		t.Fatalf("open a pack the cache cannot keep: %v", err)
	}
	got := make([]byte, len(pack))
	if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, pack) {
		t.Fatalf("read it: %v", err)
	}
	_ = f.Close()
	up := filepath.Join(other.cache.tmp, "upload")
	if err := os.WriteFile(up, pack[:1000], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := other.Install(up, "packs/q.pack"); err != nil {
		t.Fatalf("upload past a cache that cannot adopt it: %v", err)
	}
	if !bytes.Equal(stored(t, b, "packs/q.pack"), pack[:1000]) {
		t.Fatal("the upload is not in the bucket")
	}
	emptyDir(t, other.cache.tmp)

	// A directory where the cached copy belongs: the rename into place fails.
	third, err := Open(context.Background(), Config{URL: "s3://" + b.bucket, CacheDir: t.TempDir(), Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	for _, name := range []string{"workspaces/w.json", "packs/r.pack"} {
		if err := os.MkdirAll(filepath.Join(third.cache.path(name), "in-the-way"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := third.ReadFile("workspaces/w.json"); err != nil || string(got) != `{"a":1}` {
		t.Fatalf("read with a directory where the copy goes: %q, %v", got, err)
	}
	if err := third.WriteFile("workspaces/w.json", []byte(`{"a":2}`), 0o600); err != nil {
		t.Fatalf("write with a directory where the copy goes: %v", err)
	}
	if data := stored(t, b, "workspaces/w.json"); string(data) != `{"a":2}` {
		t.Fatalf("the write is not in the bucket: %q", data)
	}
	up = filepath.Join(third.cache.tmp, "upload")
	if err := os.WriteFile(up, pack[:500], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := third.Install(up, "packs/r.pack"); err != nil {
		t.Fatalf("upload with a directory where the copy goes: %v", err)
	}
	emptyDir(t, third.cache.tmp)
}

// A cache whose work directory is unusable cannot download a pack: that is an error naming the
// pack, never "missing" (which the store would take for damage). A cache directory that cannot be
// made fails Open.
func TestACacheThatCannotDownload(t *testing.T) {
	getenv := s3env(t)
	b := freshBucket(t, getenv, "")
	src := filepath.Join(b.cache.tmp, "upload")
	if err := os.WriteFile(src, []byte("pack bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.Install(src, "packs/p.pack"); err != nil {
		t.Fatal(err)
	}
	other, err := Open(context.Background(), Config{URL: "s3://" + b.bucket, CacheDir: t.TempDir(), Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := os.RemoveAll(other.cache.tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other.cache.tmp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = other.Open("packs/p.pack")
	if err == nil || errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), other.Location("packs/p.pack")) {
		t.Fatalf("download into an unusable cache: %v", err)
	}
	// Small files are read into memory: a cache that cannot keep them does not matter.
	if err := other.WriteFile("workspaces/w.json", []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := other.ReadFile("workspaces/w.json"); err != nil || string(got) != "{}" {
		t.Fatalf("a small read with an unusable cache: %q, %v", got, err)
	}

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), Config{URL: "s3://" + b.bucket, CacheDir: filepath.Join(file, "cache"), Getenv: getenv}); err == nil ||
		!strings.Contains(err.Error(), "cache") {
		t.Fatalf("a cache below a file: %v", err)
	}
}

// The cache's counters are statistics: when they cannot be saved, Close still succeeds and
// nothing else is affected.
func TestCacheCountersThatCannotBeSaved(t *testing.T) {
	getenv := s3env(t)
	b := freshBucket(t, getenv, "")
	dir := t.TempDir()
	other, err := Open(context.Background(), Config{URL: "s3://" + b.bucket, CacheDir: dir, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.WriteFile("workspaces/w.json", []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := other.ReadFile("workspaces/w.json"); err != nil {
		t.Fatal(err)
	}
	if other.Stats().Hits != 1 {
		t.Fatalf("a cached read: %+v", other.Stats())
	}
	if err := os.Mkdir(filepath.Join(dir, "stats.lock"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatalf("close with counters that cannot be saved: %v", err)
	}
	again, err := Open(context.Background(), Config{URL: "s3://" + b.bucket, CacheDir: dir, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if st := again.Stats(); st.Hits != 0 {
		t.Errorf("counters that could not be saved were read back: %+v", st)
	}
	if got, err := again.ReadFile("workspaces/w.json"); err != nil || string(got) != "{}" {
		t.Fatalf("the cache after its counters were lost: %q, %v", got, err)
	}
}
