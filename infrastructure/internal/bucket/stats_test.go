package bucket

import (
	"context"
	"testing"
)

// Processes that share a cache (plan commands of one workspace, one after another or at once) add
// their counters up: none loses another's.
func TestCountersOfProcessesSharingACache(t *testing.T) {
	getenv := s3env(t)
	b := freshBucket(t, getenv, "")
	if err := b.WriteFile("workspaces/w.json", []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	open := func() *Backend {
		t.Helper()
		o, err := Open(context.Background(), Config{URL: "s3://" + b.bucket, CacheDir: dir, Getenv: getenv})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	first, second := open(), open()
	for _, o := range []*Backend{first, second, second} {
		if _, err := o.ReadFile("workspaces/w.json"); err != nil {
			t.Fatal(err)
		}
	}
	// first fetched the file (a miss, its bytes downloaded); second found it cached twice.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	third := open()
	defer third.Close()
	if st := third.Stats(); st.Misses != 1 || st.Hits != 2 || st.DownloadedBytes != 2 {
		t.Fatalf("the counters of two processes: %+v, want 1 miss, 2 hits, 2 bytes downloaded", st)
	}
	// A process that counted nothing leaves the saved counters as they are.
	idle := open()
	if err := idle.Close(); err != nil {
		t.Fatal(err)
	}
	last := open()
	defer last.Close()
	if st := last.Stats(); st.Misses != 1 || st.Hits != 2 {
		t.Fatalf("after a process that counted nothing: %+v", st)
	}
}
