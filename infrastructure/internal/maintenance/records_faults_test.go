package maintenance_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/persistence"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

var errListing = errors.New("injected listing failure")

// listingBackend is the workspace's own record directory whose listing of dir fails after okLists
// listings of it went through, the way an unreadable directory or a failing disk makes it fail.
type listingBackend struct {
	objectstore.Backend
	dir     string
	okLists int
	lists   int
}

func (b *listingBackend) List(dir string) ([]objectstore.FileInfo, error) {
	if dir == b.dir {
		b.lists++
		if b.lists > b.okLists {
			return nil, errListing
		}
	}
	return b.Backend.List(dir)
}

// listingTarget is l's doctor target whose records are listed through be.
func listingTarget(l workspace.Layout, be *listingBackend) maintenance.Target {
	t := maintenance.PrivateTarget(l)
	be.Backend = objectstore.NewDir(l.Objects(), false)
	t.OpenRecords = func(context.Context) (*objectstore.Records, error) {
		return objectstore.NewRecords(be, "records"), nil
	}
	return t
}

// checkpointsIn lists the IDs of the checkpoints in l's database.
func checkpointsIn(t *testing.T, l workspace.Layout) []string {
	t.Helper()
	ctx := context.Background()
	db, err := persistence.Open(ctx, l.Database(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	cps, err := persistence.NewCheckpoints(db).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cps {
		ids = append(ids, string(c.ID()))
	}
	return ids
}

// doctor --rebuild that cannot list the records fails with that error: a missing database is not
// made again as an empty one (no plan.db, no half-built one left), and a healthy one is left alone,
// never taken for one with no history to be behind.
func TestRebuildWhenTheRecordsCannotBeListed(t *testing.T) {
	ctx := context.Background()
	t.Run("database missing", func(t *testing.T) {
		l := workspaceWithCheckpoint(t)
		for _, s := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(l.Database() + s); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
		res, err := maintenance.Rebuild(ctx, listingTarget(l, &listingBackend{dir: "records"}), time.Now())
		if !errors.Is(err, errListing) || res.Rebuilt {
			t.Fatalf("rebuild: %+v, %v", res, err)
		}
		for _, p := range []string{l.Database(), l.Database() + ".rebuild"} {
			if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a failed rebuild left %s (%v)", p, err)
			}
		}
	})
	t.Run("database healthy", func(t *testing.T) {
		l := workspaceWithCheckpoint(t)
		before := checkpointsIn(t, l)
		res, err := maintenance.Rebuild(ctx, listingTarget(l, &listingBackend{dir: "records"}), time.Now())
		if !errors.Is(err, errListing) || res.Rebuilt || res.KeptAside != "" {
			t.Fatalf("rebuild: %+v, %v", res, err)
		}
		if after := checkpointsIn(t, l); len(before) != 1 || strings.Join(after, ",") != strings.Join(before, ",") {
			t.Fatalf("checkpoints %v, then %v", before, after)
		}
		if m, _ := filepath.Glob(l.Database() + ".corrupt-*"); len(m) != 0 {
			t.Fatalf("a healthy database was kept aside: %v", m)
		}
	})
}

// doctor reports records it cannot verify (their listing fails) as a records problem, never as
// healthy records.
func TestDoctorRecordsThatCannotBeVerified(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	// The first listing (what the database's health is measured against) goes through.
	r := maintenance.Doctor(context.Background(), listingTarget(l, &listingBackend{dir: "records", okLists: 1}), false)
	f := finding(t, r, "records")
	if r.OK || f.OK || !strings.Contains(f.Problem, errListing.Error()) {
		t.Fatalf("%+v", r.Findings)
	}
}

// doctor --repair of a damaged record that cannot open the database with its records (their
// pending listing fails) reports why in the repair, repairs nothing and removes no record.
func TestDoctorRecordRepairCannotOpenTheDatabase(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	name, damaged := damageRecord(t, l)
	recs, err := objectstore.OpenRecords(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	before, _ := recs.Committed()
	r := maintenance.Doctor(context.Background(), listingTarget(l, &listingBackend{dir: "records/pending"}), true)
	f := finding(t, r, "records")
	if f.OK || f.Repaired || !strings.Contains(f.Problem, name) || !strings.Contains(f.Repair, errListing.Error()) {
		t.Fatalf("%+v", f)
	}
	unchanged(t, filepath.Join(recs.Dir(), name), damaged)
	if after, _ := recs.Committed(); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Fatalf("records %v, then %v", before, after)
	}
}

// A rebuild whose last step fails (opening the rebuilt database with its records, to settle the
// pending ones) reports the failure, but what it did stands: the complete rebuilt database is in
// place and the damaged one kept aside, so nothing is lost and running it again finds it healthy.
func TestRebuildWhoseFinalOpenFails(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	want := checkpointsIn(t, l)
	if err := os.WriteFile(l.Database(), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"-wal", "-shm"} {
		_ = os.Remove(l.Database() + s)
	}
	// The rebuild lists the pending records once; the open after it fails to.
	be := &listingBackend{dir: "records/pending", okLists: 1}
	res, err := maintenance.Rebuild(ctx, listingTarget(l, be), rebuildTime)
	if !errors.Is(err, errListing) || res.Rebuilt {
		t.Fatalf("rebuild: %+v, %v", res, err)
	}
	if got := checkpointsIn(t, l); len(want) != 1 || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("checkpoints %v, want %v", got, want)
	}
	unchanged(t, l.Database()+".corrupt-20261123T101112Z", []byte("junk"))
	res, err = maintenance.Rebuild(ctx, maintenance.PrivateTarget(l), rebuildTime)
	if err != nil || res.Rebuilt || res.Why != "" {
		t.Fatalf("a second rebuild: %+v, %v", res, err)
	}
}
