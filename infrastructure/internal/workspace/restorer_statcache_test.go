package workspace

import (
	"github.com/planhq/plan/domain/tree"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRestoreStatCacheNeverVouchesForALaterWrite: another process writes a restored file (same
// size) after the restore put it in place, and the restore goes on for longer than the racy
// margin. The stat cache entry is the stat taken right after the file was written, so the next
// snapshot sees the change and records what is on disk. (Fix: the cache was patched with stats
// taken at the end of the restore, which vouched for the other process's write as the restored
// content: the next checkpoints recorded content that was not on disk.)
func TestRestoreStatCacheNeverVouchesForALaterWrite(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "one", 0o644)
	a := w.snapshot()
	time.Sleep(30 * time.Millisecond) // the staged content's mtime a tick older than its placing
	w.write("f", "two", 0o644)
	b := w.snapshot()
	w.r.Failpoint = func(name string) error {
		if name == "restore.applied" {
			time.Sleep(30 * time.Millisecond)
			w.write("f", "ONE", 0o644) // same size, written after the restore placed f
			time.Sleep(30 * time.Millisecond)
		}
		return nil
	}
	if _, err := w.r.Apply(t.Context(), b.Root, a.Root, nil); err != nil {
		t.Fatal(err)
	}
	snap := w.snapshot()
	if e := entryOf(t, w.flatten(snap.Root), "f"); e.Hash != fileEntry("f", "ONE", 0o644).Hash {
		t.Fatalf("the snapshot after the restore records f as %s, not what is on disk", e.Hash)
	}
}

// TestRestoreStatCacheRecordsPlacedFiles: a file left alone after the restore is recorded with the
// stat taken right after its rename, and trusted by the next snapshot (not read again) once its
// content was older than a tick when it was placed.
func TestRestoreStatCacheRecordsPlacedFiles(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "one", 0o644)
	a := w.snapshot()
	w.write("f", "two", 0o644)
	b := w.snapshot()
	w.r.Failpoint = func(name string) error {
		if name == "restore.staged" {
			time.Sleep(30 * time.Millisecond) // placed more than a tick after it was written
		}
		return nil
	}
	if _, err := w.r.Apply(t.Context(), b.Root, a.Root, nil); err != nil {
		t.Fatal(err)
	}
	e, ok := cacheFiles(t, w.l.StatCache())["f"]
	fi, err := os.Lstat(w.abs("f"))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := keyOf(fi)
	if !ok || e.racy || e.key != k || e.hash != fileEntry("f", "one", 0o644).Hash {
		t.Fatalf("the stat cache entry of the restored f: %+v (ok %v), file key %+v", e, ok, k)
	}
}

// TestPlacedEntry: the stat taken right after a rename vouches for the restored content only when
// it shows the file the restore staged (same inode, size, mtime and mode).
func TestPlacedEntry(t *testing.T) {
	w := newTestWS(t)
	root, err := os.OpenRoot(w.root)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = root.Close() }()
	a := &applier{r: w.r, root: root, staged: map[string]statKey{}}
	w.write("f", "one", 0o644)
	w.mkdir("d", 0o755)
	fi, err := os.Lstat(w.abs("f"))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := keyOf(fi)
	h := fileEntry("f", "one", 0o644).Hash
	old := time.Unix(0, max(k.Mtime, k.Ctime)).Add(time.Second)
	if _, ok := a.placedEntry("f", h, old); ok {
		t.Error("a file the restore did not stage is vouched for")
	}
	a.staged["f"] = k
	if e, ok := a.placedEntry("f", h, old); !ok || e.racy || e.key != k || e.hash != h || e.name != "f" {
		t.Errorf("the staged file, unchanged: %+v %v", e, ok)
	}
	if e, ok := a.placedEntry("f", h, time.Unix(0, k.Mtime)); !ok || !e.racy {
		t.Errorf("a file placed within a tick of its content's mtime is not racy: %+v %v", e, ok)
	}
	changed := k
	changed.Mtime--
	a.staged["f"] = changed
	if _, ok := a.placedEntry("f", h, old); ok {
		t.Error("a file whose mtime is not the staged one is vouched for")
	}
	a.staged["d"] = k
	if _, ok := a.placedEntry("d", h, old); ok {
		t.Error("a directory is vouched for as a file")
	}
	if _, ok := a.placedEntry("missing", h, old); ok {
		t.Error("a missing file is vouched for")
	}
	a.written, a.staged["f"] = map[string]cachedEntry{}, k
	a.placedFile("f", h, old)
	a.placedFile("missing", h, old)
	if e, ok := a.written["f"]; !ok || e.key != k || len(a.written) != 1 || len(a.unsure) != 1 || a.unsure[0] != "missing" {
		t.Errorf("placedFile: written %+v, unsure %v", a.written, a.unsure)
	}
}

// TestRestoreStatCacheSkipsFilesChangedAfterWriting: a file the restore wrote that another process
// replaced (by a directory) before the stat cache is patched keeps at most the entry of the file
// the restore wrote (the stat taken right after the write, never one taken later); the next
// snapshot records what is there.
func TestRestoreStatCacheSkipsFilesChangedAfterWriting(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "one", 0o644)
	w.write("g", "one", 0o644)
	a := w.snapshot()
	w.write("f", "two", 0o644)
	w.write("g", "two", 0o644)
	b := w.snapshot()
	w.r.Failpoint = func(name string) error {
		if name == "restore.applied" {
			w.remove("f")
			w.write("f/inside", "a directory now", 0o644)
		}
		return nil
	}
	if _, err := w.r.Apply(t.Context(), b.Root, a.Root, nil); err != nil {
		t.Fatal(err)
	}
	files := cacheFiles(t, w.l.StatCache())
	if e, ok := files["f"]; ok && (e.kind != tree.KindFile || e.hash != fileEntry("f", "one", 0o644).Hash) {
		t.Fatalf("the stat cache records for f what the restore did not write: %+v", e)
	}
	if e, ok := files["g"]; !ok || e.hash != fileEntry("g", "one", 0o644).Hash {
		t.Fatalf("the restored g in the stat cache: %+v %v", e, ok)
	}
	snap := w.snapshot()
	got := w.flatten(snap.Root)
	if e := entryOf(t, got, "f"); e.Kind != tree.KindDir {
		t.Fatalf("f is %+v", e)
	}
	w.requireSnapshotExact(snap.Root, nil, "after the restored file was replaced")
}

// TestScanWorkspaceGone: a workspace directory moved away under the scanner fails a snapshot and
// a scan with an error naming it.
func TestScanWorkspaceGone(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "f", 0o644)
	moved := w.root + ".moved"
	if err := os.Rename(w.root, moved); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(moved) })
	if _, err := w.sc.Snapshot(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "open workspace "+w.root) {
		t.Fatalf("snapshot of a workspace that is gone: %v", err)
	}
	if _, err := w.sc.Scan(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "open workspace") {
		t.Fatalf("scan of a workspace that is gone: %v", err)
	}
}
