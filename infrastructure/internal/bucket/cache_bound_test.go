package bucket

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A pack larger than the whole cache bound (cache.max_bytes set low) is still read, fetched whole
// or by range then promoted: the cache may drop it afterwards, never before the reader has it open.
// A pack the store cannot open is taken for a missing one, which is damage.
func TestPacksLargerThanTheCacheBound(t *testing.T) {
	getenv := s3env(t)
	b := freshBucket(t, getenv, "")
	small := make([]byte, 3<<20) // fetched whole when opened
	big := make([]byte, 11<<20)  // read by range, then fetched whole
	_, _ = rand.Read(small)
	_, _ = rand.Read(big)
	for name, data := range map[string][]byte{"packs/small.pack": small, "packs/big.pack": big} {
		src := filepath.Join(b.cache.tmp, "upload")
		if err := os.WriteFile(src, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := b.Install(src, name); err != nil {
			t.Fatal(err)
		}
	}
	other, err := Open(context.Background(), Config{URL: "s3://" + b.bucket, CacheDir: t.TempDir(), Getenv: getenv, CacheMax: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	f, err := other.Open("packs/small.pack")
	if err != nil {
		t.Fatalf("open a pack larger than the cache bound: %v", err)
	}
	got := make([]byte, len(small))
	if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, small) {
		t.Fatalf("read it: %v (equal: %v)", err, bytes.Equal(got, small))
	}
	_ = f.Close()

	f, err = other.Open("packs/big.pack")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64)
	for i := range int64(11) { // past promoteAfter distinct blocks: the last reads come from the whole copy
		off := i*blockSize + 13
		if _, err := f.ReadAt(buf, off); err != nil {
			t.Fatalf("read block %d of a pack larger than the cache bound: %v", i, err)
		}
		if !bytes.Equal(buf, big[off:off+64]) {
			t.Fatalf("block %d differs", i)
		}
	}
	if got := other.Stats().CachedBytes; got > 1<<20 {
		t.Errorf("the cache holds %d bytes past its bound of 1 MiB", got)
	}
}

// Past its bound, the cache drops the packs least recently used: a pack uploaded now counts as
// used now, however long ago it was written, and one opened counts from its opening.
func TestTheCacheDropsTheLeastRecentlyUsed(t *testing.T) {
	getenv := s3env(t)
	b := freshBucket(t, getenv, "")
	upload(t, b, "packs/opened.pack", random(3<<20))
	c, err := Open(context.Background(), Config{URL: "s3://" + b.bucket, CacheDir: t.TempDir(), Getenv: getenv, CacheMax: 7 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	install := func(name string, age time.Duration) {
		t.Helper()
		src := filepath.Join(c.cache.tmp, "upload")
		if err := os.WriteFile(src, random(3<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		then := time.Now().Add(-age)
		if err := os.Chtimes(src, then, then); err != nil {
			t.Fatal(err)
		}
		if err := c.Install(src, name); err != nil {
			t.Fatal(err)
		}
	}
	install("packs/old.pack", 0)
	f, err := c.Open("packs/opened.pack") // fetched now: more recent than old.pack
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	time.Sleep(10 * time.Millisecond)
	install("packs/new.pack", time.Hour) // written an hour ago, uploaded now: 9 MiB, past the bound
	for name, kept := range map[string]bool{"packs/old.pack": false, "packs/opened.pack": true, "packs/new.pack": true} {
		if _, err := os.Stat(c.cache.path(name)); (err == nil) != kept {
			t.Errorf("%s: kept %v, want %v", name, err == nil, kept)
		}
	}
}
