// Package crash holds end-to-end tests of plan's rollback guarantees: a model-based random
// workload against the real services (bootstrap.Open), and kill -9 trials against the real binary.
// It has no non-test code.
package crash

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// snapshotOf reads a workspace with the standard library only, independently of plan's scanner.
func snapshotOf(t testing.TB, root string) []tree.Entry {
	t.Helper()
	return snapshotExcept(t, root, nil)
}

// snapshotExcept is snapshotOf leaving out the given workspace-relative paths (and what is under
// them): directories the workspace's .planignore excludes.
func snapshotExcept(t testing.TB, root string, skip map[string]bool) []tree.Entry {
	t.Helper()
	entries, err := treetest.Read(root, skip)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// requireSame fails unless the workspace at root holds exactly want.
func requireSame(t testing.TB, root string, want []tree.Entry, context string) {
	t.Helper()
	treetest.RequireSame(t, root, nil, want, context)
}

// writeFile creates or replaces a regular file with an exact Unix mode, creating parents 0755.
func writeFile(t testing.TB, p string, data []byte, mode uint32) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, tree.GoMode(mode)); err != nil {
		t.Fatal(err)
	}
}

// stateFile is the path of a file of the workspace at root's history (journal.json, plan.db,
// objects/…) in its state directory: the one its .plan/config.yaml names (state_dir), or .plan/
// itself for a workspace made with `--store workspace`.
func stateFile(t testing.TB, root, rel string) string {
	t.Helper()
	l, err := bootstrap.LayoutAt(root)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(l.Home(), filepath.FromSlash(rel))
}

// copyWorkspace copies the workspace at from, history and all, to to (which must not exist yet), as
// a workspace of its own. cp -a of the directory alone copies a .plan/ that names from's state
// directory: plan refuses such a copy (a copy of a workspace still in use) and the two would share
// one history. So the state directory is copied too, into a data directory of the copy's own, and
// the copy's configuration names it; the copy's binding to a directory (.plan/home and the registry
// entry, which name from) is left out, for the copy's first command to make for where it is.
func copyWorkspace(t testing.TB, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s: %v %s", from, err, out)
	}
	l, err := bootstrap.LayoutAt(from)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Outside() {
		return // the history is in .plan/: the copy has its own
	}
	workspaces := filepath.Join(t.TempDir(), "workspaces")
	if err := os.Mkdir(workspaces, 0o700); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(workspaces, filepath.Base(l.Data))
	if out, err := exec.Command("cp", "-a", l.Data, state).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s: %v %s", l.Data, err, out)
	}
	cfg := filepath.Join(to, ".plan", "config.yaml")
	b, err := os.ReadFile(cfg) // #nosec G304 -- the test's own workspace
	if err != nil {
		t.Fatal(err)
	}
	was := "state_dir: " + l.Data + "\n"
	if !bytes.Contains(b, []byte(was)) {
		t.Fatalf("%s does not say %q:\n%s", cfg, was, b)
	}
	b = bytes.Replace(b, []byte(was), []byte("state_dir: "+state+"\n"), 1)
	for _, p := range []string{cfg, filepath.Join(state, "config.yaml")} {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(to, ".plan", "home"), filepath.Join(state, "workspace.json")} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	if got := stateFile(t, to, ""); got != state {
		t.Fatalf("the copy's state directory is %s, want %s", got, state)
	}
}
