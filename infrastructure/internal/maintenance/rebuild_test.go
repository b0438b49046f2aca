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
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

var rebuildTime = time.Date(2026, 11, 23, 10, 11, 12, 0, time.UTC)

// checkpointIDs lists the workspace's checkpoints through the application, as a user would.
func checkpointIDs(t *testing.T, l workspace.Layout) []string {
	t.Helper()
	ctx := context.Background()
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: l.Root})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Close() }()
	cps, err := app.Services.Checkpoints.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cps {
		ids = append(ids, string(c.ID()))
	}
	return ids
}

// Each way a database goes bad is rebuilt; a damaged file is kept aside byte for byte, never
// deleted; a healthy database is left alone.
func TestRebuild(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, l workspace.Layout)
		why     string
		aside   bool
		rebuilt bool
	}{
		{"healthy", func(*testing.T, workspace.Layout) {}, "", false, false},
		{"missing", func(t *testing.T, l workspace.Layout) {
			for _, s := range []string{"", "-wal", "-shm"} {
				_ = os.Remove(l.Database() + s)
			}
		}, "missing", false, true},
		{"zero bytes", func(t *testing.T, l workspace.Layout) {
			if err := os.Truncate(l.Database(), 0); err != nil {
				t.Fatal(err)
			}
		}, "empty, incomplete or damaged", true, true},
		{"not a database", func(t *testing.T, l workspace.Layout) {
			if err := os.WriteFile(l.Database(), []byte(strings.Repeat("junk\x00", 999)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "empty, incomplete or damaged", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := workspaceWithCheckpoint(t)
			want := checkpointIDs(t, l)
			tc.damage(t, l)
			var before []byte
			if tc.aside {
				before, _ = os.ReadFile(l.Database())
			}
			res, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime)
			if err != nil {
				t.Fatal(err)
			}
			if res.Rebuilt != tc.rebuilt || !strings.HasPrefix(res.Why, tc.why) {
				t.Fatalf("result %+v", res)
			}
			if tc.aside {
				wantAside := l.Database() + ".corrupt-20261123T101112Z"
				if res.KeptAside != wantAside {
					t.Fatalf("kept aside as %q, want %q", res.KeptAside, wantAside)
				}
				if got, err := os.ReadFile(wantAside); err != nil || string(got) != string(before) {
					t.Fatalf("the damaged file was not kept as it was: %v", err)
				}
			} else if res.KeptAside != "" {
				t.Fatalf("kept aside %q", res.KeptAside)
			}
			if res.Rebuilt && (res.Checkpoints != len(want) || res.Records == 0) {
				t.Fatalf("result %+v, want %d checkpoints", res, len(want))
			}
			if got := checkpointIDs(t, l); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("checkpoints %v, want %v", got, want)
			}
			if _, err := os.Stat(l.Database() + ".rebuild"); !os.IsNotExist(err) {
				t.Fatalf("temporary database left: %v", err)
			}
		})
	}
}

// A database restored from an older backup is healthy but behind the store: the rebuild sees it
// and brings back what came after the backup.
func TestRebuildADatabaseBehindTheStore(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	backup := filepath.Join(t.TempDir(), "plan.db")
	copyFile(t, l.Database(), backup)
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: l.Root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Services.Checkpoints.Create(ctx, application.CreateRequest{Note: "after the backup"}); err != nil {
		t.Fatal(err)
	}
	_ = app.Close()
	want := checkpointIDs(t, l)
	for _, s := range []string{"-wal", "-shm"} {
		_ = os.Remove(l.Database() + s)
	}
	copyFile(t, backup, l.Database())
	// Every command refuses it, gc first: it would delete what only the newer records reference.
	if app, err := bootstrap.Open(ctx, bootstrap.Config{Root: l.Root}); !errors.Is(err, fault.ErrIntegrity) ||
		!strings.Contains(err.Error(), "plan doctor --rebuild") {
		if err == nil {
			_ = app.Close()
		}
		t.Fatalf("a command on the restored backup: %v; want an integrity refusal naming plan doctor --rebuild", err)
	}
	res, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime)
	if err != nil || !res.Rebuilt || !strings.HasPrefix(res.Why, "behind the store") || res.KeptAside == "" {
		t.Fatalf("%+v, %v", res, err)
	}
	if got := checkpointIDs(t, l); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("checkpoints %v, want %v", got, want)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A store from before records were kept cannot rebuild a lost database: the error says so
