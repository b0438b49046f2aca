package persistence

import (
	"context"
	"fmt"
	"regexp"
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
}

// createTable finds the tables a migration step creates.
var createTable = regexp.MustCompile(`^\s*CREATE TABLE (\w+)`)

// checkSchema refuses a database that an initialised workspace should have filled but that is
// empty, or lacks a table its recorded schema version promises: such a file is damage (a
// truncated copy, a zero-byte file), and treating it as fresh would let gc delete every object
// the lost rows referenced. fresh allows an empty file (plan init in a workspace whose store is
// empty, so nothing can be lost).
func (d *DB) checkSchema(ctx context.Context, fresh bool) error {
	var names []string
	if err := d.gorm.WithContext(ctx).Raw(`SELECT name FROM sqlite_master WHERE type = 'table'`).Scan(&names).Error; err != nil {
		return fmt.Errorf("read the schema: %w", err)
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	if !have["schema_migrations"] {
		if fresh && len(names) == 0 {
			return nil
		}
		return fault.Integrity("the metadata database %s is empty or not plan's (no schema): run `plan doctor --rebuild`", d.path)
	}
	var current int
	if err := d.gorm.WithContext(ctx).Raw(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current).Error; err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current == 0 && !fresh {
		return fault.Integrity("the metadata database %s holds no schema version: run `plan doctor --rebuild`", d.path)
	}
	for _, m := range migrations {
		if m.version > current {
			break
		}
		for _, stmt := range m.sql {
			if t := createTable.FindStringSubmatch(stmt); t != nil && !have[t[1]] {
				return fault.Integrity("the metadata database %s is missing its %s table (schema version %d): run `plan doctor --rebuild`",
					d.path, t[1], current)
			}
		}
	}
	return nil
}

func (d *DB) migrate(ctx context.Context) error {
	g := d.gorm.WithContext(ctx)
	if err := g.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`).Error; err != nil {
		return fmt.Errorf("prepare schema table: %w", err)
	}
	var current int
	if err := g.Raw(`SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current).Error; err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	latest := migrations[len(migrations)-1].version
	if current > latest {
		return fault.Conflict("the database schema (version %d) is newer than this plan binary understands (%d): upgrade plan", current, latest)
	}
	for _, m := range migrations {
		if m.version <= current {
			continue
		}
		err := g.Transaction(func(tx *gorm.DB) error {
			for _, stmt := range m.sql {
				if err := tx.Exec(stmt).Error; err != nil {
					return err
				}
			}
			return tx.Exec(`INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, time.Now().UnixNano()).Error
		})
		if err != nil {
			return fmt.Errorf("migrate schema to version %d (%s): %w", m.version, m.name, err)
		}
	}
	return nil
}
