package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// legacyRows fills a schema-9 database the way plan did before workspaces: one row or more in
// every table, and the records of those rows (without workspace IDs) committed to recs and named
// in the ledger table.
func legacyRows(t *testing.T, raw *gorm.DB, recs *objectstore.Records) {
	t.Helper()
	root := tree.Sum([]byte("root")).String()
	for _, stmt := range []string{
		`INSERT INTO checkpoints (id, type, created_at, note, decision_id, root_tree, files, bytes, stored_bytes, duration_ns, labels, pinned)
			VALUES ('` + id1 + `', 'pre-decision', 1000, 'n', 'build', '` + root + `', 1, 2, 3, 4, '{"k":"v"}', 1)`,
		`INSERT INTO checkpoints (id, type, created_at, root_tree, files, bytes, stored_bytes, duration_ns)
			VALUES ('` + id2 + `', 'manual', 2000, '` + root + `', 1, 2, 3, 4)`,
		`INSERT INTO history (id, kind, target_checkpoint, backup_checkpoint, started_at, finished_at, added, modified, deleted, reverted)
			VALUES ('op1', 'rollback', '` + id1 + `', '` + id2 + `', 3000, 3001, 1, 2, 3, '["build"]')`,
		`INSERT INTO plans (id, name, source, checkpoints, created_at, updated_at) VALUES ('p1', 'release', 'plan.yaml', 1, 10, 20)`,
		`INSERT INTO decisions (plan_id, id, position, name, run, env, skipped, retries, on_failure) VALUES ('p1', 'build', 0, 'Build', 'make', '{}', 0, 2, 'continue')`,
		`INSERT INTO decisions (plan_id, id, position, run, skipped) VALUES ('p1', 'ship', 1, 'ship', 1)`,
		`INSERT INTO attempts (plan_id, decision_id, number, status, command, checkpoint_id, exit_code, started_at, finished_at)
			VALUES ('p1', 'build', 1, 'succeeded', 'make', '` + id1 + `', 0, 30, 40)`,
		`INSERT INTO corrections (id, decision_id, reason, scope, safety_checkpoint, rollback_checkpoint, archive_dir, status, created_at, kind)
			VALUES ('c1', 'build', 'wrong', '[]', '` + id2 + `', '` + id1 + `', '/a', 'reverted', 50, 'full')`,
		`INSERT INTO checkpoint_failures (at, reason) VALUES (60, 'disk full')`,
		`INSERT INTO checkpoint_failures (at, reason) VALUES (61, 'disk full again')`,
		`INSERT INTO operations (id, kind, args, started_at, finished_at, outcome) VALUES ('o1', 'run', '["run"]', 70, 71, 'ok')`,
	} {
		if err := raw.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
	// One record per aggregate, as the code of schema 9 wrote them (SELECT * of the rows).
	seq := uint64(0)
	for _, a := range []struct{ kind, table, where, key string }{
		{"checkpoint", "checkpoints", "id = '" + id1 + "'", id1},
		{"checkpoint", "checkpoints", "id = '" + id2 + "'", id2},
		{"history", "history", "id = 'op1'", "op1"},
		{"plan-row", "plans", "id = 'p1'", "p1"},
		{"decision", "decisions", "plan_id = 'p1' AND id = 'build'", "p1/build"},
		{"decision", "decisions", "plan_id = 'p1' AND id = 'ship'", "p1/ship"},
		{"attempt", "attempts", "plan_id = 'p1'", "p1/build/1"},
		{"correction", "corrections", "id = 'c1'", "c1"},
		{"failure", "checkpoint_failures", "id = 1", "1"},
		{"failure", "checkpoint_failures", "id = 2", "2"},
		{"operation", "operations", "id = 'o1'", "o1"},
	} {
		var rows []map[string]any
		if err := raw.Table(a.table).Where(a.where).Find(&rows).Error; err != nil || len(rows) != 1 {
			t.Fatalf("%s: %v, %v", a.table, rows, err)
		}
		seq++
		body, err := json.Marshal(record{Format: recordFormat, Seq: seq, At: time.Unix(int64(seq), 0).UTC(), Schema: 9,
			Changes: []change{{Kind: a.kind, Key: a.key, Rows: map[string][]map[string]any{a.table: rows}}}})
		if err != nil {
			t.Fatal(err)
		}
		name, err := recs.Prepare(seq, body)
		if err != nil {
			t.Fatal(err)
		}
		if err := recs.Commit(name); err != nil {
			t.Fatal(err)
		}
		if err := raw.Exec(`INSERT INTO ledger (seq, name, at) VALUES (?, ?, ?)`, seq, name, time.Unix(int64(seq), 0).UnixNano()).Error; err != nil {
			t.Fatal(err)
		}
	}
}

// A database from before workspaces (schema 9, with rows and records) is migrated when opened: its
// rows all become its one workspace's (a fresh ID, or the one the caller names), nothing is lost,
// the foreign keys still hold and cascade, no baseline is needed, and the records written before
// still rebuild it.
func TestLegacyDatabaseIsAdopted(t *testing.T) {
	ctx := context.Background()
	for _, named := range []string{"", "from-config"} {
		t.Run("id "+named, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "plan.db")
			recs, err := objectstore.OpenRecords(filepath.Join(dir, "objects"))
			if err != nil {
				t.Fatal(err)
			}
			raw := legacySQLite(t, path, 9)
			legacyRows(t, raw, recs)
			before := map[string]int{}
			for _, tb := range tables {
				var n int
				if err := raw.Raw(`SELECT COUNT(*) FROM ` + tb.name).Scan(&n).Error; err != nil {
					t.Fatal(err)
				}
				before[tb.name] = n
			}
			if sqlDB, err := raw.DB(); err == nil {
				_ = sqlDB.Close()
			}
			var opts []Option
			if named != "" {
				opts = append(opts, WithWorkspace(named))
			}
			db, err := Open(ctx, path, false, append(opts, WithLedger(recs))...)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = db.Close() }()
			ws := db.WorkspaceID()
			if named != "" && ws != named || len(ws) == 0 {
				t.Fatalf("workspace %q", ws)
			}
			got := dump(t, db)
			for _, tb := range tables {
				if len(got[tb.name]) != before[tb.name] {
					t.Fatalf("%s: %d rows, were %d", tb.name, len(got[tb.name]), before[tb.name])
				}
				for _, row := range got[tb.name] {
					if row["workspace_id"] != ws {
						t.Fatalf("%s row of workspace %v", tb.name, row["workspace_id"])
					}
				}
			}
			if w, err := db.Workspaces(ctx); err != nil || len(w) != 1 || w[0].ID != ws || w[0].Checkpoints != 2 || !w[0].Newest.Equal(time.Unix(0, 2000)) {
				t.Fatalf("workspaces %+v, %v", w, err)
			}
			// No baseline: the ledger already knew the database.
			if names, _ := recs.Committed(); len(names) != 11 {
				t.Fatalf("%d records", len(names))
			}
			p, err := NewPlans(db).ByName(ctx, "release")
			if err != nil || len(p.Decisions()) != 2 {
				t.Fatalf("plan %v, %v", p, err)
			}
			if a, ran := p.Decisions()[0].Latest(); !ran || a.CheckpointID != id1 {
				t.Fatalf("attempt %+v", a)
			}
			c, err := NewCheckpoints(db).Get(ctx, id1)
			if err != nil || !c.Pinned() || c.Labels()["k"] != "v" {
				t.Fatalf("checkpoint %v, %v", c, err)
			}
			if n, err := NewMetrics(db).CheckpointFailures(ctx); err != nil || n != 2 {
				t.Fatalf("failures %d, %v", n, err)
			}
			// The next failure is numbered after the adopted ones.
			if err := NewMetrics(db).RecordCheckpointFailure(ctx, time.Unix(80, 0), "x"); err != nil {
				t.Fatal(err)
			}
			if problems, err := db.IntegrityCheck(ctx); err != nil || len(problems) != 0 {
				t.Fatalf("integrity: %v, %v", problems, err)
			}
			want := dump(t, db)
			// The records from before workspaces, and the one written after, rebuild the database.
			_, rebuilt, err := engines[0].rebuild(t, recs, ws)
			if err != nil {
				t.Fatal(err)
			}
			if d := diffDumps(want, dump(t, rebuilt)); d != "" {
				t.Fatalf("rebuilt from legacy records:\n%s", d)
			}
			// Foreign keys are on again and point at the new tables: a decision needs its plan, and
			// a plan's deletion takes its decisions and attempts with it.
			err = db.gorm.Exec(`INSERT INTO decisions (workspace_id, plan_id, id, position, run) VALUES (?, 'ghost', 'd', 0, 'x')`, ws).Error
			if !errors.Is(err, gorm.ErrForeignKeyViolated) {
				t.Fatalf("a decision without its plan: %v", err)
			}
			if err := db.gorm.Exec(`DELETE FROM plans`).Error; err != nil {
				t.Fatal(err)
			}
			var left int
			if err := db.gorm.Raw(`SELECT (SELECT COUNT(*) FROM decisions) + (SELECT COUNT(*) FROM attempts)`).Scan(&left).Error; err != nil || left != 0 {
				t.Fatalf("%d decisions and attempts outlived their plan: %v", left, err)
			}
		})
	}
}

// An empty database of schema 9 takes no workspace from the migration; the open then makes one,
// or takes the one named.
func TestLegacyEmptyDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plan.db")
	raw := legacySQLite(t, path, 9)
	if sqlDB, err := raw.DB(); err == nil {
		_ = sqlDB.Close()
	}
	db, err := Open(ctx, path, false, WithWorkspace("named"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if w, err := db.Workspaces(ctx); err != nil || len(w) != 1 || w[0].ID != "named" {
		t.Fatalf("workspaces %+v, %v", w, err)
	}
	if _, err := Open(ctx, path, false, WithWorkspace("another")); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("a second workspace without create: %v", err)
	}
}
