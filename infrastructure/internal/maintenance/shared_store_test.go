package maintenance_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// onStore makes a workspace on the file:// store in dir, with one checkpoint of content, and
// returns it open.
func onStore(t *testing.T, dir, content string) *bootstrap.App {
	t.Helper()
	ctx := context.Background()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, Store: "file://" + dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	if _, err := app.Services.Checkpoints.Create(ctx, application.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	return app
}

// damageRecords overwrites every committed record of workspace id in the store in dir.
func damageRecords(t *testing.T, dir, id string) {
	t.Helper()
	records := filepath.Join(dir, "records", id)
	des, err := os.ReadDir(records)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, de := range des {
		if de.Type().IsRegular() {
			p := filepath.Join(records, de.Name())
			_ = os.Chmod(p, 0o600)
			if err := os.WriteFile(p, []byte("damaged"), 0o600); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatalf("workspace %s has no committed record to damage", id)
	}
}

// A shared store's gc reads every workspace's records to know what is live: a stray file among
// them is ignored, but records it cannot read stop it before it deletes anything.
func TestSharedGCReadsEveryWorkspacesRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mine := onStore(t, dir, "mine")
	theirs := onStore(t, dir, "theirs")
	if err := os.WriteFile(filepath.Join(dir, "records", "README"), []byte("not a workspace"), 0o600); err != nil {
		t.Fatal(err)
	}
	zero := new(time.Duration)
	if _, err := mine.Services.Maintenance.GC(ctx, port.GCRequest{Grace: zero}); err != nil {
		t.Fatalf("gc with a stray file among the records: %v", err)
	}
	packs := func() int {
		des, err := os.ReadDir(filepath.Join(dir, "packs"))
		if err != nil {
			t.Fatal(err)
		}
		return len(des)
	}
	before := packs()
	damageRecords(t, dir, theirs.WorkspaceID())
	// The summary the first gc wrote still proves what those records held (their names are their
	// hashes); without it, the records themselves must be read.
	summaries, err := filepath.Glob(filepath.Join(dir, "gc", "summary-*.json"))
	if err != nil || len(summaries) != 1 {
		t.Fatalf("the first gc left %d summaries (%v), want 1", len(summaries), err)
	}
	if err := os.Remove(summaries[0]); err != nil {
		t.Fatal(err)
	}
	// Were gc to skip them, what only their checkpoints use would look dead.
	_, err = mine.Services.Maintenance.GC(ctx, port.GCRequest{Grace: zero})
	if err == nil || !strings.Contains(err.Error(), "nothing was deleted") || !strings.Contains(err.Error(), theirs.WorkspaceID()) {
		t.Fatalf("gc with another workspace's records damaged: %v", err)
	}
	if got := packs(); got != before {
		t.Errorf("a refused gc changed the packs: %d files, %d before", got, before)
	}
}

// The store's health checks say when they cannot read what they check: never a clean bill for a
// store they could not look at.
func TestSharedStoreHealthWhenItCannotRead(t *testing.T) {
	dir := t.TempDir()
	app := onStore(t, dir, "content")
	id := app.WorkspaceID()
	st, err := objectstore.OpenBackend(objectstore.NewDir(dir, true), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	h := maintenance.NewHealth(st, objectstore.NewRecords(st.Backend(), objectstore.WorkspaceRecords(id)))
	if problems, err := h.ScanStore(); err != nil || len(problems) != 0 {
		t.Fatalf("a healthy store: %v, %v", problems, err)
	}
	if days, err := h.WrittenPerDay(); err != nil || len(days) == 0 {
		t.Fatalf("what a healthy store wrote: %v, %v", days, err)
	}

	records := filepath.Join(dir, "records", id)
	if err := os.Rename(records, records+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(records, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ScanStore(); err == nil {
		t.Error("the scan of a store whose records cannot be listed passed")
	}
	if _, err := h.WrittenPerDay(); err == nil {
		t.Error("what a store whose records cannot be listed wrote was counted")
	}
	r := maintenance.Doctor(context.Background(), sharedTarget(t, app), false)
	if r.OK || len(r.Findings) == 0 || r.Findings[0].Check != "records" || r.Findings[0].OK {
		t.Errorf("doctor of a workspace whose records cannot be listed: %+v", r)
	}

	if err := os.Rename(filepath.Join(dir, "packs"), filepath.Join(dir, "packs.moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "packs"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ScanStore(); err == nil {
		t.Error("the scan of a store whose packs cannot be listed passed")
	}
	if _, err := h.WrittenPerDay(); err == nil {
		t.Error("what a store whose packs cannot be listed wrote was counted")
	}
}

// sharedTarget is doctor's view of the workspace app opened.
func sharedTarget(t *testing.T, app *bootstrap.App) maintenance.Target {
	t.Helper()
	s, err := bootstrap.Inspect(app.Services.Layout.Root, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s.Target()
}

// A workspace whose database is elsewhere (sqlite:///path): doctor finds it missing there, and
// the rebuild makes it there again.
func TestADatabaseElsewhere(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dbPath := filepath.Join(t.TempDir(), "meta.db")
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, DB: "sqlite://" + dbPath})
	if err != nil {
		t.Fatal(err)
	}
	cp, err := app.Services.Checkpoints.Create(ctx, application.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := bootstrap.Inspect(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := maintenance.Doctor(ctx, s.Target(), false); !r.OK {
		t.Fatalf("doctor of a healthy workspace: %+v", r)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(dbPath + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	r := maintenance.Doctor(ctx, s.Target(), false)
	if r.OK || r.Findings[0].Check != "database" || !strings.Contains(r.Findings[0].Problem, dbPath+" is missing") {
		t.Fatalf("doctor of a workspace whose database is gone: %+v", r)
	}
	res, err := maintenance.Rebuild(ctx, s.Target(), rebuildTime)
	if err != nil || !res.Rebuilt || res.Checkpoints != 1 {
		t.Fatalf("rebuild: %+v, %v", res, err)
	}
	if _, err := os.Stat(dbPath); err != nil {
		t.Fatalf("the database was not made again where it was: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, ".plan", "plan.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the rebuild made a database in .plan too: %v", err)
	}
	if ids := checkpointIDs(t, s.Layout); len(ids) != 1 || ids[0] != string(cp.ID()) {
		t.Errorf("checkpoints after the rebuild: %v, want %s", ids, cp.ID())
	}
	if res, err := maintenance.Rebuild(ctx, s.Target(), rebuildTime); err != nil || res.Rebuilt {
		t.Errorf("a second rebuild of the rebuilt database: %+v, %v", res, err)
	}
}
