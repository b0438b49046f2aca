package maintenance_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/persistence"
	"github.com/planhq/plan/infrastructure/internal/workspace"
	"github.com/planhq/plan/tests/testkit/servertest"
)

// addCheckpoint makes one more checkpoint through the application.
func addCheckpoint(t *testing.T, l workspace.Layout, note string) {
	t.Helper()
	ctx := context.Background()
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: l.Root})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Close() }()
	if _, err := app.Services.Checkpoints.Create(ctx, application.CreateRequest{Note: note}); err != nil {
		t.Fatal(err)
	}
}

// restore puts the SQLite file backup back in place of the workspace's database.
func restore(t *testing.T, l workspace.Layout, backup string) {
	t.Helper()
	for _, s := range []string{"-wal", "-shm"} {
		_ = os.Remove(l.Database() + s)
	}
	copyFile(t, backup, l.Database())
}

// A database restored from an older backup stays behind whatever it writes next: the write an
// older plan let through (numbered after the store's newest record) no longer makes doctor call it
// healthy, nor the rebuild leave it alone. What it lacks is compared by name.
func TestDoctorSeesABackupAWriteWouldHaveMasked(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	backup := filepath.Join(t.TempDir(), "plan.db")
	copyFile(t, l.Database(), backup)
	addCheckpoint(t, l, "only the records know this one")
	want := checkpointIDs(t, l)
	restore(t, l, backup)
	// The masking write: a transaction numbered after every record.
	db, err := sql.Open("sqlite3", l.Database())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO ledger(workspace_id, seq, name, at) SELECT workspace_id, 1000, '00000000000003e8-masking', 0 FROM ledger LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	r := maintenance.Doctor(ctx, maintenance.PrivateTarget(l), false)
	f := finding(t, r, "database")
	if r.OK || f.OK || !strings.Contains(f.Problem, "behind the store: it has not seen 1 recorded transactions") ||
		!strings.Contains(f.Repair, "plan doctor --rebuild") {
		t.Fatalf("database finding %+v", f)
	}
	res, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime)
	if err != nil || !res.Rebuilt || !strings.HasPrefix(res.Why, "behind the store") || res.KeptAside == "" {
		t.Fatalf("rebuild %+v, %v", res, err)
	}
	if got := checkpointIDs(t, l); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("checkpoints %v, want %v", got, want)
	}
}

// The doctor lists at most the three newest transactions the database lacks, and counts the rest.
func TestDoctorNamesTheNewestTransactionsADatabaseLacks(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	backup := filepath.Join(t.TempDir(), "plan.db")
	copyFile(t, l.Database(), backup)
	for _, n := range []string{"b", "c", "d", "e"} {
		addCheckpoint(t, l, n)
	}
	restore(t, l, backup)
	f := finding(t, maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false), "database")
	if !strings.Contains(f.Problem, "not seen 4 recorded transactions") || !strings.Contains(f.Problem, "and 1 older") {
		t.Fatalf("database finding %+v", f)
	}
}

