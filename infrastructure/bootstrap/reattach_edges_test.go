package bootstrap_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// A data directory inside the workspace (a workspace at $HOME, or PLAN_DATA_DIR pointing into it)
// would put the history in every checkpoint: the history stays in .plan/, and init says so.
func TestADataDirectoryInsideTheWorkspaceKeepsTheHistoryInPlan(t *testing.T) {
	root := mkdir(t, filepath.Join(t.TempDir(), "home"))
	app, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: root, Init: true, Getenv: dataEnv(filepath.Join(root, ".local", "share", "plan"))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Close() }()
	s := app.Services.Setup
	if s.Layout.Outside() || !strings.Contains(s.Notice, "inside this workspace") || !strings.Contains(s.Notice, "PLAN_DATA_DIR") {
		t.Fatalf("outside %v, notice %q", s.Layout.Outside(), s.Notice)
	}
}

// A re-attach to a state directory that is no longer private is refused; a .plan that is a file is
// an error for KeepAttached, not a directory made again; Former finds nothing where the data
// directory cannot be named or is not there.
func TestReattachAndFormerEdges(t *testing.T) {
	ctx := context.Background()
	o := newOutside(t)
	root := mkdir(t, filepath.Join(t.TempDir(), "ws"))
	s := o.init(root, "first")
	if err := os.RemoveAll(filepath.Join(root, ".plan")); err != nil {
		t.Fatal(err)
	}
	if got, ok := bootstrap.Former(root, o.getenv); !ok || got != root {
		t.Fatalf("Former = %q, %v", got, ok)
	}
	if _, ok := bootstrap.Former(root, dataEnv("relative")); ok {
		t.Fatal("Former with a relative PLAN_DATA_DIR")
	}
	if _, ok := bootstrap.Former(root, dataEnv(filepath.Join(t.TempDir(), "none"))); ok {
		t.Fatal("Former with no data directory")
	}
	if err := os.Chmod(s.Layout.Home(), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, Getenv: o.getenv}); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("re-attach to a state directory open to others: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, ".plan")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused re-attach made .plan/: %v", err)
	}
	if err := os.Chmod(s.Layout.Home(), 0o700); err != nil {
		t.Fatal(err)
	}
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, Getenv: o.getenv})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Close() }()
	if !app.Services.Setup.Reattached {
		t.Fatal("not re-attached")
	}
	if err := os.RemoveAll(filepath.Join(root, ".plan")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".plan"), []byte("a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	if again, err := app.KeepAttached(); again || err == nil {
		t.Fatalf("KeepAttached with .plan a file: %v, %v", again, err)
	}
}
