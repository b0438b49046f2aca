package cli

import (
	"os"
	"path/filepath"
	"testing"
)

// A command started in a directory that no longer exists has no workspace and no base for a
// relative path: it is refused, never taken from some other directory instead, and nothing changes.
func TestPathsFromADeletedDirectory(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "before\n")
	cp := createCheckpoint(t, dir)
	writeFile(t, dir, "a.txt", "after\n")
	gone := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(gone, 0o750); err != nil {
		t.Fatal(err)
	}
	t.Chdir(gone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	o := invoke(Runner{}, "rollback", "--to-checkpoint", cp, "--yes", "a.txt")
	if o.code == ExitOK {
		t.Fatalf("a restore of a path relative to a deleted directory: %v", o)
	}
	if got := readFile(t, dir, "a.txt"); got != "after\n" {
		t.Errorf("the refused restore changed a.txt: %q", got)
	}
	// The same path with -C naming the workspace works: -C is where the command starts.
	if o := inWorkspace(dir, "rollback", "--to-checkpoint", cp, "--yes", "--dry-run", "a.txt"); o.code != ExitOK {
		t.Fatalf("with -C: %v", o)
	}
	o = invoke(Runner{Dir: dir}, "-C", dir, "rollback", "--to-checkpoint", cp, "--yes", "a.txt")
	if o.code != ExitOK || readFile(t, dir, "a.txt") != "before\n" {
		t.Fatalf("the restore from the workspace: %v", o)
	}
}