// A damaged page under schema_migrations (the version reads as anything) is damage the rebuild
// replaces, keeping the file aside, instead of "upgrade plan" or an internal error.
func TestRebuildADamagedSchemaPage(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	want := checkpointIDs(t, l)
	db, err := sql.Open("sqlite3", l.Database())
	if err != nil {
		t.Fatal(err)
	}
	var root, size int64
	if err := db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 'schema_migrations'`).Scan(&root); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	b, err := os.ReadFile(l.Database())
	if err != nil {
		t.Fatal(err)
	}
	for i := (root-1)*size + 100; i < root*size-100; i++ {
		b[i] = 0x7f // reads as schema version 127
	}
	if err := os.WriteFile(l.Database(), b, 0o600); err != nil {
		t.Fatal(err)
	}
	f := finding(t, maintenance.Doctor(ctx, maintenance.PrivateTarget(l), false), "database")
	if f.OK || !strings.Contains(f.Repair, "plan doctor --rebuild") {
		t.Fatalf("database finding %+v", f)
	}
	res, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime)
	if err != nil || !res.Rebuilt || res.KeptAside == "" {
		t.Fatalf("rebuild %+v, %v", res, err)
	}
	if got := checkpointIDs(t, l); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("checkpoints %v, want %v", got, want)
	}
}

// A transaction committed, after the rebuild listed the records, by a process that still holds
// the old database (the operation log a command writes once its lock is released) reaches the
// store, not the new file: the rebuild compares again and replays until it has seen every record.
func TestRebuildCatchesUpWithRecordsCommittedMeanwhile(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	rebuilt := filepath.Join(t.TempDir(), "plan.db")
	copyFile(t, l.Database(), rebuilt)
	addCheckpoint(t, l, "written to the old file") // the old database, and a record
	want := checkpointIDs(t, l)
	restore(t, l, rebuilt)
	tg := maintenance.PrivateTarget(l)
	recs, err := tg.OpenRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	undo := maintenance.SetCatchUpRounds(0)
	_, err = maintenance.CatchUp(ctx, tg, recs, persistence.RebuildReport{})
	undo()
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "plan doctor --rebuild") {
		t.Fatalf("no round left: %v", err)
	}
	rep, err := maintenance.CatchUp(ctx, tg, recs, persistence.RebuildReport{})
	if err != nil || rep.Checkpoints != len(want) {
		t.Fatalf("catch up: %+v, %v", rep, err)
	}
	if got := checkpointIDs(t, l); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("checkpoints %v, want %v", got, want)
	}
	if rep, err := maintenance.CatchUp(ctx, tg, recs, persistence.RebuildReport{Records: 7}); err != nil || rep.Records != 7 {
		t.Fatalf("nothing to catch up: %+v, %v", rep, err)
	}
	// A database it cannot open, records it cannot list: the error, nothing else.
	if err := os.Remove(l.Database()); err != nil {
		t.Fatal(err)
	}
	if _, err := maintenance.CatchUp(ctx, tg, recs, persistence.RebuildReport{}); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a missing database: %v", err)
	}
	if _, err := maintenance.Rebuild(ctx, tg, rebuildTime); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(recs.Dir()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recs.Dir(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := maintenance.CatchUp(ctx, tg, recs, persistence.RebuildReport{}); err == nil {
		t.Fatal("records that cannot be listed were compared")
	}
}

// A rebuild that cannot compare the new database with the records once more (their listing fails
// after the rebuild) reports that error.
func TestRebuildWhoseCatchUpCannotListTheRecords(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	if err := os.Remove(l.Database()); err != nil {
		t.Fatal(err)
	}
	// Listed by Rebuild, then by persistence.Rebuild; the third listing is catchUp's.
	res, err := maintenance.Rebuild(ctx, listingTarget(l, &listingBackend{dir: "records", okLists: 2}), rebuildTime)
	if !errors.Is(err, errListing) || res.Rebuilt {
		t.Fatalf("rebuild: %+v, %v", res, err)
	}
}

// A shared database rebuilt in place that cannot then be opened with its records (their pending
// listing fails after the rebuild) reports that error.
func TestRebuildInPlaceWhoseFinalOpenFails(t *testing.T) {
	ctx := context.Background()
	s, dsn := pgWorkspace(t)
	target := s.Target()
	_, store := pgRecordsDir(t, target)
	rel := objectstore.WorkspaceRecords(target.WorkspaceID)
	be := &listingBackend{Backend: objectstore.NewDir(store, true), dir: rel + "/pending", okLists: 1}
	target.OpenRecords = func(context.Context) (*objectstore.Records, error) {
		return objectstore.NewRecords(be, rel), nil
	}
	servertest.Exec(t, dsn, "DELETE FROM ledger WHERE workspace_id = '"+s.WorkspaceID+"'")
	if res, err := maintenance.Rebuild(ctx, target, rebuildTime); !errors.Is(err, errListing) || res.Rebuilt {
		t.Fatalf("rebuild in place: %+v, %v", res, err)
	}
}

// deleteCheckpointRow deletes a checkpoint's row by hand, leaving the ledger table whole.
func deleteCheckpointRow(t *testing.T, l workspace.Layout, id string) {
	t.Helper()
	db, err := sql.Open("sqlite3", l.Database())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if _, err := db.Exec(`DELETE FROM checkpoints WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
}

