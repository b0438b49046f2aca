package hostile

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
)

// Retiring workspaces and the gc summary (issue 24, item 6): nothing a live workspace needs may be
// deleted, whatever is retired, and however the summary gc keeps is tampered with.

// snapshotFiles reads every regular file of w outside .plan.
func snapshotFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".plan" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p) // #nosec G304 -- the test's own workspace
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameFiles(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d files, want %d", what, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: %s differs from the checkpoint's content", what, k)
		}
	}
}

// clone clones checkpoint cp of workspace id of the store into a new directory and returns it
// with the clone's checkpoint.
func (s *sgStore) clone(id, cp string) (*workspace, string) {
	s.t.Helper()
	dir := filepath.Join(s.t.TempDir(), "clone")
	r := runPlan(s.t, s.t.TempDir(), s.Env, "--json", "clone", "--store", s.URL, "--workspace", id, "--checkpoint", cp, dir)
	if r.code != 0 {
		s.t.Fatalf("%s", r)
	}
	var v struct {
		CheckpointID string `json:"checkpoint_id"`
	}
	w := &workspace{t: s.t, dir: dir, env: s.Env}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.CheckpointID == "" {
		s.t.Fatalf("clone printed %q: %v", r.stdout, err)
	}
	return w, v.CheckpointID
}

// retire retires workspace id from anywhere (--yes: its directory may still be there).
func (s *sgStore) retire(id string) {
	s.t.Helper()
	if r := runPlan(s.t, s.t.TempDir(), s.Env, "--yes", "workspaces", "retire", id, "--store", s.URL); r.code != 0 {
		s.t.Fatalf("%s", r)
	}
}

// A retired workspace whose checkpoint a clone was made from: the clone's history names that
// tree, so however many gcs run without grace, from the clone or from anywhere else, the clone
// rolls back to what it was cloned from byte for byte. The source's own other checkpoints go.
func TestRetiredSourceKeepsWhatItsCloneNeeds(t *testing.T) {
	s := newSGStore(t)
	src := s.workspace(5, 4000)
	want := snapshotFiles(t, src.dir)
	first := src.checkpoint("cloned")
	src.write("fa", "the source moved on")
	only := make([]byte, 60000)
	_, _ = rand.Read(only)
	src.write("fz", hex.EncodeToString(only))
	src.checkpoint("not cloned")
	id := sgWorkspaceID(t, src)
	c, cloned := s.clone(id, first)
	s.otherGC()
	before := s.packBytes()
	s.retire(id)
	if r := src.expect(5, "conflict", "checkpoint", "list"); !strings.Contains(r.stderr, "retired") {
		t.Fatalf("a retired workspace's command:\n%s", r)
	}
	if err := os.RemoveAll(src.dir); err != nil {
		t.Fatal(err)
	}
	c.write("fa", "the clone moved on too")
	c.write("new", "new in the clone")
	c.checkpoint("clone's own")
	for i := range 3 { // the first writes the summary, the others read through it
		c.must("gc", "--grace", "0s")
		s.otherGC()
		dropCache(t, c)
		c.must("verify", "--read-data", cloned)
		if i == 0 {
			if len(s.keys("gc/summary-")) == 0 {
				t.Fatal("gc wrote no summary")
			}
		}
	}
	c.must("rollback", "--yes", "--to-checkpoint", cloned)
	sameFiles(t, "the clone rolled back", snapshotFiles(t, c.dir), want)
	// What only the retired source's unpinned checkpoint held is gone: retiring frees it.
	if after := s.packBytes(); after > before-100000 {
		t.Fatalf("the store's packs hold %d bytes after the retired source's gc, %d before: its unpinned checkpoint's 120 kB were kept", after, before)
	}
}

// packBytes is what the store's packs take.
func (s *sgStore) packBytes() int64 {
	s.t.Helper()
	var n int64
	for o := range s.c.ListObjects(context.Background(), s.Bucket, minio.ListObjectsOptions{Prefix: s.prefix + "packs/", Recursive: true}) {
		if o.Err != nil {
			s.t.Fatal(o.Err)
		}
		n += o.Size
	}
	return n
}

// get reads an object of the store behind plan's back.
func (s *sgStore) get(key string) []byte {
	s.t.Helper()
	o, err := s.c.GetObject(context.Background(), s.Bucket, s.prefix+key, minio.GetObjectOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	defer func() { _ = o.Close() }()
	b, err := io.ReadAll(o)
	if err != nil {
		s.t.Fatal(err)
	}
	return b
}

// A summary put back from an older gc (a backup restored, or a forged newest name): it holds a
// workspace's state from before its newest checkpoint. Its names do not match the records any
// more, so the workspace is read again and its newest checkpoint survives any gc.
func TestStaleSummaryNeverHidesACheckpoint(t *testing.T) {
	s := newSGStore(t)
	w := s.workspace(3, 3000)
	w.checkpoint("first")
	s.otherGC()
	old := s.keys("gc/summary-")
	if len(old) != 1 {
		t.Fatalf("want one summary, found %v", old)
	}
	stale := s.get(old[0])
	w.write("fa", strings.Repeat("new content only the newest checkpoint holds ", 200))
	want := snapshotFiles(t, w.dir)
	newest := w.checkpoint("newest")
	s.otherGC()
	for _, k := range s.keys("gc/summary-") {
		s.remove(k)
	}
	sum := sha256.Sum256(stale)
	s.put(fmt.Sprintf("gc/summary-%013x-%s.json", uint64(1)<<50, hex.EncodeToString(sum[:])), string(stale))
	s.otherGC()
	s.otherGC()
	dropCache(t, w)
	w.must("verify", "--read-data", newest)
	w.write("fa", "moved on")
	w.must("rollback", "--yes", "--to-checkpoint", newest)
	sameFiles(t, "rolled back to the newest checkpoint", snapshotFiles(t, w.dir), want)
}

// A workspace's newest record deleted after a gc summarised it: the summary does not vouch for
// it any more (the high-water mark moved past it), and every gc refuses, deleting nothing.
func TestSummaryDoesNotHideDeletedRecords(t *testing.T) {
	s := newSGStore(t)
	w := s.workspace(3, 3000)
	w.checkpoint("first")
	s.otherGC()
	w.write("fa", "second")
	w.checkpoint("second")
	id := sgWorkspaceID(t, w)
	recs := slices.DeleteFunc(s.keys("records/"+id+"/"), func(k string) bool { return strings.Contains(k, "/pending/") })
	s.remove(recs[len(recs)-1])
	packs := s.keys("packs/")
	o := newWorkspace(s.t, s.Env, "--store", s.URL)
	if r := o.expect(6, "integrity", "gc", "--grace", "0s"); !strings.Contains(r.stderr, id) {
		t.Fatalf("gc with a workspace's newest record deleted:\n%s", r)
	}
	if got := s.keys("packs/"); !slices.Equal(got, packs) {
		t.Fatalf("a refused gc deleted packs: %v, then %v", packs, got)
	}
}
