package persistence

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/planhq/plan/domain/fault"
)

// migration is one schema step. Steps are append-only: never edit or renumber a released one.
type migration struct {
	version int
	name    string
	sql     []string
}

var migrations = []migration{
	{1, "checkpoints and history", []string{
		`CREATE TABLE checkpoints (
			id TEXT PRIMARY KEY,
			type TEXT NOT NULL,
			created_at INTEGER NOT NULL,
			note TEXT NOT NULL DEFAULT '',
			decision_id TEXT,
			parent_id TEXT,
			git_commit TEXT,
			root_tree TEXT NOT NULL,
			files INTEGER NOT NULL,
			bytes INTEGER NOT NULL,
			stored_bytes INTEGER NOT NULL,
			duration_ns INTEGER NOT NULL,
			rollback_count INTEGER NOT NULL DEFAULT 0
		)`,
		`CREATE INDEX checkpoints_created ON checkpoints(created_at DESC, id DESC)`,
		`CREATE TABLE history (
			id TEXT PRIMARY KEY,
			kind TEXT NOT NULL,
			target_checkpoint TEXT NOT NULL,
			backup_checkpoint TEXT NOT NULL,
			started_at INTEGER NOT NULL,
			finished_at INTEGER NOT NULL,
			added INTEGER NOT NULL,
			modified INTEGER NOT NULL,
			deleted INTEGER NOT NULL,
			reverted TEXT NOT NULL DEFAULT '[]'
		)`,
	}},
	{2, "plans, decisions and attempts", []string{
		`CREATE TABLE plans (
			id TEXT PRIMARY KEY,
			name TEXT NOT NULL UNIQUE,
			source TEXT NOT NULL DEFAULT '',
			checkpoints INTEGER NOT NULL,
			created_at INTEGER NOT NULL,
			updated_at INTEGER NOT NULL
		)`,
		`CREATE TABLE decisions (
			plan_id TEXT NOT NULL REFERENCES plans(id) ON DELETE CASCADE,
			id TEXT NOT NULL,
			position INTEGER NOT NULL,
			name TEXT NOT NULL DEFAULT '',
			run TEXT NOT NULL,
			timeout_ns INTEGER NOT NULL DEFAULT 0,
			env TEXT NOT NULL DEFAULT '{}',
			skipped INTEGER NOT NULL DEFAULT 0,
			PRIMARY KEY (plan_id, id)
		)`,
		`CREATE TABLE attempts (
			plan_id TEXT NOT NULL,
			decision_id TEXT NOT NULL,
			number INTEGER NOT NULL,
			status TEXT NOT NULL,
			command TEXT NOT NULL,
			checkpoint_id TEXT NOT NULL DEFAULT '',
			result_tree TEXT NOT NULL DEFAULT '',
			exit_code INTEGER,
			started_at INTEGER NOT NULL,
			finished_at INTEGER NOT NULL DEFAULT 0,
			artifacts TEXT NOT NULL DEFAULT '[]',
			reverted_by TEXT NOT NULL DEFAULT '',
			log_path TEXT NOT NULL DEFAULT '',
			PRIMARY KEY (plan_id, decision_id, number),
			FOREIGN KEY (plan_id, decision_id) REFERENCES decisions(plan_id, id) ON DELETE CASCADE
		)`,
		`CREATE INDEX attempts_checkpoint ON attempts(checkpoint_id)`,
	}},
	{3, "corrections", []string{
		`CREATE TABLE corrections (
			id TEXT PRIMARY KEY,
			decision_id TEXT NOT NULL,
			reason TEXT NOT NULL,
			command TEXT NOT NULL DEFAULT '',
			scope TEXT NOT NULL,
			safety_checkpoint TEXT NOT NULL,
			rollback_checkpoint TEXT NOT NULL,
			archive_dir TEXT NOT NULL,
			status TEXT NOT NULL,
			reexecuted TEXT NOT NULL DEFAULT '[]',
			created_at INTEGER NOT NULL,
			finished_at INTEGER NOT NULL DEFAULT 0
		)`,
	}},
	{4, "checkpoint failures", []string{
		`CREATE TABLE checkpoint_failures (
			id INTEGER PRIMARY KEY AUTOINCREMENT,
			at INTEGER NOT NULL,
			reason TEXT NOT NULL
		)`,
	}},
	{5, "the ledger of records in the store", []string{
		`CREATE TABLE ledger (
			seq INTEGER PRIMARY KEY,
			name TEXT NOT NULL UNIQUE,
			at INTEGER NOT NULL
		)`,
	}},
	{6, "the operation log", []string{
		`CREATE TABLE operations (
			id TEXT PRIMARY KEY,
			kind TEXT NOT NULL,
			args TEXT NOT NULL DEFAULT '[]',
			plan TEXT NOT NULL DEFAULT '',
			started_at INTEGER NOT NULL,
			finished_at INTEGER NOT NULL,
			outcome TEXT NOT NULL,
			checkpoints TEXT NOT NULL DEFAULT '[]',
			undo_checkpoint TEXT NOT NULL DEFAULT '',
			undone_by TEXT NOT NULL DEFAULT ''
		)`,
		`CREATE INDEX operations_started ON operations(started_at DESC, id DESC)`,
		`ALTER TABLE attempts ADD COLUMN reverted_from TEXT NOT NULL DEFAULT ''`,
	}},
	{7, "correction kinds", []string{
		`ALTER TABLE corrections ADD COLUMN kind TEXT NOT NULL DEFAULT 'full'`,
		`ALTER TABLE corrections ADD COLUMN conflicts TEXT NOT NULL DEFAULT '[]'`,
	}},
	{8, "labels and pins", []string{
		`ALTER TABLE checkpoints ADD COLUMN labels TEXT NOT NULL DEFAULT '{}'`,
		`ALTER TABLE checkpoints ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE decisions ADD COLUMN labels TEXT NOT NULL DEFAULT '{}'`,
	}},
	{9, "retries, failure policy and validation per decision", []string{
		`ALTER TABLE decisions ADD COLUMN retries INTEGER NOT NULL DEFAULT 0`,
		`ALTER TABLE decisions ADD COLUMN on_failure TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE decisions ADD COLUMN validate TEXT NOT NULL DEFAULT ''`,
	}},
	{10, "every row scoped by a workspace", []string{
		`CREATE TABLE workspaces (
			id TEXT PRIMARY KEY,
			root TEXT NOT NULL DEFAULT '',
			host TEXT NOT NULL DEFAULT '',
			created_at INTEGER NOT NULL
		)`,
		// A database that holds rows is one workspace's: it becomes that workspace.
		`INSERT INTO workspaces (id, created_at) SELECT CAST(@workspace AS TEXT), CAST(@now AS INTEGER)
			WHERE EXISTS (SELECT 1 FROM checkpoints) OR EXISTS (SELECT 1 FROM history)
			OR EXISTS (SELECT 1 FROM plans) OR EXISTS (SELECT 1 FROM decisions) OR EXISTS (SELECT 1 FROM attempts)
			OR EXISTS (SELECT 1 FROM corrections)
			OR EXISTS (SELECT 1 FROM checkpoint_failures) OR EXISTS (SELECT 1 FROM ledger)
			OR EXISTS (SELECT 1 FROM operations)`,
		`CREATE TABLE checkpoints_new (
			workspace_id TEXT NOT NULL,
			id TEXT NOT NULL,
			type TEXT NOT NULL,
			created_at INTEGER NOT NULL,
			note TEXT NOT NULL DEFAULT '',
			decision_id TEXT,
			parent_id TEXT,
			git_commit TEXT,
			root_tree TEXT NOT NULL,
			files INTEGER NOT NULL,
			bytes INTEGER NOT NULL,
			stored_bytes INTEGER NOT NULL,
			duration_ns INTEGER NOT NULL,
			rollback_count INTEGER NOT NULL DEFAULT 0,
			labels TEXT NOT NULL DEFAULT '{}',
			pinned INTEGER NOT NULL DEFAULT 0,
			PRIMARY KEY (workspace_id, id)
		)`,
		`INSERT INTO checkpoints_new (workspace_id, id, type, created_at, note, decision_id, parent_id, git_commit, root_tree,
			files, bytes, stored_bytes, duration_ns, rollback_count, labels, pinned)
			SELECT (SELECT id FROM workspaces), id, type, created_at, note, decision_id, parent_id, git_commit, root_tree,
			files, bytes, stored_bytes, duration_ns, rollback_count, labels, pinned FROM checkpoints`,
		`CREATE TABLE history_new (
			workspace_id TEXT NOT NULL,
			id TEXT NOT NULL,
			kind TEXT NOT NULL,
			target_checkpoint TEXT NOT NULL,
			backup_checkpoint TEXT NOT NULL,
			started_at INTEGER NOT NULL,
			finished_at INTEGER NOT NULL,
			added INTEGER NOT NULL,
			modified INTEGER NOT NULL,
			deleted INTEGER NOT NULL,
			reverted TEXT NOT NULL DEFAULT '[]',
			PRIMARY KEY (workspace_id, id)
		)`,
		`INSERT INTO history_new (workspace_id, id, kind, target_checkpoint, backup_checkpoint, started_at, finished_at,
			added, modified, deleted, reverted)
			SELECT (SELECT id FROM workspaces), id, kind, target_checkpoint, backup_checkpoint, started_at, finished_at,
			added, modified, deleted, reverted FROM history`,
		`CREATE TABLE plans_new (
			workspace_id TEXT NOT NULL,
			id TEXT NOT NULL,
			name TEXT NOT NULL,
			source TEXT NOT NULL DEFAULT '',
			checkpoints INTEGER NOT NULL,
			created_at INTEGER NOT NULL,
			updated_at INTEGER NOT NULL,
			PRIMARY KEY (workspace_id, id),
			UNIQUE (workspace_id, name)
		)`,
		`INSERT INTO plans_new (workspace_id, id, name, source, checkpoints, created_at, updated_at)
			SELECT (SELECT id FROM workspaces), id, name, source, checkpoints, created_at, updated_at FROM plans`,
		`CREATE TABLE decisions_new (
			workspace_id TEXT NOT NULL,
			plan_id TEXT NOT NULL,
			id TEXT NOT NULL,
			position INTEGER NOT NULL,
			name TEXT NOT NULL DEFAULT '',
			run TEXT NOT NULL,
			timeout_ns INTEGER NOT NULL DEFAULT 0,
			env TEXT NOT NULL DEFAULT '{}',
			skipped INTEGER NOT NULL DEFAULT 0,
			labels TEXT NOT NULL DEFAULT '{}',
			retries INTEGER NOT NULL DEFAULT 0,
			on_failure TEXT NOT NULL DEFAULT '',
			validate TEXT NOT NULL DEFAULT '',
			PRIMARY KEY (workspace_id, plan_id, id),
			FOREIGN KEY (workspace_id, plan_id) REFERENCES plans_new(workspace_id, id) ON DELETE CASCADE
		)`,
		`INSERT INTO decisions_new (workspace_id, plan_id, id, position, name, run, timeout_ns, env, skipped, labels, retries,
			on_failure, validate)
			SELECT (SELECT id FROM workspaces), plan_id, id, position, name, run, timeout_ns, env, skipped, labels, retries,
			on_failure, validate FROM decisions`,
		`CREATE TABLE attempts_new (
			workspace_id TEXT NOT NULL,
			plan_id TEXT NOT NULL,
			decision_id TEXT NOT NULL,
			number INTEGER NOT NULL,
			status TEXT NOT NULL,
			command TEXT NOT NULL,
			checkpoint_id TEXT NOT NULL DEFAULT '',
			result_tree TEXT NOT NULL DEFAULT '',
			exit_code INTEGER,
			started_at INTEGER NOT NULL,
			finished_at INTEGER NOT NULL DEFAULT 0,
			artifacts TEXT NOT NULL DEFAULT '[]',
			reverted_by TEXT NOT NULL DEFAULT '',
			log_path TEXT NOT NULL DEFAULT '',
			reverted_from TEXT NOT NULL DEFAULT '',
			PRIMARY KEY (workspace_id, plan_id, decision_id, number),
			FOREIGN KEY (workspace_id, plan_id, decision_id) REFERENCES decisions_new(workspace_id, plan_id, id) ON DELETE CASCADE
		)`,
		`INSERT INTO attempts_new (workspace_id, plan_id, decision_id, number, status, command, checkpoint_id, result_tree,
			exit_code, started_at, finished_at, artifacts, reverted_by, log_path, reverted_from)
			SELECT (SELECT id FROM workspaces), plan_id, decision_id, number, status, command, checkpoint_id, result_tree,
			exit_code, started_at, finished_at, artifacts, reverted_by, log_path, reverted_from FROM attempts`,
		`CREATE TABLE corrections_new (
			workspace_id TEXT NOT NULL,
			id TEXT NOT NULL,
			decision_id TEXT NOT NULL,
			reason TEXT NOT NULL,
			command TEXT NOT NULL DEFAULT '',
			scope TEXT NOT NULL,
			safety_checkpoint TEXT NOT NULL,
			rollback_checkpoint TEXT NOT NULL,
			archive_dir TEXT NOT NULL,
			status TEXT NOT NULL,
			reexecuted TEXT NOT NULL DEFAULT '[]',
			created_at INTEGER NOT NULL,
			finished_at INTEGER NOT NULL DEFAULT 0,
			kind TEXT NOT NULL DEFAULT 'full',
			conflicts TEXT NOT NULL DEFAULT '[]',
			PRIMARY KEY (workspace_id, id)
		)`,
		`INSERT INTO corrections_new (workspace_id, id, decision_id, reason, command, scope, safety_checkpoint,
			rollback_checkpoint, archive_dir, status, reexecuted, created_at, finished_at, kind, conflicts)
			SELECT (SELECT id FROM workspaces), id, decision_id, reason, command, scope, safety_checkpoint,
			rollback_checkpoint, archive_dir, status, reexecuted, created_at, finished_at, kind, conflicts FROM corrections`,
		// A failure's number is counted per workspace (the next is one more than the workspace's
		// highest), so a workspace's records replay into any database without colliding.
		`CREATE TABLE checkpoint_failures_new (
			workspace_id TEXT NOT NULL,
			id INTEGER NOT NULL,
			at INTEGER NOT NULL,
			reason TEXT NOT NULL,
			PRIMARY KEY (workspace_id, id)
		)`,
		`INSERT INTO checkpoint_failures_new (workspace_id, id, at, reason)
			SELECT (SELECT id FROM workspaces), id, at, reason FROM checkpoint_failures`,
		`CREATE TABLE ledger_new (
			workspace_id TEXT NOT NULL,
			seq INTEGER NOT NULL,
			name TEXT NOT NULL,
			at INTEGER NOT NULL,
			PRIMARY KEY (workspace_id, seq),
			UNIQUE (workspace_id, name)
		)`,
		`INSERT INTO ledger_new (workspace_id, seq, name, at) SELECT (SELECT id FROM workspaces), seq, name, at FROM ledger`,
		`CREATE TABLE operations_new (
			workspace_id TEXT NOT NULL,
			id TEXT NOT NULL,
			kind TEXT NOT NULL,
			args TEXT NOT NULL DEFAULT '[]',
			plan TEXT NOT NULL DEFAULT '',
			started_at INTEGER NOT NULL,
			finished_at INTEGER NOT NULL,
			outcome TEXT NOT NULL,
			checkpoints TEXT NOT NULL DEFAULT '[]',
			undo_checkpoint TEXT NOT NULL DEFAULT '',
			undone_by TEXT NOT NULL DEFAULT '',
			PRIMARY KEY (workspace_id, id)
		)`,
		`INSERT INTO operations_new (workspace_id, id, kind, args, plan, started_at, finished_at, outcome, checkpoints,
			undo_checkpoint, undone_by)
			SELECT (SELECT id FROM workspaces), id, kind, args, plan, started_at, finished_at, outcome, checkpoints,
			undo_checkpoint, undone_by FROM operations`,
		// Children before parents: PostgreSQL refuses to drop a table another references.
		`DROP TABLE attempts`,
		`DROP TABLE decisions`,
		`DROP TABLE plans`,
		`DROP TABLE checkpoints`,
		`DROP TABLE history`,
		`DROP TABLE corrections`,
		`DROP TABLE checkpoint_failures`,
		`DROP TABLE ledger`,
		`DROP TABLE operations`,
		`ALTER TABLE checkpoints_new RENAME TO checkpoints`,
		`ALTER TABLE history_new RENAME TO history`,
		`ALTER TABLE plans_new RENAME TO plans`,
		`ALTER TABLE decisions_new RENAME TO decisions`,
		`ALTER TABLE attempts_new RENAME TO attempts`,
		`ALTER TABLE corrections_new RENAME TO corrections`,
		`ALTER TABLE checkpoint_failures_new RENAME TO checkpoint_failures`,
		`ALTER TABLE ledger_new RENAME TO ledger`,
		`ALTER TABLE operations_new RENAME TO operations`,
		`CREATE INDEX checkpoints_created ON checkpoints(workspace_id, created_at DESC, id DESC)`,
		`CREATE INDEX attempts_checkpoint ON attempts(workspace_id, checkpoint_id)`,
		`CREATE INDEX operations_started ON operations(workspace_id, started_at DESC, id DESC)`,
	}},
	{11, "agent sessions: decisions recorded from outside, turns, and reads that do not grow with a plan", []string{
		`ALTER TABLE decisions ADD COLUMN kind TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE plans ADD COLUMN turns TEXT NOT NULL DEFAULT '[]'`,
		`CREATE INDEX decisions_position ON decisions(workspace_id, plan_id, position)`,
		`CREATE INDEX attempts_status ON attempts(workspace_id, status)`,
	}},
	{12, "corrected commands: the correction that replaced a decision's command, and the plan file's it replaced", []string{
		`ALTER TABLE decisions ADD COLUMN corrected_by TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE decisions ADD COLUMN file_run TEXT NOT NULL DEFAULT ''`,
	}},
}

