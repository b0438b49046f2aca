package bootstrap_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/infrastructure/internal/persistence"
)

// Two workspaces in one fx app: each Scoped module keeps its adapters to itself and exports its
// *Workspace under its name; each workspace's decisions, checkpoints and log stay its own.
func TestTwoScopedWorkspacesInOneApp(t *testing.T) {
	docs, site := t.TempDir(), t.TempDir()
	ctx := context.Background()
	var a, b *bootstrap.Workspace
	app := fx.New(
		bootstrap.Scoped("docs", bootstrap.Config{Root: docs, Init: true}),
		bootstrap.Scoped("site", bootstrap.Config{Root: site, Init: true}),
		fx.Invoke(fx.Annotate(func(x, y *bootstrap.Workspace) { a, b = x, y }, fx.ParamTags(`name:"docs"`, `name:"site"`))),
		fx.NopLogger,
	)
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if a.Name != "docs" || a.Root != docs || b.Name != "site" || b.Root != site {
		t.Fatalf("workspaces: %+v %+v", a, b)
	}
	if _, err := a.Plans.Exec(ctx, application.ExecRequest{ID: "one", Command: "echo docs > d.txt"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Plans.Exec(ctx, application.ExecRequest{Command: "echo site > s.txt"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(docs, "s.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("site's decision wrote into docs: %v", err)
	}
	pa, err := a.Plans.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := b.Plans.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pa.Decisions()) != 1 || pa.Decisions()[0].ID() != "one" || len(pb.Decisions()) != 1 || pb.Decisions()[0].ID() != "echo-1" {
		t.Errorf("decisions: docs %v, site %v", pa.Decisions(), pb.Decisions())
	}
	for _, w := range []*bootstrap.Workspace{a, b} {
		ops, err := w.History.List(ctx, 0, "")
		if err != nil || len(ops) != 2 || ops[0].Kind != "decision" || ops[1].Kind != "exec" {
			t.Errorf("%s's log: %+v %v", w.Name, ops, err)
		}
		if _, err := w.Checkpoints.Create(ctx, application.CreateRequest{Note: w.Name}); err != nil {
			t.Error(err)
		}
		if _, err := w.Maintenance.Stats(ctx); err != nil {
			t.Error(err)
		}
		if _, _, err := w.Read.Entries(ctx, "@", ""); err != nil {
			t.Error(err)
		}
		if _, err := w.Corrections.List(ctx); err != nil {
			t.Error(err)
		}
	}
	if err := app.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// Stopping the app closed both databases: each opens again at once.
	for _, dir := range []string{docs, site} {
		reopen(t, dir)
	}
}

// Only the *Workspace leaves a Scoped module: the adapters (~40 types) stay inside it.
func TestScopedExportsOnlyTheWorkspace(t *testing.T) {
	app := fx.New(
		bootstrap.Scoped("one", bootstrap.Config{Root: t.TempDir(), Init: true}),
		fx.Invoke(func(*persistence.DB) {}),
		fx.NopLogger,
	)
	if err := app.Err(); err == nil || !strings.Contains(err.Error(), "missing type: *persistence.DB") {
		t.Fatalf("the database leaked out of the module: %v", err)
	}
}

func TestScopedRefusesABadName(t *testing.T) {
	for _, name := range []string{"", "a b", `x"y`, strings.Repeat("n", 65)} {
		app := fx.New(bootstrap.Scoped(name, bootstrap.Config{Root: t.TempDir()}), fx.NopLogger)
		if err := app.Err(); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("name %q: %v", name, err)
		}
	}
}

// Config.Funcs registers Go functions when the app starts; a bad one fails the start.
func TestConfigFuncsAreRegistered(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	write := port.Func(func(_ context.Context, dir string, _ port.DecisionCall) error {
		return os.WriteFile(filepath.Join(dir, "f.txt"), []byte("f\n"), 0o600)
	})
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: dir, Init: true, Funcs: map[string]port.DecisionFunc{"write": write}})
	if err != nil {
		t.Fatal(err)
	}
	defer closeApp(t, app)
	if h := app.Services.Plans.Host(); h != filepath.Base(os.Args[0]) {
		t.Errorf("host = %q, want the program's name", h)
	}
	res, err := app.Services.Plans.Exec(ctx, application.ExecRequest{FuncName: "write"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ran[0] != "write-1" {
		t.Errorf("generated ID %v", res.Ran)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "f.txt")); err != nil || string(b) != "f\n" {
		t.Errorf("f.txt: %q %v", b, err)
	}

	_, err = bootstrap.Open(ctx, bootstrap.Config{Root: t.TempDir(), Init: true, Funcs: map[string]port.DecisionFunc{"Bad Name": write}})
	if !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("a bad function name: %v", err)
	}
	named, err := bootstrap.Open(ctx, bootstrap.Config{Root: t.TempDir(), Init: true, Host: "my-agent"})
	if err != nil {
		t.Fatal(err)
	}
	defer closeApp(t, named)
	if h := named.Services.Plans.Host(); h != "my-agent" {
		t.Errorf("host = %q", h)
	}
}
