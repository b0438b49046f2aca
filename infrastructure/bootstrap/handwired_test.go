package bootstrap_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/infrastructure/internal/archive"
	"github.com/planhq/plan/infrastructure/internal/executor"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/persistence"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

type clock struct{}

func (clock) Now() time.Time { return time.Now().UTC() }

// The whole graph can be wired by hand from exported constructors, without fx, and does the main
// job: a decision, a correction of it, the workspace restored.
func TestWireByHand(t *testing.T) {
	ctx := context.Background()
	l, err := workspace.NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	recs, err := objectstore.OpenRecords(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	db, err := persistence.Open(ctx, l.Database(), true, persistence.WithLedger(recs))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	store, err := objectstore.Open(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	scanner := workspace.NewScanner(l, store)
	restorer := workspace.NewRestorer(l, store, scanner)
	ops := application.NewOperations(application.OperationsParams{
		Checkpoints: persistence.NewCheckpoints(db), Plans: persistence.NewPlans(db), Corrections: persistence.NewCorrections(db),
		Snapshotter: scanner, Store: store,
		Locker: bootstrap.NewStoreLocker(workspace.NewLocker(l), store), Journal: workspace.NewJournal(l), Restorer: restorer, Tx: persistence.NewTransactor(db), History: persistence.NewHistory(db),
		Clock: clock{}, Git: workspace.NewGitHead(l), Metrics: persistence.NewMetrics(db),
		Executor: executor.NewShell(l), Archiver: archive.New(l, store), Trees: store,
	})
	plans, corrections := application.NewPlanService(ops), application.NewCorrectionService(ops)
	ms := application.NewMaintenanceService(application.MaintenanceParams{Ops: ops, Store: maintenance.NewHealth(store, recs), Settings: maintenance.NewSettings(l), Healer: maintenance.NewHealer(l, store)})

	if _, err := plans.Exec(ctx, application.ExecRequest{ID: "mk", Command: "echo wrong > out.txt"}); err != nil {
		t.Fatal(err)
	}
	res, err := corrections.RevertDecisions(ctx, application.CorrectRequest{DecisionID: "mk", Reason: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Correction.RevertedDecisions(); len(got) != 1 || got[0] != "mk" {
		t.Fatalf("reverted %v", got)
	}
	if v, err := ms.Verify(ctx, "", true); err != nil || len(v.Problems) != 0 {
		t.Fatalf("verify: %+v, %v", v, err)
	}
}

// A host that asks fx for the checkpoint service alone still gets all of recovery: a pending
// correction journal is handed to the correction finisher (which here finds its record damaged),
// not refused for want of one.
func TestOneServiceGetsAllOfRecovery(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	var cps *application.CheckpointService
	app := fx.New(bootstrap.Module(bootstrap.Config{Root: root, Init: true}), fx.Populate(&cps), fx.NopLogger)
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Stop(ctx) }()
	cp, err := cps.Create(ctx, application.CreateRequest{Note: "base"})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := bootstrap.LayoutAt(root)
	op := port.Operation{ID: "0123456789abcdef01234567", Kind: "correction", Direction: port.Forward,
		Source: cp.Root(), Target: cp.Root(), TargetCheckpoint: cp.ID(), BackupCheckpoint: cp.ID(),
		Detail: []byte(`"not a correction record"`)}
	if err := workspace.NewJournal(l).Write(op); err != nil {
		t.Fatal(err)
	}
	_, err = cps.Create(ctx, application.CreateRequest{Note: "after"})
	if strings.Contains(fmtErr(err), "no finisher") || !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "correction record is damaged") {
		t.Fatalf("recovery of a correction with only the checkpoint service asked for: %v", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Taking the lock refreshes the store; when the refresh fails (here: a damaged gc intent) the
// lock is released again and the command fails with the store's error, for Lock and TryLock.
func TestStoreLockerReleasesOnFailedRefresh(t *testing.T) {
	l, err := workspace.NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	store, err := objectstore.Open(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	lock := bootstrap.NewStoreLocker(workspace.NewLocker(l), store)
	unlock, err := lock.Lock(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.Objects(), "gc-pending"), []byte("junk\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Lock(context.Background(), "test"); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("Lock with a damaged store: %v", err)
	}
	if _, ok, err := lock.TryLock("test"); ok || !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("TryLock with a damaged store: %v, %v", ok, err)
	}
	// Released each time: the plain lock is free.
	u, ok, err := workspace.NewLocker(l).TryLock("check")
	if err != nil || !ok {
		t.Fatalf("the lock was left held: %v, %v", ok, err)
	}
	_ = u()
}

// The home directory itself is refused as a new workspace unless the user insists; a directory
// below home is fine, and an existing workspace there keeps working. (The file system root takes
// the same path; workspace's TestDangerous covers it without depending on what the machine's own
// root holds.)
func TestDangerousRootsAreRefused(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	ctx := context.Background()
	_, err := bootstrap.Open(ctx, bootstrap.Config{Root: home, Init: true})
	if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "--force-root") {
		t.Fatalf("%s: %v", home, err)
	}
	if _, err := os.Stat(filepath.Join(home, ".plan")); err == nil {
		t.Fatal("a refused init created .plan")
	}
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: home, Init: true, AllowDangerousRoot: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = app.Close()
	if b, err := os.ReadFile(filepath.Join(home, ".plan", ".gitignore")); err != nil || !strings.Contains(string(b), "*") {
		t.Fatalf(".plan/.gitignore: %q, %v", b, err)
	}
	app, err = bootstrap.Open(ctx, bootstrap.Config{Root: home, Init: true})
	if err != nil {
		t.Fatalf("an existing workspace at home needs no --force-root again: %v", err)
	}
	_ = app.Close()
	sub := filepath.Join(home, "project")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	app, err = bootstrap.Open(ctx, bootstrap.Config{Root: sub, Init: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = app.Close()
}

// A .plan that is a symlink (or a file) is refused for every command: writes would land elsewhere.
func TestStateDirMustBeADirectory(t *testing.T) {
	root := t.TempDir()
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(root, ".plan")); err != nil {
		t.Fatal(err)
	}
	for _, init := range []bool{true, false} {
		_, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: root, Init: init})
		if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("init=%v: %v", init, err)
		}
	}
	if des, _ := os.ReadDir(elsewhere); len(des) != 0 {
		t.Fatal("plan wrote through the .plan symlink")
	}
}
