package bootstrap_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// A move-out that cannot copy, or finds an operation pending, moves nothing: the workspace keeps
// using .plan/ with every checkpoint, and a later move (the cause gone) starts over from scratch
// and succeeds.
func TestMoveOutRefusalsMoveNothing(t *testing.T) {
	ctx := context.Background()
	o := newOutside(t)
	root := mkdir(t, filepath.Join(t.TempDir(), "ws"))
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := o.init(root, "first", func(c *bootstrap.Config) { c.Store = bootstrap.InWorkspace })
	checkpoints := func() int {
		t.Helper()
		app, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Getenv: o.getenv})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = app.Close() }()
		cps, err := app.Services.Checkpoints.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if app.Services.Layout.Outside() {
			t.Fatal("the history moved out")
		}
		return len(cps)
	}

	// Something in .plan/ that is no file of plan's: the copy stops, naming it.
	odd := filepath.Join(root, ".plan", "logs", "odd")
	mkdir(t, filepath.Dir(odd))
	if err := os.Symlink("/etc/passwd", odd); err != nil {
		t.Fatal(err)
	}
	_, err := bootstrap.MoveOut(ctx, root, o.getenv)
	if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), "nothing was moved") {
		t.Fatalf("MoveOut with a symlink in .plan/: %v", err)
	}
	if n := checkpoints(); n != 1 {
		t.Fatalf("%d checkpoints after a refused move", n)
	}
	if err := os.Remove(odd); err != nil {
		t.Fatal(err)
	}

	// An interrupted operation: recover first.
	bootstrap.TestJournal(t, root, port.Operation{ID: "op-1", Kind: "rollback"})
	if _, err := bootstrap.MoveOut(ctx, root, o.getenv); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "plan recover") {
		t.Fatalf("MoveOut with a pending operation: %v", err)
	}
	if err := os.Remove(filepath.Join(root, ".plan", "journal.json")); err != nil {
		t.Fatal(err)
	}

	// The cut copy is discarded and the move done again.
	res, err := bootstrap.MoveOut(ctx, root, o.getenv)
	if err != nil || !res.Resumed || filepath.Base(res.To) != s.WorkspaceID {
		t.Fatalf("MoveOut after the refusals = %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(res.To, ".moving")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the marker of a finished move is still there: %v", err)
	}
}
