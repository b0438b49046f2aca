package workspace

import (
	"os"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
)

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
