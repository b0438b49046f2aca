package persistence

import (
	"context"
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
	return m.db.conn(ctx).Exec(`INSERT INTO checkpoint_failures(at, reason) VALUES (?, ?)`, at.UnixNano(), reason).Error
}

// CheckpointFailures returns how many checkpoints failed.
func (m *Metrics) CheckpointFailures(ctx context.Context) (int, error) {
	var n int
	err := m.db.conn(ctx).Raw(`SELECT COUNT(*) FROM checkpoint_failures`).Scan(&n).Error
	return n, err
}
