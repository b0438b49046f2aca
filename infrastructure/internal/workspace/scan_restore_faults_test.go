package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// A stat cache that cannot be saved costs only time: the snapshot is durable and correct, and says
// so in a warning.
func TestSnapshotWhenTheStatCacheCannotBeSaved(t *testing.T) {
	w := newTestWS(t)
	w.write("a", "alpha", 0o644)
	if err := os.MkdirAll(filepath.Join(w.l.StatCache(), "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	snap := w.snapshot()
	if len(snap.Warnings) != 1 || !strings.Contains(snap.Warnings[0], "stat cache") {
		t.Fatalf("warnings %q", snap.Warnings)
	}
	if d := treetest.Diff(w.live(), w.flatten(snap.Root)); len(d) > 0 {
		t.Fatalf("snapshot differs from the workspace: %q", d)
	}
}

// A snapshot whose objects cannot be made durable fails: a checkpoint must never reference
// objects a crash could lose.
func TestSnapshotFailsWhenObjectsCannotBeCommitted(t *testing.T) {
	w := newTestWS(t)
	w.write("a", "alpha", 0o644)
	if err := os.RemoveAll(filepath.Join(w.l.Objects(), "packs")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.sc.Snapshot(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "durable") {
		t.Fatalf("Snapshot without packs/: %v", err)
	}
}

// An unreadable scanner configuration stops the scan (and so a restore's reconcile) instead of
// silently applying defaults.
func TestScanStopsOnAnUnreadableConfig(t *testing.T) {
	w := newTestWS(t)
	w.write("a", "alpha", 0o644)
	snap := w.snapshot()
	if err := os.Mkdir(filepath.Join(w.l.State(), "config.yaml"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := w.sc.Snapshot(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "config.yaml") {
		t.Fatalf("Snapshot with config.yaml a directory: %v", err)
	}
	if _, err := w.r.Reconcile(t.Context(), snap.Root); err == nil {
		t.Fatal("Reconcile scanned with an unreadable config")
	}
	if _, err := w.r.Unrecorded(t.Context(), snap.Root); err == nil {
		t.Fatal("Unrecorded scanned with an unreadable config")
	}
}

// A .planignore holding only comments and blank lines ignores nothing.
func TestPlanignoreOfCommentsOnly(t *testing.T) {
	w := newTestWS(t)
	w.write(IgnoreFile, "# nothing yet\n\n   \n", 0o644)
	w.write("build/out", "x", 0o644)
	ig, err := LoadIgnore(w.root)
	if err != nil {
		t.Fatal(err)
	}
	if ig.SkipPath("build/out", false) || ig.SkipPath("build", true) {
		t.Fatal("a comment-only .planignore ignored a path")
	}
	paths := map[string]bool{}
	for _, e := range w.flatten(w.snapshot().Root) {
		paths[e.Path] = true
	}
	if !paths["build/out"] || !paths[IgnoreFile] {
		t.Fatalf("snapshot %v", paths)
	}
}

// Data the workspace holds at a path that the source tree did not have is never overwritten by a
// restore that wants to create that path: it is reported as kept, byte for byte as it was.
func TestApplyNeverOverwritesUnrecordedData(t *testing.T) {
	w := newTestWS(t)
	w.write("a", "alpha", 0o644)
	src := w.snapshot()
	w.write("b", "recorded", 0o644)
	dst := w.snapshot()
	w.write("b", "written after the snapshot, never recorded", 0o600)
	stats, err := w.r.Apply(t.Context(), src.Root, dst.Root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(stats.Kept) != 1 || stats.Kept[0] != "b" {
		t.Fatalf("kept %v", stats.Kept)
	}
	if b, _ := os.ReadFile(w.abs("b")); string(b) != "written after the snapshot, never recorded" {
		t.Fatalf("unrecorded data was overwritten: %q", b)
	}
}

// A restore from or to a tree the store does not hold fails before touching the workspace.
func TestRestoreOfAMissingTreeTouchesNothing(t *testing.T) {
	w := newTestWS(t)
	w.write("a", "alpha", 0o644)
	snap := w.snapshot()
	want := w.live()
	gone := tree.Sum([]byte("no such tree"))
	if _, err := w.r.Apply(t.Context(), gone, snap.Root, nil); err == nil {
		t.Fatal("Apply from a missing tree succeeded")
	}
	if _, err := w.r.Reconcile(t.Context(), gone); err == nil {
		t.Fatal("Reconcile to a missing tree succeeded")
	}
	if _, err := w.r.Unrecorded(t.Context(), gone); err == nil {
		t.Fatal("Unrecorded against a missing tree succeeded")
	}
	w.requireTree(want, "after restores of a missing tree")
}