// replacesTables lists the steps that drop and recreate tables other tables reference. SQLite runs
// them with foreign keys off (dropping a parent with them on would delete its children's rows) and
// checks the keys before the step commits; PostgreSQL's transactional DDL needs neither.
var replacesTables = map[int]bool{10: true}

// checkSchema refuses a database that an initialised workspace should have filled but that is
// empty, or lacks a table its recorded schema version promises: such a database is damage (a
// truncated copy, a zero-byte file, a dropped schema), and treating it as fresh would let gc
// delete every object the lost rows referenced. fresh allows an empty database (plan init in a
// workspace whose store is empty, so nothing can be lost).
//
// The tables and the version are two statements, and another process may commit a migration
// step between them (many open one PostgreSQL database at once), which makes a healthy database
// look as if it lacked a table. So a verdict of damage stands only once the tables, read again,
// are the ones it was made from; otherwise the check runs again on the new reading (each rerun
// means a step committed meanwhile, and there are only so many steps). A healthy database costs
// the two statements it always did. It returns the schema version it read (0: none yet).
func (d *DB) checkSchema(ctx context.Context, fresh bool) (int, error) {
	g := d.gorm.WithContext(ctx)
	names, err := d.tableNames(g)
	if err != nil {
		return 0, fmt.Errorf("read the schema: %w", err)
	}
	for range len(migrations) + 2 {
		current, verdict, err := d.judgeSchema(g, names, fresh)
		if err != nil || verdict == nil {
			return current, err
		}
		again, err := d.tableNames(g)
		if err != nil {
			return 0, fmt.Errorf("read the schema: %w", err)
		}
		if sameNames(names, again) {
			return 0, verdict
		}
		names = again
	}
	return 0, fault.Conflict("the schema of the metadata database %s kept changing while it was read: try again", d.target.shown)
}

