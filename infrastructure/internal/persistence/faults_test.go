package persistence

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// failWrites makes the database refuse every write of kind (INSERT, UPDATE, DELETE) to table, the
// way a full disk or an I/O error refuses it: cheap, deterministic fault injection through a
// trigger.
func failWrites(t *testing.T, db *DB, kind, table string) {
	t.Helper()
	name := `fail_` + strings.ToLower(kind) + `_` + table
	stmts := []string{`CREATE TRIGGER ` + name + ` BEFORE ` + kind + ` ON ` + table +
		` BEGIN SELECT RAISE(ABORT, 'injected failure'); END`}
	if db.Dialect() == Postgres {
		stmts = []string{
			`CREATE OR REPLACE FUNCTION plan_test_fail() RETURNS trigger LANGUAGE plpgsql AS
				$$ BEGIN RAISE EXCEPTION 'injected failure'; END $$`,
			`CREATE TRIGGER ` + name + ` BEFORE ` + kind + ` ON ` + table + ` FOR EACH ROW EXECUTE FUNCTION plan_test_fail()`,
		}
	}
	for _, stmt := range stmts {
		if err := db.gorm.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
}

// dropTable drops table under an open database, as damage would lose it (on PostgreSQL with the
// foreign keys that point at it).
func dropTable(t *testing.T, db *DB, table string) {
	t.Helper()
	stmt := `DROP TABLE ` + table
	if db.Dialect() == Postgres {
		stmt += ` CASCADE`
	}
	if err := db.gorm.Exec(stmt).Error; err != nil {
		t.Fatal(err)
	}
}

// Save writes a plan in one transaction, whole (a redefined plan) or what changed: when any of its
// writes fails, the plan stored before is still there, whole, and nothing of the new one is.
func TestPlanSaveIsAtomic(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		for _, tc := range []struct {
			kind, table string
			whole       bool
		}{
			{"UPDATE", "plans", false}, {"INSERT", "decisions", false}, {"UPDATE", "attempts", false},
			{"UPDATE", "plans", true}, {"DELETE", "decisions", true}, {"INSERT", "decisions", true}, {"INSERT", "attempts", true},
		} {
			t.Run(fmt.Sprintf("%s %s whole=%v", tc.kind, tc.table, tc.whole), func(t *testing.T) {
				db := e.open(t)
				plans := NewPlans(db)
				before := savedPlan(t, plans)
				changed, err := plans.Current(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := changed.Append(plan.Definition{ID: "extra", Run: "true"}); err != nil {
					t.Fatal(err)
				}
				if tc.whole {
					var defs []plan.Definition
					for _, d := range changed.Decisions() {
						defs = append(defs, d.Definition())
					}
					if err := changed.Define(defs); err != nil {
						t.Fatal(err)
					}
				}
				code := 0
				if err := changed.Finish("build", plan.Outcome{Status: plan.Succeeded, ExitCode: &code}, time.Now()); err != nil {
					t.Fatal(err)
				}
				failWrites(t, db, tc.kind, tc.table)
				err = plans.Save(ctx, changed)
				if err == nil || !strings.Contains(err.Error(), "injected failure") {
					t.Fatalf("save with a failing %s on %s: %v", tc.kind, tc.table, err)
				}
				got, err := plans.Current(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := viewOf(got), viewOf(before); !equalViews(g, w) {
					t.Fatalf("a failed save changed the stored plan:\n got  %+v\n want %+v", g, w)
				}
			})
		}
	})
}

func equalViews(a, b []decisionView) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Def.ID != b[i].Def.ID || a[i].Status != b[i].Status || len(a[i].Attempts) != len(b[i].Attempts) {
			return false
		}
	}
	return true
}

