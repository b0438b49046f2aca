package maintenance_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/persistence"
	"github.com/planhq/plan/infrastructure/internal/workspace"
	"github.com/planhq/plan/tests/testkit"
)

// A damaged record beside a database that is damaged too cannot be compacted away: doctor names
// both and advises a backup, and --repair removes nothing.
func TestDoctorDamagedRecordAndDatabase(t *testing.T) {
	ctx := context.Background()
	l := workspaceWithCheckpoint(t)
	name, damaged := damageRecord(t, l)
	if err := os.WriteFile(l.Database(), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := maintenance.Doctor(ctx, maintenance.PrivateTarget(l), true)
	f := finding(t, r, "records")
	if r.OK || f.OK || f.Repaired || !strings.Contains(f.Problem, name) || !strings.Contains(f.Repair, "from a backup") {
		t.Fatalf("%+v", r.Findings)
	}
	recs, _ := objectstore.OpenRecords(l.Objects())
	unchanged(t, filepath.Join(recs.Dir(), name), damaged)
	unchanged(t, l.Database(), []byte("junk"))
}

// doctor --repair of a damaged record needs the workspace lock, and a compaction that cannot write
// its baseline removes no record: the damage is still reported, nothing is lost.
func TestDoctorRecordRepairFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("lock held", func(t *testing.T) {
		l := workspaceWithCheckpoint(t)
		name, damaged := damageRecord(t, l)
		unlock, err := workspace.NewLocker(l).Lock(ctx, "a test holding the lock")
		if err != nil {
			t.Fatal(err)
		}
		r := maintenance.Doctor(ctx, maintenance.PrivateTarget(l), true)
		_ = unlock()
		f := finding(t, r, "records")
		if f.OK || f.Repaired || !strings.Contains(f.Repair, "a test holding the lock") {
			t.Fatalf("%+v", f)
		}
		recs, _ := objectstore.OpenRecords(l.Objects())
		unchanged(t, filepath.Join(recs.Dir(), name), damaged)
	})
	t.Run("baseline cannot be written", func(t *testing.T) {
		l := workspaceWithCheckpoint(t)
		name, damaged := damageRecord(t, l)
		recs, _ := objectstore.OpenRecords(l.Objects())
		before, _ := recs.Committed()
		testkit.Immutable(t, filepath.Join(recs.Dir(), "pending"))
		r := maintenance.Doctor(ctx, maintenance.PrivateTarget(l), true)
		f := finding(t, r, "records")
		if f.OK || f.Repaired || !strings.HasPrefix(f.Repair, "compaction failed: ") {
			t.Fatalf("%+v", f)
		}
		unchanged(t, filepath.Join(recs.Dir(), name), damaged)
		if after, _ := recs.Committed(); strings.Join(after, ",") != strings.Join(before, ",") {
			t.Fatalf("records %v, then %v", before, after)
		}
	})
}

// addCheckpoints adds n checkpoints whose root trees the store does not hold.
func addCheckpoints(t *testing.T, l workspace.Layout, n int) []string {
	t.Helper()
	ctx := context.Background()
	recs, err := objectstore.OpenRecords(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	db, err := persistence.Open(ctx, l.Database(), false, persistence.WithLedger(recs))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%016x%08x", 1<<60+i, i)
		c, err := checkpoint.New(checkpoint.Params{ID: id, Type: checkpoint.Manual, CreatedAt: time.Unix(int64(i), 0),
			Root: tree.Sum([]byte("never stored " + id))})
		if err != nil {
			t.Fatal(err)
		}
		if err := persistence.NewCheckpoints(db).Add(ctx, c); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// Checkpoints without data are all counted, the first five named and the rest summed up, so a
// store that lost its packs is never reported as a handful of problems.
func TestDoctorCountsEveryCheckpointWithoutData(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	ids := addCheckpoints(t, l, 7)
	f := finding(t, maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false), "checkpoints")
	if f.OK || !strings.Contains(f.Problem, "7 of 8 checkpoints have no data") || !strings.Contains(f.Problem, "and 2 more") {
		t.Fatalf("%+v", f)
	}
	named := 0
	for _, id := range ids {
		if strings.Contains(f.Problem, id) {
			named++
		}
	}
	if named != 5 {
		t.Fatalf("%d checkpoints named in %q", named, f.Problem)
	}
}

// A checkpoint whose root reference is damaged makes the checkpoints check fail with the
// integrity error, never "ok" for want of a readable list.
func TestDoctorCheckpointsUnreadable(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	ids := addCheckpoints(t, l, 1)
	g, err := gorm.Open(sqlite.Open(l.Database()), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Exec(`UPDATE checkpoints SET root_tree = 'not a hash' WHERE id = ?`, ids[0]).Error; err != nil {
		t.Fatal(err)
	}
	if sqlDB, err := g.DB(); err == nil {
		_ = sqlDB.Close()
	}
	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false)
	f := finding(t, r, "checkpoints")
	if r.OK || f.OK || !strings.Contains(f.Problem, ids[0]) || !strings.Contains(f.Problem, "damaged") {
		t.Fatalf("%+v", r.Findings)
	}
}
