package maintenance_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/maintenance"
	"github.com/planhq/plan/infrastructure/objectstore"
)

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
	pgExec(t, dsn, "DELETE FROM ledger WHERE workspace_id = '"+s.WorkspaceID+"'")
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
	pgExec(t, dsn, "DELETE FROM ledger WHERE workspace_id = '"+s.WorkspaceID+"'")
	res, err := maintenance.Rebuild(ctx, target, rebuildTime)
	if !errors.Is(err, errListing) || res.Rebuilt {
		t.Fatalf("rebuild in place: %+v, %v", res, err)
	}
	if db := finding(t, maintenance.Doctor(ctx, s.Target(), false), "database"); db.OK || !strings.Contains(db.Problem, "behind the store") {
		t.Fatalf("the database after a failed rebuild in place: %+v", db)
	}
}
