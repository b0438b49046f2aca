package maintenance_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/tests/testkit"
)

// A plan.db that cannot be opened for a reason other than damage (a directory stands there) is not
// the rebuild's to replace: it refuses and touches nothing. doctor must not advise the rebuild it
// would refuse; once the path is moved aside, the rebuild makes the database again.
func TestRebuildRefusesADatabaseItCannotOpen(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	for _, s := range []string{"", "-wal", "-shm"} {
		_ = os.Remove(l.Database() + s)
	}
	keep := filepath.Join(l.Database(), "keep")
	if err := os.MkdirAll(keep, 0o750); err != nil {
		t.Fatal(err)
	}

	res, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime)
	if err == nil || !strings.Contains(err.Error(), "is a directory") || res.Rebuilt {
		t.Fatalf("rebuild over a directory: %+v, %v", res, err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("what stood at plan.db was touched: %v", err)
	}
	if _, err := os.Stat(l.Database() + ".rebuild"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused rebuild left a database behind: %v", err)
	}
	f := finding(t, maintenance.Doctor(ctx, maintenance.PrivateTarget(l), false), "database")
	if f.OK || !strings.Contains(f.Problem, "is a directory") || strings.Contains(f.Repair, "makes it again") || !strings.Contains(f.Repair, "aside") {
		t.Fatalf("doctor on a database it cannot open: %+v", f)
	}

	if err := os.Rename(l.Database(), l.Database()+".moved"); err != nil {
		t.Fatal(err)
	}
	res, err = maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime)
	if err != nil || !res.Rebuilt || res.Checkpoints != 1 {
		t.Fatalf("rebuild once the path is free: %+v, %v", res, err)
	}
}

// A -wal left beside a missing database would be replayed by SQLite into the new one: when the
// rebuild cannot remove it, it stops before putting a database in place, and the next rebuild,
// once the file can go, succeeds.
func TestRebuildStopsAtAStrayWALItCannotRemove(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	for _, s := range []string{"", "-wal", "-shm"} {
		_ = os.Remove(l.Database() + s)
	}
	wal := l.Database() + "-wal"
	if err := os.WriteFile(wal, []byte("a stray write-ahead log"), 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.Immutable(t, wal)

	if res, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime); err == nil || res.Rebuilt {
		t.Fatalf("rebuild beside a stray wal it cannot remove: %+v, %v", res, err)
	}
	if _, err := os.Lstat(l.Database()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a database was put in place beside the stray wal: %v", err)
	}
	unchanged(t, wal, []byte("a stray write-ahead log"))

	testkit.Mutable(t, wal)
	res, err := maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime)
	if err != nil || !res.Rebuilt || res.KeptAside != "" || res.Checkpoints != 1 {
		t.Fatalf("rebuild once the wal can go: %+v, %v", res, err)
	}
	if got := checkpointIDs(t, l); len(got) != 1 {
		t.Fatalf("the rebuilt database holds %d checkpoints", len(got))
	}
}
