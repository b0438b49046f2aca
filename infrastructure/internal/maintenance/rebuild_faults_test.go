package maintenance_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/workspace"
	"github.com/planhq/plan/tests/testkit"
	"github.com/planhq/plan/tests/testkit/servertest"
)

// damageRecord flips a byte of the workspace's first committed record and returns its name.
func damageRecord(t *testing.T, l workspace.Layout) (name string, damaged []byte) {
	t.Helper()
	recs, err := objectstore.OpenRecords(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	names, err := recs.Committed()
	if err != nil || len(names) == 0 {
		t.Fatalf("records %v: %v", names, err)
	}
	p := filepath.Join(recs.Dir(), names[0])
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return names[0], b
}

func unchanged(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s changed or went away: %v", path, err)
	}
}

// A damaged record stops a rebuild with an integrity error naming it; the unusable database is
// left where it was, byte for byte, and no half-built database is left anywhere.
func TestRebuildStopsAtADamagedRecord(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	name, _ := damageRecord(t, l)
	if err := os.Truncate(l.Database(), 0); err != nil {
		t.Fatal(err)
	}
	_, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime)
	if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), name) {
		t.Fatalf("rebuild past a damaged record: %v", err)
	}
	unchanged(t, l.Database(), nil)
	for _, p := range []string{l.Database() + ".rebuild", l.Database() + ".corrupt-20261123T101112Z"} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: %v", p, err)
		}
	}
}

// What an earlier rebuild a crash cut short left (plan.db.rebuild and its -wal) is thrown away and
// the rebuild starts over; a stray -wal beside a missing database belongs to nothing and goes too.
func TestRebuildStartsOverAfterACrash(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	want := checkpointIDs(t, l)
	for _, s := range []string{"", "-wal", "-shm"} {
		_ = os.Remove(l.Database() + s)
	}
	for _, p := range []string{l.Database() + ".rebuild", l.Database() + ".rebuild-wal", l.Database() + "-wal"} {
		if err := os.WriteFile(p, []byte("half built"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	res, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime)
	if err != nil || !res.Rebuilt || res.Why != "missing" || res.KeptAside != "" {
		t.Fatalf("%+v, %v", res, err)
	}
	if got := checkpointIDs(t, l); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("checkpoints %v, want %v", got, want)
	}
	for _, p := range []string{l.Database() + ".rebuild", l.Database() + ".rebuild-wal"} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: %v", p, err)
		}
	}
}

// A leftover plan.db.rebuild that cannot be removed (a directory with something in it) stops the
// rebuild before anything is moved: the unusable database stays where it was.
func TestRebuildLeftoverCannotBeRemoved(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	if err := os.WriteFile(l.Database(), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	tmp := l.Database() + ".rebuild"
	if err := os.MkdirAll(filepath.Join(tmp, "keep"), 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime); err == nil {
		t.Fatal("rebuild went on")
	}
	unchanged(t, l.Database(), []byte("junk"))
	if _, err := os.Stat(filepath.Join(tmp, "keep")); err != nil {
		t.Fatalf("the leftover's content went away: %v", err)
	}
}

// A rebuild needs the workspace lock and the record directory; without either it changes nothing.
func TestRebuildPreconditions(t *testing.T) {
	ctx := context.Background()
	t.Run("lock held", func(t *testing.T) {
		l := workspaceWithCheckpoint(t)
		_ = os.Remove(l.Database())
		unlock, err := workspace.NewLocker(l).Lock(ctx, "a test holding the lock")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = unlock() }()
		if _, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime); err == nil || !strings.Contains(err.Error(), "a test holding the lock") {
			t.Fatalf("rebuild under another's lock: %v", err)
		}
		if _, err := os.Lstat(l.Database()); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a database was made: %v", err)
		}
	})
	t.Run("records is a file", func(t *testing.T) {
		l := workspaceWithCheckpoint(t)
		records := filepath.Join(l.Objects(), "records")
		if err := os.RemoveAll(records); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(records, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(l.Database(), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime); err == nil {
			t.Fatal("rebuilt without records")
		}
		unchanged(t, l.Database(), nil)
		r := maintenance.Doctor(ctx, maintenance.PrivateTarget(l), false)
		if f := finding(t, r, "records"); f.OK || !strings.Contains(f.Problem, records) {
			t.Fatalf("%+v", r.Findings)
		}
	})
}

// When .plan cannot be written, an unopenable database is not called damaged: the rebuild refuses
// (it could not keep the file aside) and doctor advises making the directory writable.
func TestRebuildAndDoctorInAReadOnlyState(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	for _, s := range []string{"-wal", "-shm"} {
		_ = os.Remove(l.Database() + s)
	}
	if err := os.Truncate(l.Database(), 0); err != nil {
		t.Fatal(err)
	}
	testkit.Immutable(t, l.State())
	if _, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "writable") {
		t.Fatalf("rebuild in a read-only state: %v", err)
	}
	f := finding(t, maintenance.Doctor(ctx, maintenance.PrivateTarget(l), false), "database")
	if f.OK || !strings.Contains(f.Repair, "chattr -i") || !strings.Contains(f.Repair, "may be fine") {
		t.Fatalf("%+v", f)
	}
	unchanged(t, l.Database(), nil)
}

