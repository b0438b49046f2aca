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
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// The house style: a missing provider must fail `go test`, not the first user. ValidateApp checks
// the graph without running a constructor.
func TestModuleValidates(t *testing.T) {
	for _, init := range []bool{false, true} {
		var svc bootstrap.Services
		cfg := bootstrap.Config{Root: t.TempDir(), Init: init}
		if err := fx.ValidateApp(bootstrap.Wiring(cfg), fx.Populate(&svc), fx.NopLogger); err != nil {
			t.Fatalf("Init=%v: %v", init, err)
		}
	}
}

// Module is sealed: a host's graph gets every service, and none of the ports, repositories or the
// guard behind them (Wiring, the CLI's graph, has them all).
func TestModuleExportsServicesOnly(t *testing.T) {
	cfg := bootstrap.Config{Root: t.TempDir(), Init: true}
	if err := fx.ValidateApp(bootstrap.Module(cfg), fx.Invoke(func(*application.CheckpointService, *application.PlanService,
		*application.CorrectionService, *application.HistoryService, *application.MaintenanceService, *application.ReadService,
		*application.AgentService) {
	}), fx.NopLogger); err != nil {
		t.Fatalf("a service is not exported: %v", err)
	}
	for what, invoke := range map[string]any{
		"the workspace lock":        func(port.Locker) {},
		"the shared core":           func(*application.Operations) {},
		"the journal":               func(port.Journal) {},
		"the checkpoint repository": func(checkpoint.Repository) {},
		"the operation log":         func(port.OperationLog) {},
		"the setup":                 func(*bootstrap.Setup) {},
	} {
		if err := fx.ValidateApp(bootstrap.Module(cfg), fx.Invoke(invoke), fx.NopLogger); err == nil || !strings.Contains(err.Error(), "missing type") {
			t.Errorf("Module exports %s: %v", what, err)
		}
		if err := fx.ValidateApp(bootstrap.Wiring(cfg), fx.Invoke(invoke), fx.NopLogger); err != nil {
			t.Errorf("Wiring lacks %s: %v", what, err)
		}
	}
}

// ValidateApp does bite: asking the graph for something nobody provides fails.
func TestModuleValidationCatchesMissingProvider(t *testing.T) {
	type unprovided struct{}
	err := fx.ValidateApp(bootstrap.Module(bootstrap.Config{Root: t.TempDir()}),
		fx.Invoke(func(*unprovided) {}), fx.NopLogger)
	if err == nil || !strings.Contains(err.Error(), "missing type") {
		t.Fatalf("ValidateApp with a missing provider: %v", err)
	}
	// Each adapter module alone lacks what the others provide.
	err = fx.ValidateApp(bootstrap.ApplicationModule, fx.Invoke(func(*application.CheckpointService) {}), fx.NopLogger)
	if err == nil {
		t.Fatal("the application module validated without its adapters")
	}
}

func TestOpenNotInitialised(t *testing.T) {
	dir := t.TempDir()
	_, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: dir})
	if !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "run `plan init`") {
		t.Fatalf("err = %v, want not found with the init hint", err)
	}
	var fe *fault.Error
	if !errors.As(err, &fe) || err != error(fe) {
		t.Errorf("the error is still wrapped by fx: %q", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".plan")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open without Init created .plan/: %v", err)
	}
}

func TestOpenMissingOrFileRoot(t *testing.T) {
	dir := t.TempDir()
	if _, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: filepath.Join(dir, "nope"), Init: true}); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("missing directory: %v", err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, init := range []bool{false, true} {
		_, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: file, Init: init})
		if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "is not a directory") {
			t.Errorf("Init=%v on a file: %v", init, err)
		}
	}
}

// openWorkspace initialises a workspace holding one file and returns the started app.
func openWorkspace(t *testing.T) (*bootstrap.App, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	app, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: dir, Init: true})
	if err != nil {
		t.Fatal(err)
	}
	return app, dir
}

func closeApp(t *testing.T, app *bootstrap.App) {
	t.Helper()
	if err := app.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func TestOpenPacksWithoutDatabase(t *testing.T) {
	app, dir := openWorkspace(t)
	if _, err := app.Services.Checkpoints.Create(context.Background(), application.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	db := app.Services.Layout.Database()
	closeApp(t, app)
	if err := os.Remove(db); err != nil {
		t.Fatal(err)
	}

	// Re-initialising would silently orphan every stored object: refused.
	_, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: dir, Init: true})
	if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "plan doctor") {
		t.Errorf("Init over packs without a database: %v", err)
	}
	_, err = bootstrap.Open(context.Background(), bootstrap.Config{Root: dir})
	if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "is missing but the store is not empty") {
		t.Errorf("Open of packs without a database: %v", err)
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Open created a database: %v", err)
	}
}

