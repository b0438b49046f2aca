// Package crash holds end-to-end tests of plan's rollback guarantees: a model-based random
// workload against the real services (bootstrap.Open), and kill -9 trials against the real binary.
// It has no non-test code.
package crash

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/planhq/plan/domain/tree"
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
