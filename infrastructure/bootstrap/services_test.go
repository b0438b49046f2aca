package bootstrap_test

// Integration tests of the application services on the real adapters. They live here because the
// architecture test keeps application/ (tests included) free of infrastructure imports.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

func exec(t *testing.T, app *bootstrap.App, id, command string) *application.RunResult {
	t.Helper()
	res, err := app.Services.Plans.Exec(context.Background(), application.ExecRequest{ID: id, Command: command})
	if err != nil {
		t.Fatalf("exec %s: %v", id, err)
	}
	return &res
}

func reopen(t *testing.T, dir string) *bootstrap.App {
	t.Helper()
	app, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	return app
}

func TestMaintenanceOnRealAdapters(t *testing.T) {
	app, _ := openWorkspace(t)
	defer closeApp(t, app)
	ctx := context.Background()
	svc := app.Services
	first := exec(t, app, "one", "echo 1 > one.txt")
	res := exec(t, app, "two", "echo 2 > two.txt")
	manual, err := svc.Checkpoints.Create(ctx, application.CreateRequest{Note: "manual"})
	if err != nil {
		t.Fatal(err)
	}

	pr, err := svc.Maintenance.Prune(ctx, application.PruneRequest{Keep: 0, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	// Each exec's end (post_run) is no decision's start: prune may take it, like the manual one.
	if !slices.Equal(pr.Deleted, []checkpoint.ID{manual.ID(), res.End.ID(), first.End.ID()}) || len(pr.Kept) != 2 {
		t.Fatalf("dry run: %+v", pr)
	}
	two, _ := res.Plan.Decision("two")
	if why := pr.Reasons[latestOf(two).CheckpointID]; !strings.Contains(why, "live decision two (attempt 1)") {
		t.Errorf("reason for two's checkpoint: %q", why)
	}
	if _, err := svc.Maintenance.Prune(ctx, application.PruneRequest{Keep: -1}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("negative keep: %v", err)
	}
	if _, err := svc.Maintenance.Prune(ctx, application.PruneRequest{Keep: 0}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Checkpoints.Resolve(ctx, string(manual.ID())); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("the pruned checkpoint: %v", err)
	}

	gc, err := svc.Maintenance.GC(ctx, port.GCRequest{})
	if err != nil || gc.LiveObjects == 0 {
		t.Fatalf("gc: %+v %v", gc, err)
	}
	v, err := svc.Maintenance.Verify(ctx, "", true)
	if err != nil || v.CheckedCheckpoints != 2 || len(v.Problems) != 0 || v.CheckedObjects == 0 {
		t.Errorf("verify after gc: %+v %v", v, err)
	}
	st, err := svc.Maintenance.Stats(ctx)
	if err != nil || st.Checkpoints != 2 || st.SuccessRate != 1 || st.Store.Objects == 0 || len(st.GrowthPerDay) != 1 ||
		st.GrowthPerDay[0].Day != time.Now().UTC().Format(time.DateOnly) {
		t.Errorf("stats: %+v %v", st, err)
	}
}

// Damage to an object shared by two checkpoints is reported for both.
func TestVerifyAttributesDamageToEveryCheckpointOnRealStore(t *testing.T) {
	app, dir := openWorkspace(t)
	ctx := context.Background()
	packsDir := filepath.Join(app.Services.Layout.Objects(), "packs")
	first, err := app.Services.Checkpoints.Create(ctx, application.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	firstPacks, _ := filepath.Glob(filepath.Join(packsDir, "*.pack"))
	if err := os.WriteFile(filepath.Join(dir, "b.txt"), []byte("beta\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	second, err := app.Services.Checkpoints.Create(ctx, application.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	closeApp(t, app)
	if len(firstPacks) == 0 {
		t.Fatal("the first checkpoint wrote no pack")
	}
	// The first checkpoint's pack holds a.txt, which the second reuses.
	for _, p := range firstPacks {
		if err := os.Truncate(p, 16); err != nil {
			t.Fatal(err)
		}
	}

	app = reopen(t, dir)
	res, err := app.Services.Maintenance.Verify(ctx, "", false)
	if err != nil {
		t.Fatal(err)
	}
	damaged := map[checkpoint.ID]bool{}
	for _, p := range res.Problems {
		damaged[p.CheckpointID] = true
	}
	if !damaged[first.ID()] || !damaged[second.ID()] {
		t.Errorf("problems %+v: want both checkpoints named", res.Problems)
	}
	one, err := app.Services.Maintenance.Verify(ctx, string(second.ID()), false)
	if err != nil || one.CheckedCheckpoints != 1 || len(one.Problems) == 0 {
		t.Errorf("verify of the second alone: %+v %v", one, err)
	}
}

func TestPlanAndCorrectionErrorsOnRealAdapters(t *testing.T) {
	app, _ := openWorkspace(t)
	defer closeApp(t, app)
	ctx := context.Background()
	svc := app.Services
	if _, err := svc.Plans.Status(ctx); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("status before any plan: %v", err)
	}
	exec(t, app, "one", "echo out")
	rc, a, err := svc.Plans.Log(ctx, "one", 1)
	if err != nil || a.Number != 1 {
		t.Fatalf("log: %v", err)
	}
	_ = rc.Close()
	if _, _, err := svc.Plans.Log(ctx, "one", 2); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "has 1 attempts, not 2") {
		t.Errorf("attempt out of range: %v", err)
	}
	if _, err := svc.Corrections.Show(ctx, "zz"); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("malformed correction ref: %v", err)
	}
	if _, err := svc.Corrections.Show(ctx, "abcdef"); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown correction: %v", err)
	}
	for _, req := range []application.CorrectRequest{{DecisionID: "one", Reason: " "}, {DecisionID: "One!", Reason: "r"}} {
		if _, err := svc.Corrections.RevertDecisions(ctx, req); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%+v: %v", req, err)
		}
	}
	if _, err := svc.Corrections.RevertDecisions(ctx, application.CorrectRequest{DecisionID: "two", Reason: "r"}); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown decision: %v", err)
	}
}

