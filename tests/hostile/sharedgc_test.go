package hostile

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
)

// Metadata loss on a shared store (issue 21): gc deletes only provable garbage. A pack whose idx
// was deleted or damaged, a workspace whose records were deleted, a copied workspace and another
// product's files in the bucket must never cost the only copy of anything.

// sgStore is a shared S3 store of the test's own, with a client to tamper with it behind plan's back.
type sgStore struct {
	s3Store
	t      *testing.T
	c      *minio.Client
	prefix string
}

func newSGStore(t *testing.T) *sgStore {
	t.Helper()
	s := &sgStore{s3Store: newS3Store(t, "p"), t: t, prefix: "p/"}
	s.c = s.Client(t)
	return s
}

// workspace makes a workspace on the store with files of random content (n files of size bytes).
func (s *sgStore) workspace(n, size int) *workspace {
	s.t.Helper()
	w := newWorkspace(s.t, s.Env, "--store", s.URL)
	for i := range n {
		b := make([]byte, size)
		_, _ = rand.Read(b)
		w.write("f"+string(rune('a'+i)), hex.EncodeToString(b))
	}
	return w
}

// keys lists the object keys under the store's sub (relative to the store, e.g. "packs/").
func (s *sgStore) keys(sub string) []string {
	s.t.Helper()
	var out []string
	for o := range s.c.ListObjects(context.Background(), s.Bucket, minio.ListObjectsOptions{Prefix: s.prefix + sub, Recursive: true}) {
		if o.Err != nil {
			s.t.Fatal(o.Err)
		}
		out = append(out, strings.TrimPrefix(o.Key, s.prefix))
	}
	slices.Sort(out)
	return out
}

