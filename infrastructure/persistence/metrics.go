package persistence

import (
	"context"
	"strconv"
	"time"

	"github.com/planhq/plan/application"
)

// Metrics records checkpoint failures for `plan stats`.
type Metrics struct{ db *DB }

// NewMetrics returns the metrics on d.
func NewMetrics(d *DB) *Metrics { return &Metrics{db: d} }

var _ application.Metrics = (*Metrics)(nil)

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
		if err := u.tx.Exec(`INSERT INTO checkpoint_failures(at, reason) VALUES (?, ?)`, at.UnixNano(), reason).Error; err != nil {
			return err
		}
		var id int64
		if err := u.tx.Raw(`SELECT last_insert_rowid()`).Scan(&id).Error; err != nil {
			return err
		}
		u.touch("failure", strconv.FormatInt(id, 10))
		return nil
	})
}

// CheckpointFailures returns how many checkpoints failed.
func (m *Metrics) CheckpointFailures(ctx context.Context) (int, error) {
	var n int
	err := m.db.conn(ctx).Raw(`SELECT COUNT(*) FROM checkpoint_failures`).Scan(&n).Error
	return n, err
}