func TestOpenDamagedDatabase(t *testing.T) {
	app, dir := openWorkspace(t)
	db := app.Services.Layout.Database()
	closeApp(t, app)
	for _, suffix := range []string{"-wal", "-shm"} {
		_ = os.Remove(db + suffix)
	}
	if err := os.WriteFile(db, []byte(strings.Repeat("garbage, not SQLite ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: dir})
	if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "plan doctor") {
		t.Errorf("Open with a damaged database: %v", err)
	}
}

func TestOpenIsIdempotentAndCloseReleases(t *testing.T) {
	app, dir := openWorkspace(t)
	cp, err := app.Services.Checkpoints.Create(context.Background(), application.CreateRequest{Note: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	closeApp(t, app)
	// The database is closed by the OnStop hook: using it now fails.
	if _, err := app.Services.Checkpoints.List(context.Background()); err == nil {
		t.Error("the database still answers after Close")
	}

	for _, init := range []bool{true, false} {
		again, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: dir, Init: init})
		if err != nil {
			t.Fatalf("reopen (Init=%v): %v", init, err)
		}
		got, err := again.Services.Checkpoints.Resolve(context.Background(), string(cp.ID()))
		if err != nil || got.Note() != "kept" {
			t.Errorf("reopen (Init=%v): %v %v", init, got, err)
		}
		closeApp(t, again)
	}
}

// A host program embeds plan by adding the module to its own graph (like examples/embed).
func TestHostEmbedsModule(t *testing.T) {
	dir := t.TempDir()
	type host struct {
		plans *application.PlanService
		cps   *application.CheckpointService
	}
	var h *host
	var svc struct {
		fx.In
		Plans       *application.PlanService
		Checkpoints *application.CheckpointService
	}
	app := fx.New(
		bootstrap.Module(bootstrap.Config{Root: dir, Init: true}),
		fx.Provide(func(p *application.PlanService, c *application.CheckpointService) *host {
			return &host{plans: p, cps: c}
		}),
		fx.Populate(&h, &svc),
		fx.NopLogger,
	)
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = app.Stop(ctx)
		}
	}()
	if h.plans != svc.Plans || h.cps != svc.Checkpoints {
		t.Fatal("the host and the Services struct do not share one graph")
	}
	res, err := h.plans.Exec(ctx, application.ExecRequest{ID: "write", Command: "echo hi > hi.txt"})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := res.Plan.Decision("write")
	if d.Status() != plan.Succeeded || latestOf(d).CheckpointID == "" {
		t.Errorf("decision %s, checkpoint %q", d.Status(), latestOf(d).CheckpointID)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "hi.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("hi.txt = %q, %v", b, err)
	}
	// The rollback hook is wired even though the host asked only for plans and checkpoints.
	if _, err := h.cps.Rollback(ctx, application.RollbackRequest{Ref: string(latestOf(d).CheckpointID)}); err != nil {
		t.Fatal(err)
	}
	st, err := svc.Plans.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := st.Decision("write"); w.Status() != plan.Reverted {
		t.Errorf("after the rollback the decision is %s, want reverted", w.Status())
	}
	stopped = true
	if err := app.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	// The OnStop hooks closed the database.
	if _, err := svc.Checkpoints.List(ctx); err == nil {
		t.Error("the database still answers after Stop")
	}
}

func TestOpenCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	if _, err := bootstrap.Open(ctx, bootstrap.Config{Root: dir, Init: true}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Open with a cancelled context: %v", err)
	}
}

// openFiles lists this process's open file descriptors that point under dir.
func openFiles(t *testing.T, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	var out []string
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(target, dir+"/") {
			out = append(out, target)
		}
	}
	return out
}

func TestCloseReleasesEveryFile(t *testing.T) {
	app, dir := openWorkspace(t)
	if _, err := app.Services.Checkpoints.Create(context.Background(), application.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	history := app.Services.Layout.Home()
	if len(openFiles(t, history)) == 0 {
		t.Fatal("an open app holds no file: the check below would prove nothing")
	}
	closeApp(t, app)
	if open := append(openFiles(t, dir), openFiles(t, history)...); len(open) != 0 {
		t.Errorf("files still open after Close: %q", open)
	}
}

// A failed Open returns no App, so nobody can close what it opened: Open itself must.
func TestFailedOpenReleasesEveryFile(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	if _, err := bootstrap.Open(ctx, bootstrap.Config{Root: dir, Init: true}); err == nil {
		t.Fatal("Open with a cancelled context succeeded")
	}
	if open := openFiles(t, dir); len(open) != 0 {
		t.Errorf("cancelled Open left files open: %q", open)
	}

	dir = t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".plan", "objects"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".plan", "objects", "packs"), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The state in .plan/ (as before wave 4), its store broken there.
	if _, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: dir, Init: true, Store: bootstrap.InWorkspace}); err == nil {
		t.Fatal("Open with a broken store succeeded")
	}
	if open := openFiles(t, dir); len(open) != 0 {
		t.Errorf("Open that failed to build the store left files open: %q", open)
	}
}

// latestOf is d's newest attempt, zero when it never ran.
func latestOf(d *plan.Decision) plan.Attempt {
	a, _ := d.Latest()
	return a
}

// objectsOf is the object store directory of the workspace at root, wherever its state is.
func objectsOf(t testing.TB, root string) string {
	t.Helper()
	l, err := bootstrap.LayoutAt(root)
	if err != nil {
		t.Fatal(err)
	}
	return l.Objects()
}

// ownDataDir is an environment whose data directory is the test's own: for a test that makes a
// workspace with a fixed ID (two such in one data directory would claim one ID).
func ownDataDir(t testing.TB) func(string) string {
	dir := filepath.Join(t.TempDir(), "data")
	return func(k string) string {
		if k == "PLAN_DATA_DIR" {
			return dir
		}
		return os.Getenv(k)
	}
}