// A correction left "reexecuting" by a killed process is closed as failed by the next command.
func TestStaleCorrectionClosedOnRealAdapters(t *testing.T) {
	app, dir := openWorkspace(t)
	ctx := context.Background()
	exec(t, app, "one", "echo 1 > one.txt")
	res, err := app.Services.Corrections.RevertDecisions(ctx, application.CorrectRequest{DecisionID: "one", Reason: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Correction.ID()
	closeApp(t, app)

	// What a process killed during re-execution leaves in the database.
	var repo correction.Repository
	fxApp := fx.New(bootstrap.Wiring(bootstrap.Config{Root: dir}), fx.Populate(&repo), fx.NopLogger)
	if err := fxApp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := repo.Update(ctx, id, func(c *correction.Correction) error { return c.StartReexecution() }); err != nil {
		t.Fatal(err)
	}
	if err := fxApp.Stop(ctx); err != nil {
		t.Fatal(err)
	}

	app = reopen(t, dir)
	if _, err := app.Services.Maintenance.RecoverIfIdle(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := app.Services.Corrections.Show(ctx, id)
	if err != nil || c.Status() != correction.Failed || c.FinishedAt().IsZero() {
		t.Errorf("stale correction after recovery: %v %v", c, err)
	}
}

// A host's checkpoint that its check refuses changed nothing, so `plan history` has no entry for
// it (it once had one, outcome "internal"); the one taken once the check passes is there.
func TestHostCheckpointRefusedByValidationIsNotInHistory(t *testing.T) {
	app, _ := openWorkspace(t)
	defer closeApp(t, app)
	ctx := context.Background()
	svc := app.Services
	_, err := svc.Checkpoints.Create(ctx, application.CreateRequest{Note: "checked", Check: &application.CheckRequest{Command: "exit 3"}})
	var nv *application.NotValidError
	if !errors.As(err, &nv) || nv.Validation.ExitCode == nil || *nv.Validation.ExitCode != 3 {
		t.Fatalf("create: %v, want a *NotValidError with exit code 3", err)
	}
	if cps, err := svc.Checkpoints.List(ctx); err != nil || len(cps) != 0 {
		t.Fatalf("checkpoints %v, %v: want none", cps, err)
	}
	ops, err := svc.History.List(ctx, 0, "")
	if err != nil || len(ops) != 0 {
		t.Fatalf("history %+v, %v: want no entry for the refused checkpoint", ops, err)
	}
	cp, err := svc.Checkpoints.Create(ctx, application.CreateRequest{Note: "checked", Check: &application.CheckRequest{Command: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	ops, err = svc.History.List(ctx, 0, "")
	if err != nil || len(ops) != 1 || ops[0].Kind != "checkpoint" || ops[0].Outcome != "ok" || !slices.Equal(ops[0].Checkpoints, []checkpoint.ID{cp.ID()}) {
		t.Errorf("history %+v, %v: want the one checkpoint", ops, err)
	}
}