// A checkpoint row deleted by hand (the ledger table still names its transaction) is found from
// the records: doctor reports it, gc refuses to run from the database without it (it would delete
// the checkpoint's content), and the rebuild brings it back.
func TestACheckpointRowLostByHand(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	if err := os.WriteFile(filepath.Join(l.Root, "only-in-the-lost-one"), []byte("kept by its record alone"), 0o600); err != nil {
		t.Fatal(err)
	}
	addCheckpoint(t, l, "its row goes")
	want := checkpointIDs(t, l)
	deleteCheckpointRow(t, l, want[0])

	f := finding(t, maintenance.Doctor(ctx, maintenance.PrivateTarget(l), false), "database")
	if f.OK || !strings.Contains(f.Problem, "lacks 1 checkpoints the store's records hold (rows lost): "+want[0]) ||
		!strings.Contains(f.Repair, "plan doctor --rebuild") {
		t.Fatalf("database finding %+v", f)
	}
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: l.Root})
	if err != nil {
		t.Fatal(err)
	}
	zero := time.Duration(0)
	_, err = app.Services.Maintenance.GC(ctx, port.GCRequest{Grace: &zero})
	_ = app.Close()
	if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "nothing was deleted") || !strings.Contains(err.Error(), "plan doctor --rebuild") {
		t.Fatalf("gc from a database that lost a row: %v", err)
	}
	res, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime)
	if err != nil || !res.Rebuilt || !strings.Contains(res.Why, "lacks 1 checkpoints") {
		t.Fatalf("rebuild %+v, %v", res, err)
	}
	if got := checkpointIDs(t, l); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("checkpoints %v, want %v", got, want)
	}
	if f := finding(t, maintenance.Doctor(ctx, maintenance.PrivateTarget(l), false), "database"); !f.OK {
		t.Fatalf("after the rebuild: %+v", f)
	}
}

// Records that cannot be read again while the lost rows are looked for: doctor and rebuild report
// the error; gc refuses, deleting nothing.
func TestLostRowsWhenTheRecordsCannotBeRead(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	addCheckpoint(t, l, "its row goes")
	deleteCheckpointRow(t, l, checkpointIDs(t, l)[0])
	// Doctor lists the records once up front, then once per look for lost rows.
	for _, ok := range []int{1, 2} {
		f := finding(t, maintenance.Doctor(ctx, listingTarget(l, &listingBackend{dir: "records", okLists: ok}), false), "database")
		if f.OK || !strings.Contains(f.Problem, errListing.Error()) {
			t.Fatalf("%d listings: database finding %+v", ok, f)
		}
	}
	if _, err := maintenance.Rebuild(ctx, listingTarget(l, &listingBackend{dir: "records", okLists: 1}), rebuildTime); !errors.Is(err, errListing) {
		t.Fatalf("rebuild: %v", err)
	}
	st, err := objectstore.Open(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	be := &listingBackend{Backend: objectstore.NewDir(l.Objects(), false), dir: "records"}
	h := maintenance.NewHealth(st, objectstore.NewRecords(be, "records"))
	if _, err := h.Collect(nil, nil); !errors.Is(err, errListing) || !strings.Contains(err.Error(), "nothing was deleted") {
		t.Fatalf("gc: %v", err)
	}
	if _, err := h.Repack(nil, nil); !errors.Is(err, errListing) || !strings.Contains(err.Error(), "nothing was deleted") {
		t.Fatalf("gc --aggressive: %v", err)
	}
}

// Doctor names the first five lost checkpoints and counts the rest.
func TestLostRowsMessage(t *testing.T) {
	got := maintenance.LostRows([]string{"a", "b", "c", "d", "e", "f", "g"})
	if got != "the database lacks 7 checkpoints the store's records hold (rows lost): a, b, c, d, e, and 2 more" {
		t.Fatalf("%q", got)
	}
}
