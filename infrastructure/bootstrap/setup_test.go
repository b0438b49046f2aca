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
	"github.com/planhq/plan/infrastructure/internal/config"
)

// A workspace on a shared directory store: its identity and store are recorded, reopening uses
// them, and nothing can move it to another store or database, or give it another identity.
func TestResolveSharedWorkspace(t *testing.T) {
	ctx := context.Background()
	root, store := t.TempDir(), "file://"+filepath.Join(t.TempDir(), "store")
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	s := app.Services.Setup
	id := app.WorkspaceID()
	if !s.Created || !s.Shared() || s.File.Store != store || s.WorkspaceID != id || len(id) != 24 {
		t.Fatalf("setup of a new shared workspace: %+v (database says %s)", s, id)
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(strings.TrimPrefix(store, "file://"), "workspaces", id+".json")); err != nil {
		t.Fatalf("the store does not describe the workspace: %v", err)
	}
	app, err = bootstrap.Open(ctx, bootstrap.Config{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if app.Services.Setup.Created || app.WorkspaceID() != id || !app.Services.Setup.Shared() {
		t.Fatal("reopening did not find the workspace as it was made")
	}
	_ = app.Close()
	for _, c := range []bootstrap.Config{
		{Root: root, Init: true, Store: "file://" + t.TempDir()},
		{Root: root, Init: true, DB: "sqlite://" + filepath.Join(t.TempDir(), "other.db")},
		{Root: root, Init: true, WorkspaceID: "0123456789abcdef01234567"},
	} {
		if _, err := bootstrap.Open(ctx, c); !errors.Is(err, fault.ErrConflict) {
			t.Errorf("init %+v on an existing workspace: %v, want a conflict", c, err)
		}
	}
	// The same store again is plain idempotence.
	app, err = bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	_ = app.Close()
	// A shared store's workspace whose configuration lost its ID cannot find its records.
	p := config.Path(filepath.Join(root, ".plan"))
	f, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WorkspaceID = ""
	if err := config.Save(p, f); err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrap.Open(ctx, bootstrap.Config{Root: root}); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a shared workspace without its ID: %v", err)
	}
	if _, err := bootstrap.Inspect(root, nil); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("doctor's view of a shared workspace without its ID: %v", err)
	}
}

// A store that is gone is unavailable, not a fresh one; bad URLs and DSNs are refused before
// anything is made; a configuration naming something unusable is invalid input naming the file.
func TestResolveRefusals(t *testing.T) {
	ctx := context.Background()
	storeDir := filepath.Join(t.TempDir(), "store")
	root := t.TempDir()
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, Store: "file://" + storeDir})
	if err != nil {
		t.Fatal(err)
	}
	_ = app.Close()
	if err := os.RemoveAll(storeDir); err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrap.Open(ctx, bootstrap.Config{Root: root}); !errors.Is(err, fault.ErrUnavailable) {
		t.Fatalf("a store directory that is gone: %v", err)
	}
	inside := t.TempDir()
	for _, c := range []bootstrap.Config{
		{Init: true, Store: "ftp://x"},
		{Init: true, DB: "mysql://u@h/d"},
		{Init: true, Store: "s3://"},
		{Root: inside, Init: true, Store: "file://" + filepath.Join(inside, "store")},
		{Root: inside, Init: true, DB: "sqlite://" + filepath.Join(inside, "sub", "meta.db")},
	} {
		if c.Root == "" {
			c.Root = t.TempDir()
		}
		if _, err := bootstrap.Open(ctx, c); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("init %+v: %v, want invalid input", c, err)
		}
		if _, err := os.Stat(filepath.Join(c.Root, ".plan")); !os.IsNotExist(err) {
			t.Errorf("init %+v left .plan behind", c)
		}
	}
	bad := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bad, ".plan"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config.Path(filepath.Join(bad, ".plan")), []byte("workspace_id: x\nstore: gopher://x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, open := range []func() error{
		func() error { _, err := bootstrap.Open(ctx, bootstrap.Config{Root: bad, Init: true}); return err },
		func() error { _, err := bootstrap.Inspect(bad, nil); return err },
	} {
		if err := open(); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "config.yaml") {
			t.Errorf("a configuration naming an unusable store: %v", err)
		}
	}
	if _, err := bootstrap.Inspect(t.TempDir(), nil); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("doctor outside a workspace: %v", err)
	}
	// A bad gc.grace is refused where it is used.
	good := t.TempDir()
	app, err = bootstrap.Open(ctx, bootstrap.Config{Root: good, Init: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = app.Close()
	p := config.Path(filepath.Join(good, ".plan"))
	f, _ := config.Load(p)
	f.GC = &config.GC{Grace: "soon"}
	if err := config.Save(p, f); err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrap.Open(ctx, bootstrap.Config{Root: good}); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "gc.grace") {
		t.Errorf("a bad gc.grace: %v", err)
	}
}

// The shared-store view lists and finds checkpoints without a workspace, and refuses what it
// cannot look at.
func TestOpenShared(t *testing.T) {
	ctx := context.Background()
	if _, _, err := bootstrap.OpenShared(ctx, bootstrap.SharedConfig{}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("no store: %v", err)
	}
	if _, _, err := bootstrap.OpenShared(ctx, bootstrap.SharedConfig{Store: "file:///no/such/store"}); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("a store that is not there: %v", err)
	}
	if _, _, err := bootstrap.OpenShared(ctx, bootstrap.SharedConfig{Store: "file:///tmp", DB: "mysql://x"}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("a bad DSN: %v", err)
	}
	store := "file://" + t.TempDir()
	s, closeStore, err := bootstrap.OpenShared(ctx, bootstrap.SharedConfig{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	if ws, err := s.Workspaces(ctx, false); err != nil || len(ws) != 0 {
		t.Fatalf("an empty store lists %v, %v", ws, err)
	}
	if _, err := s.Checkpoint(ctx, "0123456789abcdef01234567", ""); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("an unknown workspace: %v", err)
	}
	if _, err := s.Checkpoint(ctx, "nope", ""); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("a malformed workspace ID: %v", err)
	}
	if _, err := s.Checkpoint(ctx, "0123456789abcdef01234567", "zz"); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("a malformed checkpoint ID: %v", err)
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := bootstrap.EmptyDir(file); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("cloning into a file: %v", err)
	}
	if err := bootstrap.EmptyDir(filepath.Join(file, "below")); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("cloning below a file: %v", err)
	}
}
