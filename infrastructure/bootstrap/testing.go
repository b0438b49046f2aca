package bootstrap

import (
	"context"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// Test helpers for the CLI's tests, which cannot reach the adapters: another process's hold on the
// workspace lock, and the journal a crash leaves behind.

// TestLock takes the lock of the workspace at root as another plan process would, and returns what
// releases it.
func TestLock(t testing.TB, root string) (unlock func() error) {
	t.Helper()
	l, err := LayoutAt(root)
	if err != nil {
		t.Fatal(err)
	}
	unlock, err = workspace.NewLocker(l).Lock(context.Background(), "a test holding the lock")
	if err != nil {
		t.Fatal(err)
	}
	return unlock
}

// TestJournal writes op as the journal of the workspace at root: an operation a crash interrupted.
func TestJournal(t testing.TB, root string, op port.Operation) {
	t.Helper()
	l, err := LayoutAt(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := workspace.NewJournal(l).Write(op); err != nil {
		t.Fatal(err)
	}
}

// TestRefuseReads makes every scan of this process answer "permission denied" for the workspace
// names in denied, as the system does for a user who may not read them, until the test ends. The
// tests run as root, whom no permission refuses. Not for parallel tests.
func TestRefuseReads(t testing.TB, denied ...string) {
	t.Helper()
	workspace.TestRefuseReads(t, denied...)
}
