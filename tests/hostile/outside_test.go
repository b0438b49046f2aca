package hostile

import (
	"os"
	"path/filepath"
	"testing"
)

// A restore never changes anything outside the workspace, even through a hard link: a workspace
// file with the checkpoint's content but another mode, which is a hard link to a file outside the
// workspace (made by a tool or script on the same file system), is replaced by a file of its own.
// Finding: the rollback chmodded the name in place, so the outside file's mode changed (0600 ->
// 0755: a checkpoint mode of 0666 would have opened it to everyone).
func TestRollbackNeverChmodsAFileOutsideThroughAHardLink(t *testing.T) {
	w := newWorkspace(t, []string{"PLAN_WATCH=0"})
	w.write("a", "SAME\n")
	if err := os.Chmod(w.path("a"), 0o755); err != nil {
		t.Fatal(err)
	}
	cp := w.checkpoint("a is 0755")
	outside := filepath.Join(filepath.Dir(w.dir), "outside", "secret")
	if err := os.MkdirAll(filepath.Dir(outside), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, []byte("SAME\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(w.path("a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, w.path("a")); err != nil {
		t.Fatal(err)
	}
	w.must("--yes", "rollback", "--to-checkpoint", cp)
	fi, err := os.Stat(outside)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("the rollback changed the mode of %s, outside the workspace: %o, want 600", outside, fi.Mode().Perm())
	}
	in, err := os.Stat(w.path("a"))
	if err != nil {
		t.Fatal(err)
	}
	if in.Mode().Perm() != 0o755 || os.SameFile(fi, in) {
		t.Fatalf("the workspace's a: mode %o, same file as the outside one %v; want 0755, a file of its own", in.Mode().Perm(), os.SameFile(fi, in))
	}
	if got := w.read("a"); got != "SAME\n" {
		t.Fatalf("a holds %q", got)
	}
}