// instead of making an empty database that would let gc delete everything.
func TestRebuildWithoutRecords(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	if err := os.RemoveAll(filepath.Join(l.Objects(), "records")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(l.Database()); err != nil {
		t.Fatal(err)
	}
	_, err := maintenance.Rebuild(context.Background(), maintenance.PrivateTarget(l), rebuildTime)
	if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "from a backup") {
		t.Fatalf("%v", err)
	}
	if _, err := os.Stat(l.Database()); !os.IsNotExist(err) {
		t.Fatal("a database was created")
	}
	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false)
	if f := finding(t, r, "database"); !strings.Contains(f.Repair, "from a backup") {
		t.Fatalf("%+v", f)
	}
}

// A damaged record is reported by doctor, and by verify --read-data through the store health;
// doctor --repair replaces it with a baseline written from the healthy database, after which a
// rebuild gives the same history.
func TestDamagedRecordIsRepaired(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	want := checkpointIDs(t, l)
	recs, err := objectstore.OpenRecords(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	names, _ := recs.Committed()
	p := filepath.Join(recs.Dir(), names[0])
	b, _ := os.ReadFile(p)
	b[len(b)-3] ^= 1
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := objectstore.Open(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	problems, err := maintenance.NewHealth(store, recs).ScanStore()
	_ = store.Close()
	if err != nil || len(problems) != 1 || !strings.Contains(problems[0].Path, names[0]) {
		t.Fatalf("scan: %+v, %v", problems, err)
	}
	r := maintenance.Doctor(ctx, maintenance.PrivateTarget(l), false)
	if f := finding(t, r, "records"); f.OK || !strings.Contains(f.Problem, names[0]) || !strings.Contains(f.Repair, "doctor --repair") {
		t.Fatalf("%+v", f)
	}
	r = maintenance.Doctor(ctx, maintenance.PrivateTarget(l), true)
	if f := finding(t, r, "records"); !f.OK || !f.Repaired {
		t.Fatalf("%+v", f)
	}
	if !r.OK {
		t.Fatalf("after repair: %+v", r.Findings)
	}
	if err := os.Remove(l.Database()); err != nil {
		t.Fatal(err)
	}
	if _, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime); err != nil {
		t.Fatal(err)
	}
	if got := checkpointIDs(t, l); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("checkpoints %v, want %v", got, want)
	}
}

// The growth per day counts every stored byte by the day it was written: packs (a decision's
// result snapshot as much as a checkpoint) and records.
func TestWrittenPerDay(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	store, err := objectstore.Open(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = store.Close() }()
	recs, err := objectstore.OpenRecords(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	old := time.Date(2024, 5, 6, 23, 59, 0, 0, time.UTC)
	var want int64
	for _, pattern := range []string{filepath.Join(l.Objects(), "packs", "*"), filepath.Join(recs.Dir(), "*")} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			fi, err := os.Stat(f)
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			if err := os.Chtimes(f, old, old); err != nil {
				t.Fatal(err)
			}
			want += fi.Size()
		}
	}
	if want == 0 {
		t.Fatal("nothing stored")
	}
	got, err := maintenance.NewHealth(store, recs).WrittenPerDay()
	if err != nil || len(got) != 1 || got["2024-05-06"] != want {
		t.Fatalf("%v, %v; want %d bytes on 2024-05-06", got, err, want)
	}
}

// A store whose packs are gone while the database still lists checkpoints is a problem doctor
// names, not "ok store": those checkpoints cannot be restored.
func TestDoctorSeesCheckpointsWithoutData(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	if err := os.RemoveAll(filepath.Join(l.Objects(), "packs")); err != nil {
		t.Fatal(err)
	}
	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false)
	f := finding(t, r, "checkpoints")
	if r.OK || f.OK || !strings.Contains(f.Problem, "1 of 1 checkpoints have no data") || !strings.Contains(f.Repair, "backup") {
		t.Fatalf("%+v", r.Findings)
	}
}

// A store that cannot be opened for a reason other than an index gets advice that fits it.
func TestDoctorStoreAdviceFitsTheCause(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	packs := filepath.Join(l.Objects(), "packs")
	if err := os.RemoveAll(packs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(packs, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := finding(t, maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false), "store")
	if f.OK || strings.Contains(f.Repair, ".idx") || !strings.Contains(f.Repair, "directory") {
		t.Fatalf("%+v", f)
	}
}