// When the unusable database cannot be moved aside (its name is taken by a directory here), the
// rebuild stops: the old file stays where it was, byte for byte, and what holds the name is not
// touched either.
func TestRebuildCannotKeepTheDatabaseAside(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	for _, s := range []string{"-wal", "-shm"} {
		_ = os.Remove(l.Database() + s)
	}
	if err := os.WriteFile(l.Database(), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	aside := l.Database() + ".corrupt-20261123T101112Z"
	if err := os.MkdirAll(filepath.Join(aside, "keep"), 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime); err == nil || !strings.Contains(err.Error(), "aside") {
		t.Fatalf("rebuild: %v", err)
	}
	unchanged(t, l.Database(), []byte("junk"))
	if _, err := os.Stat(filepath.Join(aside, "keep")); err != nil {
		t.Fatalf("what held the name: %v", err)
	}
	// Once the name is free, the rebuild runs again from the start and succeeds.
	if err := os.RemoveAll(aside); err != nil {
		t.Fatal(err)
	}
	res, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime)
	if err != nil || !res.Rebuilt || res.KeptAside != aside || res.Checkpoints != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	unchanged(t, aside, []byte("junk"))
}

// pgRecordsDir is where the shared store of target keeps the workspace's records, and the store's
// directory.
func pgRecordsDir(t *testing.T, target maintenance.Target) (records, store string) {
	t.Helper()
	recs, err := target.OpenRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	records = recs.Dir()
	rel := objectstore.WorkspaceRecords(target.WorkspaceID)
	if !strings.HasSuffix(records, filepath.FromSlash(rel)) {
		t.Fatalf("records at %s, not under records/<id>", records)
	}
	return records, strings.TrimSuffix(records, filepath.FromSlash(rel))
}

// A shared database behind the store whose newest record is damaged is not rebuilt in place: the
// rebuild stops with an integrity error naming the record, and the transaction that would have
// replaced the workspace's rows rolls back, so they are as they were.
func TestRebuildInPlaceStopsAtADamagedRecord(t *testing.T) {
	ctx := context.Background()
	s, dsn := pgWorkspace(t)
	target := s.Target()
	records, _ := pgRecordsDir(t, target)
	recs, _ := target.OpenRecords(ctx)
	names, err := recs.Committed()
	if err != nil || len(names) == 0 {
		t.Fatalf("records %v: %v", names, err)
	}
	newest := filepath.Join(records, names[len(names)-1])
	b, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	_ = os.Chmod(newest, 0o600)
	if err := os.WriteFile(newest, b, 0o600); err != nil {
		t.Fatal(err)
	}
	// Behind the store: the ledger forgot every record.
	servertest.Exec(t, dsn, "DELETE FROM ledger WHERE workspace_id = '"+s.WorkspaceID+"'")
	res, err := maintenance.Rebuild(ctx, target, rebuildTime)
	if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), names[len(names)-1]) || res.Rebuilt {
		t.Fatalf("rebuild in place past a damaged record: %+v, %v", res, err)
	}
	r := maintenance.Doctor(ctx, target, false)
	db := finding(t, r, "database")
	if db.OK || !strings.Contains(db.Problem, "behind the store") {
		t.Fatalf("the database after a failed rebuild in place: %+v", r.Findings)
	}
	if n := pgCount(t, dsn, "SELECT COUNT(*) FROM checkpoints WHERE workspace_id = '"+s.WorkspaceID+"'"); n != 1 {
		t.Fatalf("%d checkpoints of the workspace after a failed rebuild in place, want its 1", n)
	}
}

func pgCount(t *testing.T, dsn, query string) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	var n int64
	if err := conn.QueryRow(ctx, query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A rebuild in place that cannot open the database with its records (their pending listing fails)
// reports that and rebuilds nothing.
func TestRebuildInPlaceCannotOpenWithTheRecords(t *testing.T) {
	ctx := context.Background()
	s, dsn := pgWorkspace(t)
	target := s.Target()
	_, store := pgRecordsDir(t, target)
	rel := objectstore.WorkspaceRecords(target.WorkspaceID)
	be := &listingBackend{Backend: objectstore.NewDir(store, true), dir: rel + "/pending"}
	target.OpenRecords = func(context.Context) (*objectstore.Records, error) {
		return objectstore.NewRecords(be, rel), nil
	}
	servertest.Exec(t, dsn, "DELETE FROM ledger WHERE workspace_id = '"+s.WorkspaceID+"'")
	res, err := maintenance.Rebuild(ctx, target, rebuildTime)
	if !errors.Is(err, errListing) || res.Rebuilt {
		t.Fatalf("rebuild in place: %+v, %v", res, err)
	}
	if db := finding(t, maintenance.Doctor(ctx, s.Target(), false), "database"); db.OK || !strings.Contains(db.Problem, "behind the store") {
		t.Fatalf("the database after a failed rebuild in place: %+v", db)
	}
}