// judgeSchema reads the schema version and returns it with the damage names (the database's
// tables) show for it, or nil; err is a failure to read.
func (d *DB) judgeSchema(g *gorm.DB, names []string, fresh bool) (current int, verdict, err error) {
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	if foreign, err := d.foreignSchema(g, have, fresh); err != nil || foreign != nil {
		return 0, foreign, err
	}
	if !have["schema_migrations"] {
		if fresh && len(names) == 0 {
			return 0, nil, nil
		}
		return 0, fault.Integrity("the metadata database %s is empty or not plan's (no schema): run `plan doctor --rebuild`", d.target.shown), nil
	}
	current, err = schemaVersion(g)
	if err != nil {
		return 0, nil, err
	}
	if current == 0 && !fresh {
		return 0, fault.Integrity("the metadata database %s holds no schema version: run `plan doctor --rebuild`", d.target.shown), nil
	}
	for _, t := range tablesAt(current) {
		if !have[t] {
			return 0, fault.Integrity("the metadata database %s is missing its %s table (schema version %d): run `plan doctor --rebuild`",
				d.target.shown, t, current), nil
		}
	}
	return current, nil, nil
}

// foreignSchema says a database holds another application's tables, which plan must neither
// adopt nor advise to rebuild: a schema_migrations table of another shape (golang-migrate's,
// Rails'), or, where a new workspace's database is asked for (fresh), tables of which none is
// plan's. It is invalid input: a DSN plan cannot use. (Some of plan's tables without the rest is
// plan's own database, damaged: judgeSchema's verdict.)
func (d *DB) foreignSchema(g *gorm.DB, have map[string]bool, fresh bool) (error, error) {
	if !have["schema_migrations"] {
		if fresh && len(have) > 0 && !slices.ContainsFunc(tablesAt(latestSchema()), func(n string) bool { return have[n] }) {
			return fault.Invalid("the metadata database %s holds another application's tables (%s) and no plan schema: give plan an empty database, or one of its own", d.target.shown, sampleNames(have)), nil
		}
		return nil, nil
	}
	cols, err := d.columnsOf(g, "schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("read the schema: %w", err)
	}
	if !cols["version"] || !cols["name"] || !cols["applied_at"] {
		return fault.Invalid("the metadata database %s holds another application's schema_migrations table: give plan an empty database, or one of its own", d.target.shown), nil
	}
	return nil, nil
}

