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
	"github.com/planhq/plan/infrastructure/internal/workspace"
	"github.com/planhq/plan/tests/testkit"
)

// writeConfig writes .plan/config.yaml under root, as an init interrupted after it (or a user)
// left it.
func writeConfig(t *testing.T, root, yaml string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, ".plan"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config.Path(filepath.Join(root, ".plan")), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
}

// An existing workspace keeps its store and database: init asking for others is a conflict that
// names what the workspace has, the private store and the default database included.
func TestInitCannotMoveAWorkspace(t *testing.T) {
	ctx := context.Background()
	private := t.TempDir()
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: private, Init: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = app.Close()
	_, err = bootstrap.Open(ctx, bootstrap.Config{Root: private, Init: true, Store: "file://" + t.TempDir()})
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "the private store in "+app.Services.Layout.Objects()) {
		t.Errorf("init --store on a private workspace: %v", err)
	}
	_, err = bootstrap.Open(ctx, bootstrap.Config{Root: private, Init: true, DB: "sqlite://" + filepath.Join(t.TempDir(), "x.db")})
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), app.Services.Layout.Database()) {
		t.Errorf("init --db on a workspace with the default database: %v", err)
	}

	elsewhere := "sqlite://" + filepath.Join(t.TempDir(), "meta.db")
	root := t.TempDir()
	app, err = bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, DB: elsewhere})
	if err != nil {
		t.Fatal(err)
	}
	_ = app.Close()
	_, err = bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, DB: "sqlite://" + filepath.Join(t.TempDir(), "other.db")})
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), elsewhere) {
		t.Errorf("init --db on a workspace with another database: %v", err)
	}
	app, err = bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, DB: elsewhere})
	if err != nil {
		t.Fatalf("init with the database it has: %v", err)
	}
	_ = app.Close()
}

// An init interrupted after it wrote the configuration (a clone that stopped there) is finished by
// running the same init again, and never turned into another workspace or onto another store.
func TestInitAfterAnInterruptedInit(t *testing.T) {
	ctx := context.Background()
	store := "file://" + filepath.Join(t.TempDir(), "store")
	root := t.TempDir()
	writeConfig(t, root, "workspace_id: 0123456789abcdef01234567\nstore: "+store+"\n")
	for _, c := range []bootstrap.Config{
		{WorkspaceID: "fedcba9876543210fedcba98"},
		{Store: "file://" + t.TempDir()},
	} {
		c.Root, c.Init = root, true
		if _, err := bootstrap.Open(ctx, c); !errors.Is(err, fault.ErrConflict) {
			t.Errorf("init %+v over an interrupted one: %v, want a conflict", c, err)
		}
		if _, err := os.Stat(config.Path(filepath.Join(root, ".plan"))); err != nil {
			t.Errorf("a refused init removed the configuration it did not make: %v", err)
		}
	}
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, Store: store, WorkspaceID: "0123456789abcdef01234567", Getenv: ownDataDir(t)})
	if err != nil {
		t.Fatalf("the same init again: %v", err)
	}
	defer app.Close()
	if got := app.WorkspaceID(); got != "0123456789abcdef01234567" || app.Services.Setup.File.Store != store {
		t.Errorf("the finished init: workspace %s on %q", got, app.Services.Setup.File.Store)
	}
}

// What stands in the way of making a workspace is reported, and leaves no .plan/ behind: a root
// that cannot be written, a state directory that cannot be, a store path below a file, a store
// whose workspaces/ cannot be written.
func TestInitBlockedByTheFileSystem(t *testing.T) {
	ctx := context.Background()
	ro := t.TempDir()
	testkit.Immutable(t, ro)
	if _, err := bootstrap.Open(ctx, bootstrap.Config{Root: ro, Init: true}); err == nil || !strings.Contains(err.Error(), ".plan") {
		t.Errorf("init in a root that cannot be written: %v", err)
	}

	// .plan/ made by an init that stopped before its configuration, then frozen.
	frozen := t.TempDir()
	l, err := workspace.NewLayout(frozen)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	state := l.State()
	testkit.Immutable(t, state)
	_, err = bootstrap.Open(ctx, bootstrap.Config{Root: frozen, Init: true})
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "cannot write to "+state) {
		t.Errorf("init with a state directory that cannot be written: %v", err)
	}

	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	_, err = bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, Store: "file://" + filepath.Join(file, "store")})
	if err == nil || !strings.Contains(err.Error(), "create the store") {
		t.Errorf("a store below a file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, ".plan")); !os.IsNotExist(err) {
		t.Errorf("a failed init left .plan behind: %v", err)
	}

	storeDir := t.TempDir()
	if err := os.Mkdir(filepath.Join(storeDir, "workspaces"), 0o700); err != nil {
		t.Fatal(err)
	}
	testkit.Immutable(t, filepath.Join(storeDir, "workspaces"))
	_, err = bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, Store: "file://" + storeDir})
	if err == nil || !strings.Contains(err.Error(), "describe the workspace in the store") {
		t.Errorf("a store whose workspaces/ cannot be written: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, ".plan")); !os.IsNotExist(err) {
		t.Errorf("a failed init left .plan behind: %v", err)
	}
}

// A configuration that cannot be read, or names a database plan cannot use, is invalid input
// naming the file, for the application and for doctor alike.
func TestAnUnusableConfiguration(t *testing.T) {
	ctx := context.Background()
	for name, yaml := range map[string]string{
		"an unknown key":     "workspace_id: 0123456789abcdef01234567\nstroe: file:///tmp/x\n",
		"an unusable db DSN": "workspace_id: 0123456789abcdef01234567\ndb: mysql://u@h/d\n",
		"not YAML":           "workspace_id: [\n",
	} {
		root := t.TempDir()
		writeConfig(t, root, yaml)
		for what, open := range map[string]func() error{
			"open":    func() error { _, err := bootstrap.Open(ctx, bootstrap.Config{Root: root}); return err },
			"init":    func() error { _, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true}); return err },
			"inspect": func() error { _, err := bootstrap.Inspect(root, nil); return err },
		} {
			if err := open(); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "config.yaml") {
				t.Errorf("%s with %s: %v", what, name, err)
			}
		}
	}
}

// A file:// store that became a file is unavailable, saying what is there instead.
func TestAStoreThatIsNotADirectory(t *testing.T) {
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
	if err := os.WriteFile(storeDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrap.Open(ctx, bootstrap.Config{Root: root}); !errors.Is(err, fault.ErrUnavailable) || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a store that is a file: %v", err)
	}
}

// A store whose packs/ or whose workspace's records cannot be listed is refused when the
// workspace is opened, and when init is run again (which must not take records it cannot read for
// none, and start an empty database beside them).
func TestAStoreThatCannotBeRead(t *testing.T) {
	ctx := context.Background()
	for _, what := range []string{"packs", "records"} {
		storeDir := filepath.Join(t.TempDir(), "store")
		root := t.TempDir()
		app, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, Store: "file://" + storeDir})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(storeDir, what)
		if what == "records" {
			p = filepath.Join(p, app.WorkspaceID())
		}
		_ = app.Close()
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true}); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("init again with a store whose %s cannot be listed: %v", what, err)
		}
		if what == "packs" {
			if _, err := bootstrap.Open(ctx, bootstrap.Config{Root: root}); err == nil || !strings.Contains(err.Error(), p) {
				t.Errorf("open with a store whose packs cannot be listed: %v", err)
			}
		}
	}
}