// A failed write is reported as what it is, never as a conflict or success: adding a checkpoint,
// an operation or a correction, recording a failure, deleting a checkpoint, updating a correction.
func TestFailedWritesAreReported(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		db := e.open(t)
		at := time.Unix(1_700_000_000, 0)
		corrections := NewCorrections(db)
		if err := corrections.Add(ctx, newCorrection(t, corr1, at)); err != nil {
			t.Fatal(err)
		}
		cps := NewCheckpoints(db)
		if err := cps.Add(ctx, newCP(t, id1, at)); err != nil {
			t.Fatal(err)
		}
		for _, tr := range []struct{ kind, table string }{
			{"INSERT", "checkpoints"}, {"DELETE", "checkpoints"}, {"INSERT", "history"},
			{"INSERT", "corrections"}, {"UPDATE", "corrections"}, {"INSERT", "checkpoint_failures"},
		} {
			failWrites(t, db, tr.kind, tr.table)
		}
		check := func(what string, err error) {
			t.Helper()
			if err == nil || !strings.Contains(err.Error(), "injected failure") || errors.Is(err, fault.ErrConflict) || errors.Is(err, fault.ErrNotFound) {
				t.Errorf("%s: %v", what, err)
			}
		}
		check("add checkpoint", cps.Add(ctx, newCP(t, id2, at)))
		check("delete checkpoint", cps.Delete(ctx, id1))
		check("record operation", NewHistory(db).Record(ctx, port.HistoryRecord{ID: "op", Kind: "rollback"}))
		check("add correction", corrections.Add(ctx, newCorrection(t, corr2, at)))
		check("update correction", corrections.Update(ctx, corr1, func(c *correction.Correction) error { return c.StartReexecution() }))
		check("record checkpoint failure", NewMetrics(db).RecordCheckpointFailure(ctx, at, "disk full"))
		if _, err := cps.Get(ctx, id1); err != nil {
			t.Errorf("the checkpoint whose delete failed is gone: %v", err)
		}
		if c, err := corrections.Get(ctx, corr1); err != nil || c.Status() != correction.Reverted {
			t.Errorf("the correction whose update failed changed: %v, %v", c, err)
		}
	})
}

// A query that fails (here: on a closed database) is an error, never "not found", "absent" or an
// empty list: taking a failed read for an empty store is how metadata gets recreated over data.
func TestFailedReadsAreNotAbsence(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "plan.db"), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		if err == nil || errors.Is(err, fault.ErrNotFound) {
			t.Errorf("%s on a closed database: %v", what, err)
		}
	}
	cps, plans, corrections, history := NewCheckpoints(db), NewPlans(db), NewCorrections(db), NewHistory(db)
	_, err = cps.Get(ctx, id1)
	check("checkpoint Get", err)
	_, err = cps.List(ctx)
	check("checkpoint List", err)
	_, err = cps.Latest(ctx)
	check("checkpoint Latest", err)
	_, err = cps.Resolve(ctx, "0000")
	check("checkpoint Resolve", err)
	_, err = plans.Current(ctx)
	check("plan Current", err)
	_, err = plans.ByName(ctx, "p")
	check("plan ByName", err)
	_, err = plans.List(ctx)
	check("plan List", err)
	_, err = corrections.Get(ctx, corr1)
	check("correction Get", err)
	_, err = corrections.List(ctx)
	check("correction List", err)
	has, err := history.Has(ctx, "op")
	check("history Has", err)
	if has {
		t.Error("history Has reported an operation it could not read")
	}
	_, err = history.Get(ctx, "op")
	check("history Get", err)
	_, err = history.List(ctx)
	check("history List", err)
	_, err = NewMetrics(db).CheckpointFailures(ctx)
	check("checkpoint failures", err)
	_, err = db.IntegrityCheck(ctx)
	check("integrity check", err)
	_, err = db.Workspaces(ctx)
	check("workspaces", err)
	recs, err := objectstore.OpenRecords(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.RebuildWorkspace(ctx, recs)
	check("rebuild in place", err)
}

