package persistence

import (
	"context"
	"strconv"
	"time"

	"github.com/planhq/plan/application/port"
)

// Metrics records checkpoint failures for `plan stats`.
type Metrics struct{ db *DB }

// NewMetrics returns the metrics on d.
func NewMetrics(d *DB) *Metrics { return &Metrics{db: d} }

var _ port.Metrics = (*Metrics)(nil)

// RecordCheckpointFailure counts one failed checkpoint.
func (m *Metrics) RecordCheckpointFailure(ctx context.Context, at time.Time, reason string) error {
	if len(reason) > 1024 {
		reason = reason[:1024]
	}
	return m.db.do(ctx, func(ctx context.Context) error {
		u, err := unitOf(ctx)
		if err != nil {
			return err
		}
		// The workspace's next number: its writes are serialised, so the highest is stable here.
		var id int64
		if err := u.tx.Raw(`INSERT INTO checkpoint_failures(workspace_id, id, at, reason)
			SELECT CAST(? AS TEXT), COALESCE(MAX(id), 0) + 1, CAST(? AS BIGINT), CAST(? AS TEXT)
			FROM checkpoint_failures WHERE workspace_id = ? RETURNING id`,
			m.db.workspace, at.UnixNano(), reason, m.db.workspace).Scan(&id).Error; err != nil {
			return err
		}
		u.touch("failure", strconv.FormatInt(id, 10))
		return nil
	})
}

// CheckpointFailures returns how many checkpoints failed.
func (m *Metrics) CheckpointFailures(ctx context.Context) (int, error) {
	var n int64
	err := m.db.scoped(ctx).Table("checkpoint_failures").Count(&n).Error
	return int(n), err
}
