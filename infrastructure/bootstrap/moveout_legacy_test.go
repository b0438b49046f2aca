package bootstrap_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/infrastructure/internal/config"
)

// A workspace made before workspaces had an ID in their configuration moves out under the ID its
// database holds.
func TestMoveOutOfAWorkspaceWithoutAnIDInItsConfiguration(t *testing.T) {
	ctx := context.Background()
	o := newOutside(t)
	root := mkdir(t, filepath.Join(t.TempDir(), "old"))
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := o.init(root, "first", func(c *bootstrap.Config) { c.Store = bootstrap.InWorkspace })
	cfg := config.Path(filepath.Join(root, ".plan"))
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "workspace_id:") {
			kept = append(kept, line)
		}
	}
	if err := os.WriteFile(cfg, []byte(strings.Join(kept, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := bootstrap.MoveOut(ctx, root, o.getenv)
	if err != nil || res.WorkspaceID != s.WorkspaceID || filepath.Base(res.To) != s.WorkspaceID {
		t.Fatalf("MoveOut = %+v, %v; want workspace %s", res, err, s.WorkspaceID)
	}
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Getenv: o.getenv})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Close() }()
	if cps, err := app.Services.Checkpoints.List(ctx); err != nil || len(cps) != 1 || !app.Services.Layout.Outside() {
		t.Fatalf("after the move: %d checkpoints, %v", len(cps), err)
	}
}
