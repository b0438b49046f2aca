package persistence

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

type checkpointRow struct {
	WorkspaceID   string `gorm:"column:workspace_id;primaryKey"`
	ID            string `gorm:"primaryKey"`
	Type          string
	Created       int64 `gorm:"column:created_at"`
	Note          string
	DecisionID    sql.NullString
	ParentID      sql.NullString
	GitCommit     sql.NullString
	RootTree      string
	Files         int64
	Bytes         int64
	StoredBytes   int64
	DurationNs    int64
	RollbackCount int
	Labels        string
	Pinned        bool
}

func (checkpointRow) TableName() string { return "checkpoints" }

// checkpointColumns are checkpointRow's columns, in the order of its fields.
const checkpointColumns = "workspace_id, id, type, created_at, note, decision_id, parent_id, git_commit, root_tree, " +
	"files, bytes, stored_bytes, duration_ns, rollback_count, labels, pinned"

// fields are the row's fields, in the order of checkpointColumns, to scan into.
func (r *checkpointRow) fields() []any {
	return []any{&r.WorkspaceID, &r.ID, &r.Type, &r.Created, &r.Note, &r.DecisionID, &r.ParentID, &r.GitCommit, &r.RootTree,
		&r.Files, &r.Bytes, &r.StoredBytes, &r.DurationNs, &r.RollbackCount, &r.Labels, &r.Pinned}
}

// findCheckpoints runs the query g selects checkpoints with and scans its rows. Listings of every
// checkpoint (checkpoint list, the short names of every command that prints IDs) read hundreds of
// rows: scanned field by field, not by gorm's reflection, which cost several times the query.
func (d *DB) findCheckpoints(g *gorm.DB) ([]checkpointRow, error) {
	rows, err := d.manyRows(g).Model(&checkpointRow{}).Select(checkpointColumns).Rows()
	out, err := scanRows(rows, err, (*checkpointRow).fields)
	return out, d.classify(err)
}

// manyRows is g for a read of many rows. On SQLite it drops its context's cancellation:
// mattn/go-sqlite3 steps every row in a goroutine of its own when the context can be cancelled (a
// goroutine and a channel per row, a quarter of the CPU of reading 500), and a read of the local
// file ends in milliseconds anyway. PostgreSQL keeps it: a server that stops answering is given up
// on when the context ends.
func (d *DB) manyRows(g *gorm.DB) *gorm.DB {
	if d.dialect != SQLite {
		return g
	}
	return g.WithContext(context.WithoutCancel(g.Statement.Context))
}

// scanRows reads every row of a query's rows (err is the query's error) into a T, through fields:
// the T's fields to scan into, in the query's column order. It closes rows. Its errors are the
// driver's, not yet classified (gorm translates a query's errors, not those of reading its rows):
// callers pass them through DB.classify.
func scanRows[T any](rows *sql.Rows, err error, fields func(*T) []any) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(fields(&v)...); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func nullable(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func toCheckpointRow(c *checkpoint.Checkpoint) checkpointRow {
	st := c.Stats()
	return checkpointRow{
		ID: string(c.ID()), Type: string(c.Type()), Created: c.CreatedAt().UnixNano(), Note: c.Note(),
		DecisionID: nullable(c.DecisionID()), ParentID: nullable(string(c.ParentID())),
		GitCommit: nullable(c.GitCommit()), RootTree: c.Root().String(),
		Files: st.Files, Bytes: st.Bytes, StoredBytes: st.StoredBytes, DurationNs: int64(st.Duration),
		RollbackCount: c.RollbackCount(), Labels: labelsJSON(c.Labels()), Pinned: c.Pinned(),
	}
}

// labelsJSON encodes a label set; a map of strings always encodes.
func labelsJSON(l map[string]string) string {
	if len(l) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(l) // #nosec G104 -- a map[string]string cannot fail to encode
	return string(b)
}

// parseLabels reads what labelsJSON wrote; anything else is damage to the database.
func parseLabels(s, what string) (map[string]string, error) {
	l := map[string]string{}
	if s == "" {
		return l, nil
	}
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return nil, fault.Wrap(fault.ErrIntegrity, err, "the labels of %s are damaged", what)
	}
	return l, nil
}

func (r checkpointRow) toDomain() (*checkpoint.Checkpoint, error) {
	root, err := tree.ParseHash(r.RootTree)
	if err != nil {
		return nil, fault.Wrap(fault.ErrIntegrity, err, "checkpoint %s has a damaged root tree reference", r.ID)
	}
	labels, err := parseLabels(r.Labels, "checkpoint "+r.ID)
	if err != nil {
		return nil, err
	}
	return checkpoint.Rehydrate(checkpoint.Params{
		ID: r.ID, Type: checkpoint.Type(r.Type), CreatedAt: time.Unix(0, r.Created), Note: r.Note,
		DecisionID: r.DecisionID.String, ParentID: checkpoint.ID(r.ParentID.String),
		GitCommit: r.GitCommit.String, Root: root,
		Stats: checkpoint.Stats{
			Files: r.Files, Bytes: r.Bytes, StoredBytes: r.StoredBytes, Duration: time.Duration(r.DurationNs),
		},
		Labels: labels, Pinned: r.Pinned,
	}, r.RollbackCount), nil
}

