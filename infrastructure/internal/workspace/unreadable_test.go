package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/planhq/plan/domain/tree"
)

// The record of a tree's unreadable paths is a union: adding what it holds writes nothing, adding
// more keeps the rest. A missing record is none; a damaged one is an error.
func TestUnreadableRecord(t *testing.T) {
	w := newTestWS(t)
	var h tree.Hash
	h[0] = 1
	if got, err := loadUnreadable(w.l, h); err != nil || got != nil {
		t.Fatalf("no record: %q %v", got, err)
	}
	if err := saveUnreadable(w.l, h, []string{"b", "a"}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(w.l.unreadableDir(), h.String())
	before, _ := os.Stat(p)
	if err := saveUnreadable(w.l, h, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(p); !os.SameFile(before, after) {
		t.Error("a record holding the paths already was written again")
	}
	if err := saveUnreadable(w.l, h, []string{"c"}); err != nil {
		t.Fatal(err)
	}
	if got, err := loadUnreadable(w.l, h); err != nil || !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("record: %q %v", got, err)
	}
	if err := os.WriteFile(p, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadUnreadable(w.l, h); err == nil {
		t.Fatal("a damaged record was read")
	}
	if err := saveUnreadable(w.l, h, []string{"d"}); err == nil {
		t.Fatal("a damaged record was replaced")
	}
	if !under("pgdata", []string{"pgdata"}) || !under("pgdata/x", []string{"pgdata"}) || under("pgdata2", []string{"pgdata"}) {
		t.Error("under")
	}
	if msg := UnreadableWarning([]string{"a", "b", "c", "d", "e", "f", "g"}); !strings.Contains(msg, `"e"`) || strings.Contains(msg, `"f"`) || !strings.Contains(msg, "and 2 more") {
		t.Errorf("warning: %s", msg)
	}
}

// A restore to or from a tree whose snapshot could not read a path leaves everything at or under
// it alone: neither deleted (the target lacks it) nor overwritten. Recovery's reconcile too. A
// damaged record fails the restore before anything is touched.
func TestRestoreLeavesUnreadablePathsAlone(t *testing.T) {
	w := newTestWS(t)
	w.write("src/app.py", "precious\n", 0o644)
	w.write("pgdata/PG_VERSION", "16\n", 0o644)
	w.remove("pgdata")
	without := w.snapshot() // as a snapshot that could not read pgdata records the workspace
	if err := saveUnreadable(w.l, without.Root, []string{"pgdata"}); err != nil {
		t.Fatal(err)
	}
	w.write("pgdata/PG_VERSION", "17, written since\n", 0o644)
	w.write("src/app.py", "changed\n", 0o644)
	cur := w.snapshot() // readable again: the safety checkpoint a rollback takes
	stats, err := w.r.Apply(t.Context(), cur.Root, without.Root, nil)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if got, _ := os.ReadFile(w.abs("pgdata/PG_VERSION")); string(got) != "17, written since\n" {
		t.Fatalf("pgdata/PG_VERSION holds %q after the restore", got)
	}
	if got, _ := os.ReadFile(w.abs("src/app.py")); string(got) != "precious\n" {
		t.Fatalf("src/app.py holds %q", got)
	}
	if stats.Written != 1 {
		t.Errorf("stats %+v", stats)
	}
	if _, err := w.r.Reconcile(t.Context(), without.Root); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if _, err := os.Stat(w.abs("pgdata/PG_VERSION")); err != nil {
		t.Fatalf("recovery removed what its target could not read: %v", err)
	}
	if err := os.WriteFile(filepath.Join(w.l.unreadableDir(), without.Root.String()), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := w.r.Apply(t.Context(), cur.Root, without.Root, nil); err == nil || !strings.Contains(err.Error(), "could not record") {
		t.Fatalf("Apply with a damaged record: %v", err)
	}
	if _, err := w.r.Reconcile(t.Context(), without.Root); err == nil {
		t.Fatal("Reconcile with a damaged record went on")
	}
	if _, err := os.Stat(w.abs("pgdata/PG_VERSION")); err != nil {
		t.Fatalf("a refused restore removed pgdata: %v", err)
	}
}

// What a scan may not read (a directory it may not open, a name it may not stat, a file it may
// not open) is left out of the snapshot, recorded with its tree before the snapshot is returned,
// and named in one warning; the rest is checkpointed exactly. A walk that stores nothing reports
// the same paths. An excluded name that cannot be read is no warning at all.
func TestSnapshotLeavesOutWhatItMayNotRead(t *testing.T) {
	w := newTestWS(t)
	w.write("src/main.go", "package main", 0o644)
	w.write("pgdata/base/1", "rows", 0o600)
	w.write("src/locked", "secret", 0o600)
	w.write("nostat", "x", 0o644)
	w.write("build/out", "o", 0o644)
	w.write(IgnoreFile, "build/\n", 0o644)
	TestRefuseReads(t, "pgdata", "locked", "build")
	TestRefuseStats(t, "nostat", "out")

	snap := w.snapshot()
	want := []string{"nostat", "pgdata", "src/locked"}
	if !slices.Equal(snap.Unreadable, want) {
		t.Fatalf("unreadable %q, want %q", snap.Unreadable, want)
	}
	if len(snap.Warnings) != 1 || !strings.Contains(snap.Warnings[0], `"pgdata"`) || !strings.Contains(snap.Warnings[0], "permission denied") {
		t.Fatalf("warnings %q", snap.Warnings)
	}
	got, err := loadUnreadable(w.l, snap.Root)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("recorded %q %v", got, err)
	}
	var paths []string
	for _, e := range w.flatten(snap.Root) {
		paths = append(paths, e.Path)
	}
	if !slices.Equal(paths, []string{IgnoreFile, "src", "src/main.go"}) {
		t.Fatalf("snapshot holds %q", paths)
	}
	entries, unreadable, err := w.sc.ScanReadable(t.Context(), nil)
	if err != nil || !slices.Equal(unreadable, want) || len(entries) != 3 {
		t.Fatalf("scan: %d entries, unreadable %q, %v", len(entries), unreadable, err)
	}
}

// A refusal that is not about permission still fails the scan, naming the path.
func TestScanFailsOnOtherOpenErrors(t *testing.T) {
	w := newTestWS(t)
	w.write("a", "alpha", 0o644)
	open := openFile
	t.Cleanup(func() { openFile = open })
	openFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		return nil, &os.PathError{Op: "open", Path: name, Err: unix.EIO}
	}
	if _, err := w.sc.Snapshot(t.Context(), nil); err == nil || !strings.Contains(err.Error(), `open "a"`) {
		t.Fatalf("snapshot with EIO: %v", err)
	}
}
