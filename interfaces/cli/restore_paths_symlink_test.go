package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A per-path restore takes a path inside the workspace as written: where a symlink now stands in
// place of a checkpoint's directory, the restore is refused (restore the directory itself) and the
// symlink's target is never written; restoring the directory replaces the symlink.
func TestRestorePathNeverFollowsAWorkspaceSymlink(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "lnk/f", "L\n")
	writeFile(t, dir, "real/f", "R\n")
	cp := createCheckpoint(t, dir)
	if err := os.RemoveAll(filepath.Join(dir, "lnk")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "lnk")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "real/f", "R2\n")
	for _, arg := range []string{"lnk/f", filepath.Join(dir, "lnk", "f")} {
		o := inWorkspace(dir, "rollback", "--to-checkpoint", cp, "--yes", "--", arg)
		if o.code != ExitConflict || !strings.Contains(o.stderr, "lnk is a symlink in the workspace but a directory in the checkpoint: restore lnk itself") {
			t.Errorf("restore of %s through the symlink: %v", arg, o)
		}
		if got := readFile(t, dir, "real/f"); got != "R2\n" {
			t.Fatalf("restore of %s wrote through the symlink: real/f is %q", arg, got)
		}
	}
	mustPlan(t, dir, "rollback", "--to-checkpoint", cp, "--yes", "lnk")
	if fi, err := os.Lstat(filepath.Join(dir, "lnk")); err != nil || !fi.IsDir() {
		t.Fatalf("lnk after restoring it: %v, %v", fi, err)
	}
	if readFile(t, dir, "lnk/f") != "L\n" || readFile(t, dir, "real/f") != "R2\n" {
		t.Fatal("restoring lnk did not give back the checkpoint's directory alone")
	}
}

// Symlinks outside the workspace are the user's routes to it and are followed; once a directory on
// the way is the workspace (or inside it), the rest of the path is taken as written.
func TestRestorePathThroughARouteFromOutside(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "sub/f", "one\n")
	writeFile(t, dir, "sub/g", "one\n")
	cp := createCheckpoint(t, dir)
	writeFile(t, dir, "sub/f", "two\n")
	writeFile(t, dir, "sub/g", "two\n")
	routes := t.TempDir()
	toWS, toSub := filepath.Join(routes, "ws"), filepath.Join(routes, "sub")
	if err := os.Symlink(dir, toWS); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "sub"), toSub); err != nil {
		t.Fatal(err)
	}
	mustPlan(t, dir, "rollback", "--to-checkpoint", cp, "--yes", filepath.Join(toWS, "sub", "f"))
	mustPlan(t, dir, "rollback", "--to-checkpoint", cp, "--yes", filepath.Join(toSub, "g"))
	if readFile(t, dir, "sub/f") != "one\n" || readFile(t, dir, "sub/g") != "one\n" {
		t.Fatal("paths given through routes from outside were not restored")
	}
	// A route that leads nowhere, or a symlink that is the path itself, is outside the workspace.
	for _, p := range []string{filepath.Join(routes, "missing", "f"), toWS} {
		if o := inWorkspace(dir, "rollback", "--to-checkpoint", cp, "--yes", p); o.code != ExitInvalid || !strings.Contains(o.stderr, "outside the workspace") {
			t.Errorf("%s: %v", p, o)
		}
	}
}