// Checkpoints is the checkpoint repository.
type Checkpoints struct{ db *DB }

// NewCheckpoints returns the repository on d.
func NewCheckpoints(d *DB) *Checkpoints { return &Checkpoints{db: d} }

var _ checkpoint.Repository = (*Checkpoints)(nil)

// Add inserts c.
func (r *Checkpoints) Add(ctx context.Context, c *checkpoint.Checkpoint) error {
	row := toCheckpointRow(c)
	row.WorkspaceID = r.db.workspace
	return r.db.write(ctx, "checkpoint", row.ID, func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return inserted(err, "checkpoint %s", c.ID())
		}
		return nil
	})
}

// Get loads a checkpoint by full ID.
func (r *Checkpoints) Get(ctx context.Context, id checkpoint.ID) (*checkpoint.Checkpoint, error) {
	var row checkpointRow
	if err := r.db.scoped(ctx).Where("id = ?", string(id)).Take(&row).Error; err != nil {
		return nil, notFound(err, "checkpoint %s not found", id)
	}
	return row.toDomain()
}

// Resolve finds the single checkpoint whose ID starts with ref.
func (r *Checkpoints) Resolve(ctx context.Context, ref string) (*checkpoint.Checkpoint, error) {
	row, err := resolvePrefix[checkpointRow](ctx, r.db, "checkpoint", ref, func(c checkpointRow) string { return c.ID })
	if err != nil {
		return nil, err
	}
	return row.toDomain()
}

// IDs returns every checkpoint's ID.
func (r *Checkpoints) IDs(ctx context.Context) ([]checkpoint.ID, error) {
	rows, err := r.db.manyRows(r.db.scoped(ctx)).Model(&checkpointRow{}).Select("id").Rows()
	ids, err := scanRows(rows, err, func(id *checkpoint.ID) []any { return []any{(*string)(id)} })
	if err != nil {
		return nil, fmt.Errorf("list checkpoints: %w", r.db.classify(err))
	}
	return ids, nil
}

// List returns every checkpoint, newest first.
func (r *Checkpoints) List(ctx context.Context) ([]*checkpoint.Checkpoint, error) {
	rows, err := r.db.findCheckpoints(r.db.scoped(ctx).Order("created_at DESC, id DESC"))
	if err != nil {
		return nil, fmt.Errorf("list checkpoints: %w", err)
	}
	out := make([]*checkpoint.Checkpoint, 0, len(rows))
	for _, row := range rows {
		c, err := row.toDomain()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// ListSince returns the checkpoints created at or after t, oldest first.
func (r *Checkpoints) ListSince(ctx context.Context, t time.Time) ([]*checkpoint.Checkpoint, error) {
	rows, err := r.db.findCheckpoints(r.db.scoped(ctx).Where("created_at >= ?", t.UnixNano()).Order("created_at, id"))
	if err != nil {
		return nil, fmt.Errorf("list checkpoints: %w", err)
	}
	out := make([]*checkpoint.Checkpoint, 0, len(rows))
	for _, row := range rows {
		c, err := row.toDomain()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Latest returns the newest checkpoint.
func (r *Checkpoints) Latest(ctx context.Context) (*checkpoint.Checkpoint, error) {
	var row checkpointRow
	if err := r.db.scoped(ctx).Order("created_at DESC, id DESC").Take(&row).Error; err != nil {
		return nil, notFound(err, "no checkpoint yet")
	}
	return row.toDomain()
}

// Delete removes a checkpoint's row.
func (r *Checkpoints) Delete(ctx context.Context, id checkpoint.ID) error {
	return r.db.write(ctx, "checkpoint", string(id), func(tx *gorm.DB) error {
		res := tx.Where("workspace_id = ? AND id = ?", r.db.workspace, string(id)).Delete(&checkpointRow{})
		if res.Error != nil {
			return fmt.Errorf("delete checkpoint %s: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return fault.NotFound("checkpoint %s not found", id)
		}
		return nil
	})
}

// Update loads a checkpoint, applies fn and saves the result, in one transaction.
func (r *Checkpoints) Update(ctx context.Context, id checkpoint.ID, fn func(*checkpoint.Checkpoint) error) error {
	return NewTransactor(r.db).Do(ctx, func(ctx context.Context) error {
		c, err := r.Get(ctx, id)
		if err != nil {
			return err
		}
		if err := fn(c); err != nil {
			return err
		}
		row := toCheckpointRow(c)
		row.WorkspaceID = r.db.workspace
		return r.db.write(ctx, "checkpoint", row.ID, func(tx *gorm.DB) error { return tx.Save(&row).Error })
	})
}