// A migration step that fails is applied not at all: its version is not recorded, later steps do
// not run, and opening reports it; the data already there is kept.
func TestFailedMigrationIsNotRecorded(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plan.db")
	// A database at schema version 2 holding a checkpoint, with a table in the way of step 3's
	// CREATE TABLE corrections.
	raw := legacySQLite(t, path, 2)
	for _, stmt := range []string{
		`INSERT INTO checkpoints (id, type, created_at, root_tree, files, bytes, stored_bytes, duration_ns)
			VALUES ('` + id1 + `', 'manual', 1, '` + tree.Sum([]byte(id1)).String() + `', 1, 2, 3, 4)`,
		`CREATE TABLE corrections (x INTEGER)`,
	} {
		if err := raw.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(ctx, path, false); err == nil || !strings.Contains(err.Error(), "migrate schema to version 3") {
		t.Fatalf("open with a failing migration: %v", err)
	}
	var latest int
	if err := raw.Raw(`SELECT MAX(version) FROM schema_migrations`).Scan(&latest).Error; err != nil || latest != 2 {
		t.Fatalf("schema version after a failed step: %d, %v; want 2", latest, err)
	}
	// Clear the obstacle: the steps run now, once each, and the checkpoint is still there.
	if err := raw.Exec(`DROP TABLE corrections`).Error; err != nil {
		t.Fatal(err)
	}
	if sqlDB, err := raw.DB(); err == nil {
		_ = sqlDB.Close()
	}
	db := mustOpen(t, path, false)
	defer db.Close()
	var versions []int
	if err := db.gorm.Raw(`SELECT version FROM schema_migrations ORDER BY version`).Scan(&versions).Error; err != nil {
		t.Fatal(err)
	}
	var want []int
	for _, m := range migrations {
		want = append(want, m.version)
	}
	if !reflect.DeepEqual(versions, want) {
		t.Fatalf("schema versions %v", versions)
	}
	if _, err := NewCheckpoints(db).Get(ctx, checkpoint.ID(id1)); err != nil {
		t.Fatal(err)
	}
}

// legacySQLiteReopen opens the SQLite database at path with none of plan's settings.
func legacySQLiteReopen(t *testing.T, path string) *gorm.DB {
	t.Helper()
	raw, err := gorm.Open(sqlite.Open(path), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := raw.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return raw
}

// legacySQLite makes a SQLite database at path with the schema of version v as this package's
// steps made it, the way a plan of that version left it, and returns it open (closed at cleanup).
func legacySQLite(t *testing.T, path string, v int) *gorm.DB {
	t.Helper()
	raw, err := gorm.Open(sqlite.Open(path), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := raw.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	stmts := []string{`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`}
	for _, m := range migrations[:v] {
		stmts = append(stmts, m.sql...)
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO schema_migrations VALUES (%d, '%s', 1)`, m.version, m.name))
	}
	for _, stmt := range stmts {
		if err := raw.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
	return raw
}

// A schema_migrations table that is not plan's (no version column) is refused, whether or not the
// caller allows a fresh start: it is someone else's database, not an empty one.
func TestForeignSchemaTableIsRefused(t *testing.T) {
	ctx := context.Background()
	for _, create := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "plan.db")
		raw, err := gorm.Open(sqlite.Open(path), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
		if err != nil {
			t.Fatal(err)
		}
		if err := raw.Exec(`CREATE TABLE schema_migrations (x INTEGER)`).Error; err != nil {
			t.Fatal(err)
		}
		if sqlDB, err := raw.DB(); err == nil {
			_ = sqlDB.Close()
		}
		if db, err := Open(ctx, path, create); err == nil {
			_ = db.Close()
			t.Fatalf("create=%v: a foreign schema_migrations table was accepted", create)
		}
	}
}

// An over-long failure reason is cut to 1 KiB, so a runaway error message cannot bloat the
// database, and the failure is still counted.
func TestCheckpointFailureReasonIsBounded(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		db := e.open(t)
		m := NewMetrics(db)
		if err := m.RecordCheckpointFailure(ctx, time.Now(), strings.Repeat("x", 5000)); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.gorm.Raw(`SELECT LENGTH(reason) FROM checkpoint_failures`).Scan(&n).Error; err != nil || n != 1024 {
			t.Fatalf("stored reason length %d, %v; want 1024", n, err)
		}
		if c, err := m.CheckpointFailures(ctx); err != nil || c != 1 {
			t.Fatalf("count %d, %v", c, err)
		}
	})
}

// IntegrityCheck reports SQLite's complaints about a damaged database (here: an index that no
// longer matches its table) instead of calling it healthy: `plan doctor` relies on it.
func TestIntegrityCheckReportsDamage(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plan.db")
	db := mustOpen(t, path, true)
	savedPlan(t, NewPlans(db))
	for _, stmt := range []string{
		`PRAGMA writable_schema = ON`,
		`UPDATE sqlite_master SET sql = 'CREATE INDEX attempts_checkpoint ON attempts(status)' WHERE name = 'attempts_checkpoint'`,
		`PRAGMA writable_schema = OFF`,
	} {
		if err := db.gorm.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
	_ = db.Close()
	db = mustOpen(t, path, false)
	defer db.Close()
	problems, err := db.IntegrityCheck(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) == 0 || !strings.Contains(strings.Join(problems, "\n"), "attempts_checkpoint") {
		t.Fatalf("a damaged index was not reported: %v", problems)
	}
}

// A plan whose decisions or attempts cannot be read (their table is gone under an open database)
// is an error, never a plan without decisions: saving that back would erase the plan's history.
func TestPlanWithUnreadableRowsIsAnError(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		for _, table := range []string{"attempts", "decisions"} {
			t.Run(table, func(t *testing.T) {
				db := e.open(t)
				plans := NewPlans(db)
				savedPlan(t, plans)
				dropTable(t, db, table)
				if p, err := plans.Current(ctx); err == nil {
					t.Fatalf("Current returned a plan with %d decisions", len(p.Decisions()))
				}
			})
		}
	})
}