func (s *sgStore) remove(key string) {
	s.t.Helper()
	if err := s.c.RemoveObject(context.Background(), s.Bucket, s.prefix+key, minio.RemoveObjectOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *sgStore) put(key, content string) {
	s.t.Helper()
	if _, err := s.c.PutObject(context.Background(), s.Bucket, s.prefix+key, bytes.NewReader([]byte(content)), int64(len(content)), minio.PutObjectOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

// idxOnly is the store's one idx file (the test's workspace wrote one pack).
func (s *sgStore) idxOnly() string {
	s.t.Helper()
	var idx []string
	for _, k := range s.keys("packs/") {
		if strings.HasSuffix(k, ".idx") {
			idx = append(idx, k)
		}
	}
	if len(idx) != 1 {
		s.t.Fatalf("want one idx in the store, have %v", idx)
	}
	return idx[0]
}

// dropCache removes a workspace's local copy of the store, so what it reads next comes from the bucket.
func dropCache(t *testing.T, w *workspace) {
	t.Helper()
	if err := os.RemoveAll(w.state("cache")); err != nil {
		t.Fatal(err)
	}
}

// otherGC is the gc of another workspace of the store, with no grace: the one that swept the
// only copy in the findings.
func (s *sgStore) otherGC() {
	s.t.Helper()
	o := newWorkspace(s.t, s.Env, "--store", s.URL)
	o.write("o", "other")
	o.checkpoint("other")
	o.must("gc", "--grace", "0s")
}

// A pack's .idx deleted from the bucket (idx-deleted-orphan-swept.sh): doctor names the unindexed
// pack, and the next gc of any workspace re-indexes it instead of deleting it as an orphan: the
// checkpoint verifies and restores.
func TestSharedGCKeepsAPackWhoseIdxWasDeleted(t *testing.T) {
	s := newSGStore(t)
	w := s.workspace(6, 3000)
	want := w.read("fa")
	cp := w.checkpoint("data")
	idx := s.idxOnly()
	pack := strings.TrimSuffix(idx, ".idx") + ".pack"
	s.remove(idx)
	dropCache(t, w)
	w.write("fa", "moved on")
	if r := w.expect(6, "", "doctor"); !strings.Contains(r.stdout+r.stderr, "without an index") {
		t.Fatalf("doctor does not name the unindexed pack:\n%s", r)
	}
	s.otherGC()
	if !slices.Contains(s.keys("packs/"), pack) {
		t.Fatalf("another workspace's gc deleted %s, the only copy of checkpoint %s", pack, cp)
	}
	dropCache(t, w)
	w.must("verify", cp)
	w.must("rollback", "--yes", "--to-checkpoint", cp)
	if got := w.read("fa"); got != want {
		t.Fatalf("restored %q, want the checkpoint's content", got)
	}
}

// A damaged .idx (corrupt-idx-advice-loses-data.sh): the error advises doctor --repair, never to
// delete the file; doctor --repair rebuilds it from its pack; and an idx deleted anyway (as the old
// advice said) costs nothing either.
func TestSharedDamagedIdxIsRebuiltNotDeleted(t *testing.T) {
	s := newSGStore(t)
	w := s.workspace(6, 3000)
	cp := w.checkpoint("data")
	idx := s.idxOnly()
	pack := strings.TrimSuffix(idx, ".idx") + ".pack"
	s.put(idx, "garbage")
	dropCache(t, w)
	r := w.expect(6, "integrity", "ls", cp) // the first command that reads an object finds it
	if strings.Contains(r.stderr, "delete it") || !strings.Contains(r.stderr, "doctor --repair") {
		t.Fatalf("the advice for a damaged idx:\n%s", r)
	}
	w.must("doctor", "--repair")
	w.must("verify", cp)
	// Deleted by hand all the same: another workspace's gc keeps the pack.
	s.remove(idx)
	dropCache(t, w)
	s.otherGC()
	if !slices.Contains(s.keys("packs/"), pack) {
		t.Fatalf("another workspace's gc deleted %s, the only copy of checkpoint %s", pack, cp)
	}
	w.must("doctor", "--repair")
	w.must("verify", "--read-data", cp)
}

// A workspace's records deleted from the bucket (records-deleted-doctor-blind.sh): its doctor and
// verify see it, another workspace's gc deletes nothing while they are missing, and once doctor
// --repair wrote them again a gc keeps the workspace's content.
func TestSharedRecordsDeletedAreSeenAndKeepGCOff(t *testing.T) {
	s := newSGStore(t)
	a := s.workspace(1, 100)
	a.checkpoint("a")
	b := s.workspace(4, 20000)
	cp := b.checkpoint("b")
	packs := s.keys("packs/")
	id := sgWorkspaceID(t, b)
	for _, k := range s.keys("records/" + id + "/") {
		s.remove(k)
	}
	dropCache(t, b)
	if r := b.expect(6, "", "doctor"); !strings.Contains(r.stdout, "missing from the store") {
		t.Fatalf("doctor of the workspace that lost its records:\n%s", r)
	}
	if r := b.expect(6, "", "verify"); !strings.Contains(r.stdout+r.stderr, "missing from the store") {
		t.Fatalf("verify of the workspace that lost its records:\n%s", r)
	}
	if r := a.expect(6, "integrity", "gc", "--grace", "0s"); !strings.Contains(r.stderr, id) {
		t.Fatalf("gc does not name the workspace whose records are missing:\n%s", r)
	}
	if got := s.keys("packs/"); !slices.Equal(got, packs) {
		t.Fatalf("a gc deleted packs while a workspace's records were missing: %v, then %v", packs, got)
	}
	b.must("doctor", "--repair")
	a.must("gc", "--grace", "0s")
	dropCache(t, b)
	b.must("verify", "--read-data", cp)
}

// records-deleted-doctor-blind.sh with MODE=one: only a workspace's newest records deleted from
// the bucket leave no gap in what is left, and another workspace's gc deleted what only they
// referenced. The workspace's high-water mark (workspaces/<id>.head) shows them missing: gc
// refuses and keeps every pack; the workspace's doctor --repair writes its history again.
func TestSharedNewestRecordsDeletedKeepGCOff(t *testing.T) {
	s := newSGStore(t)
	a := s.workspace(1, 100)
	a.checkpoint("a")
	b := s.workspace(4, 20000)
	b.checkpoint("b1")
	b.write("later.bin", strings.Repeat("only the newest records reference this ", 2000))
	cp := b.checkpoint("b2")
	packs := s.keys("packs/")
	id := sgWorkspaceID(t, b)
	recs := s.keys("records/" + id + "/")
	if len(recs) < 3 {
		t.Fatalf("want several records to delete the newest of: %v", recs)
	}
	for _, k := range recs[len(recs)-2:] {
		s.remove(k)
	}
	dropCache(t, b)
	if r := a.expect(6, "integrity", "gc", "--grace", "0s"); !strings.Contains(r.stderr, "newest records are missing") {
		t.Fatalf("gc does not see the newest records missing:\n%s", r)
	}
	if got := s.keys("packs/"); !slices.Equal(got, packs) {
		t.Fatalf("a gc deleted packs while a workspace's newest records were missing: %v, then %v", packs, got)
	}
	b.must("doctor", "--repair")
	a.must("gc", "--grace", "0s")
	dropCache(t, b)
	b.must("verify", "--read-data", cp)
}

// A workspace directory copied with cp -a (copied-workspace-shares-id.sh): the copy is refused
// before it writes (it would write the original's history), and the original's checkpoints
// survive any gc.
func TestCopiedWorkspaceIsRefusedBeforeItWrites(t *testing.T) {
	store := "file://" + filepath.Join(t.TempDir(), "store")
	orig := newWorkspace(t, nil, "--store", store)
	orig.write("data", strings.Repeat("original ", 5000))
	cp := orig.checkpoint("first")
	copyDir := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", orig.dir, copyDir).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v %s", err, out)
	}
	cw := &workspace{t: t, dir: copyDir}
	cw.write("data", "edited in the copy")
	r := cw.expect(5, "conflict", "checkpoint", "delete", cp)
	if !strings.Contains(r.stderr, "copy of the workspace in "+orig.dir) {
		t.Fatalf("the refusal does not name the original:\n%s", r)
	}
	cw.expect(5, "conflict", "checkpoint", "create")
	other := newWorkspace(t, nil, "--store", store)
	other.write("x", "x")
	other.checkpoint("other")
	other.must("gc", "--grace", "0s")
	orig.must("verify", "--read-data", cp)
	// The way out the refusal names: the copy becomes a workspace of its own.
	if err := os.RemoveAll(filepath.Join(copyDir, ".plan")); err != nil {
		t.Fatal(err)
	}
	cw.must("init", "--store", store)
	cw.checkpoint("copy's own")
	orig.must("verify", cp)
}

// A bucket holding another product's files (foreign-bucket.sh): init refuses it (exit 3) and writes
// nothing; a file with a pack's name put into a plan store is never deleted by gc.
func TestForeignFilesAreNeverPlans(t *testing.T) {
	s := newSGStore(t)
	if err := s.c.MakeBucket(context.Background(), s.Bucket, minio.MakeBucketOptions{Region: s.Region}); err != nil {
		t.Fatal(err)
	}
	theirs := []string{"config", "data/00/0011", "packs/0123456789abcdef0123456789abcdef.pack",
		"packs/0123456789abcdef0123456789abcdef.idx", "packs/readme.txt"}
	for _, k := range theirs {
		s.put(k, "their data")
	}
	dir := filepath.Join(t.TempDir(), "w")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w := &workspace{t: t, dir: dir, env: s.Env}
	w.expect(3, "invalid", "init", "--store", s.URL)
	if got := s.keys(""); !slices.Equal(got, sorted(theirs)) {
		t.Fatalf("a refused init changed the bucket: %v", got)
	}
	// A plan store of its own, into which a file named like a pack (not one) is put by hand.
	p := newSGStore(t)
	pw := p.workspace(2, 1000)
	foreign := "packs/fedcba9876543210fedcba9876543210.pack"
	p.put(foreign, "their data")
	pw.checkpoint("data")
	pw.must("gc", "--grace", "0s")
	pw.must("gc", "--grace", "0s")
	if !slices.Contains(p.keys("packs/"), foreign) {
		t.Fatalf("gc deleted %s, a file that is not plan's", foreign)
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// sgWorkspaceID is the workspace_id of w's configuration.
func sgWorkspaceID(t *testing.T, w *workspace) string {
	t.Helper()
	for _, line := range strings.Split(w.read(".plan/config.yaml"), "\n") {
		if v, ok := strings.CutPrefix(line, "workspace_id: "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("no workspace_id in the configuration")
	return ""
}