// sampleNames lists a few of the table names, sorted.
func sampleNames(have map[string]bool) string {
	names := slices.Sorted(maps.Keys(have))
	if len(names) > 3 {
		names = append(names[:3], "…")
	}
	return strings.Join(names, ", ")
}

func sameNames(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// migrate applies the steps the database lacks, each in its own transaction. adopt is the ID a
// database holding rows from before workspaces existed takes for its workspace. On PostgreSQL,
// where many processes may open one database at once, each step holds the schema's advisory lock
// and reads the version again under it, so a step runs once.
func (d *DB) migrate(ctx context.Context, adopt string) error {
	g := d.gorm.WithContext(ctx)
	err := g.Transaction(func(tx *gorm.DB) error {
		if err := d.lock(tx, schemaLock); err != nil {
			return err
		}
		return tx.Exec(d.ddl(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`)).Error
	})
	if err != nil {
		return fmt.Errorf("prepare schema table: %w", err)
	}
	current, err := schemaVersion(g)
	if err != nil {
		return err
	}
	latest := latestSchema()
	if current > latest {
		return fault.Conflict("the database schema (version %d) is newer than this plan binary understands (%d): upgrade plan", current, latest)
	}
	for _, m := range migrations {
		if m.version <= current {
			continue
		}
		if err := d.step(ctx, m, adopt); err != nil {
			return fmt.Errorf("migrate schema to version %d (%s): %w", m.version, m.name, err)
		}
	}
	return nil
}

func schemaVersion(g *gorm.DB) (int, error) {
	var v int
	if err := g.Raw(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v).Error; err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// step applies one migration step in a transaction.
func (d *DB) step(ctx context.Context, m migration, adopt string) (err error) {
	g := d.gorm.WithContext(ctx)
	if replacesTables[m.version] && d.dialect == SQLite {
		// Only outside a transaction does the pragma take effect; the one connection keeps it.
		if err := g.Exec(`PRAGMA foreign_keys = OFF`).Error; err != nil {
			return err
		}
		defer func() {
			if ferr := g.Exec(`PRAGMA foreign_keys = ON`).Error; err == nil && ferr != nil {
				err = ferr
			}
		}()
	}
	now := time.Now().UnixNano()
	return g.Transaction(func(tx *gorm.DB) error {
		if err := d.lock(tx, schemaLock); err != nil {
			return err
		}
		if v, err := schemaVersion(tx); err != nil || v >= m.version {
			return err // another process applied it while this one waited
		}
		for _, stmt := range m.sql {
			var args []any
			if strings.Contains(stmt, "@") {
				args = []any{sql.Named("workspace", adopt), sql.Named("now", now)}
			}
			if err := tx.Exec(d.ddl(stmt), args...).Error; err != nil {
				return err
			}
		}
		if replacesTables[m.version] && d.dialect == SQLite {
			var broken []map[string]any
			if err := tx.Raw(`PRAGMA foreign_key_check`).Scan(&broken).Error; err != nil {
				return err
			}
			if len(broken) > 0 {
				return fault.Integrity("the metadata database %s has %d rows whose parent is missing: run `plan doctor --rebuild`",
					d.target.shown, len(broken))
			}
		}
		return tx.Exec(`INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, now).Error
	})
}

// ddl is stmt as the database's dialect wants it.
func (d *DB) ddl(stmt string) string {
	if d.dialect == Postgres {
		return pgDDL(stmt)
	}
	return stmt
}
