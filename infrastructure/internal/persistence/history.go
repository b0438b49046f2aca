package persistence

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
)

type historyRow struct {
	WorkspaceID      string `gorm:"column:workspace_id;primaryKey"`
	ID               string `gorm:"primaryKey"`
	Kind             string
	TargetCheckpoint string
	BackupCheckpoint string
	StartedAt        int64 `gorm:"column:started_at"`
	FinishedAt       int64 `gorm:"column:finished_at"`
	Added            int
	Modified         int
	Deleted          int
	Reverted         string
}

func (historyRow) TableName() string { return "history" }

// History is the operation history.
type History struct{ db *DB }

// NewHistory returns the history on d.
func NewHistory(d *DB) *History { return &History{db: d} }

var _ port.History = (*History)(nil)

// Record inserts a finished operation.
func (h *History) Record(ctx context.Context, r port.HistoryRecord) error {
	rev, err := json.Marshal(append([]string{}, r.Reverted...))
	if err != nil {
		return err
	}
	row := historyRow{
		WorkspaceID: h.db.workspace, ID: r.ID, Kind: r.Kind, TargetCheckpoint: string(r.TargetCheckpoint), BackupCheckpoint: string(r.BackupCheckpoint),
		StartedAt: r.StartedAt.UnixNano(), FinishedAt: r.FinishedAt.UnixNano(),
		Added: r.Added, Modified: r.Modified, Deleted: r.Deleted, Reverted: string(rev),
	}
	return h.db.write(ctx, "history", row.ID, func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return inserted(err, "operation %s", r.ID)
		}
		return nil
	})
}

// Has reports whether operation id was recorded.
func (h *History) Has(ctx context.Context, id string) (bool, error) {
	var n int64
	if err := h.db.scoped(ctx).Model(&historyRow{}).Where("id = ?", id).Count(&n).Error; err != nil {
		return false, err
	}
	return n > 0, nil
}

// Get returns one record.
func (h *History) Get(ctx context.Context, id string) (port.HistoryRecord, error) {
	var row historyRow
	if err := h.db.scoped(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return port.HistoryRecord{}, notFound(err, "operation %s not found", id)
	}
	return row.toRecord()
}

// List returns the history, oldest first.
func (h *History) List(ctx context.Context) ([]port.HistoryRecord, error) {
	var rows []historyRow
	if err := h.db.scoped(ctx).Order("started_at, id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list history: %w", err)
	}
	out := make([]port.HistoryRecord, 0, len(rows))
	for _, r := range rows {
		rec, err := r.toRecord()
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

func (r historyRow) toRecord() (port.HistoryRecord, error) {
	var rev []string
	if err := json.Unmarshal([]byte(r.Reverted), &rev); err != nil {
		return port.HistoryRecord{}, fault.Wrap(fault.ErrIntegrity, err, "the record of operation %s is damaged", r.ID)
	}
	return port.HistoryRecord{
		ID: r.ID, Kind: r.Kind, TargetCheckpoint: checkpoint.ID(r.TargetCheckpoint), BackupCheckpoint: checkpoint.ID(r.BackupCheckpoint),
		StartedAt: time.Unix(0, r.StartedAt).UTC(), FinishedAt: time.Unix(0, r.FinishedAt).UTC(),
		Added: r.Added, Modified: r.Modified, Deleted: r.Deleted, Reverted: rev,
	}, nil
}
