package persistence

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
)

type operationRow struct {
	WorkspaceID    string `gorm:"column:workspace_id;primaryKey"`
	ID             string `gorm:"primaryKey"`
	Kind           string
	Args           string
	Plan           string
	StartedAt      int64 `gorm:"column:started_at"`
	FinishedAt     int64 `gorm:"column:finished_at"`
	Outcome        string
	Checkpoints    string
	UndoCheckpoint string `gorm:"column:undo_checkpoint"`
	UndoneBy       string `gorm:"column:undone_by"`
}

func (operationRow) TableName() string { return "operations" }

// OperationLog is the operation log (`plan history`).
type OperationLog struct{ db *DB }

// NewOperationLog returns the log on d.
func NewOperationLog(d *DB) *OperationLog { return &OperationLog{db: d} }

var _ port.OperationLog = (*OperationLog)(nil)

var _ port.OperationReplacer = (*OperationLog)(nil)

// Add appends a finished operation.
func (l *OperationLog) Add(ctx context.Context, op port.LoggedOperation) error {
	row, err := l.row(op)
	if err != nil {
		return err
	}
	return l.db.write(ctx, "operation", row.ID, func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return inserted(err, "operation %s", op.ID)
		}
		return nil
	})
}

// Replace writes op whole under its ID: inserted, or replacing the entry of that ID. In the
// caller's transaction (a command folds its entry into its own last one), it adds no durable write
// of its own: the transaction's single record holds the entry with the rest of the change.
func (l *OperationLog) Replace(ctx context.Context, op port.LoggedOperation) error {
	row, err := l.row(op)
	if err != nil {
		return err
	}
	return l.db.write(ctx, "operation", row.ID, func(tx *gorm.DB) error {
		if err := tx.Clauses(clause.OnConflict{UpdateAll: true}).Create(&row).Error; err != nil {
			return fmt.Errorf("write operation %s: %w", op.ID, err)
		}
		return nil
	})
}

func (l *OperationLog) row(op port.LoggedOperation) (operationRow, error) {
	args, err := json.Marshal(append([]string{}, op.Args...))
	if err != nil {
		return operationRow{}, err
	}
	cps := make([]string, 0, len(op.Checkpoints))
	for _, c := range op.Checkpoints {
		cps = append(cps, string(c))
	}
	cpJSON, err := json.Marshal(cps)
	if err != nil {
		return operationRow{}, err
	}
	return operationRow{
		WorkspaceID: l.db.workspace, ID: op.ID, Kind: op.Kind, Args: string(args), Plan: op.Plan, StartedAt: op.StartedAt.UnixNano(),
		FinishedAt: op.FinishedAt.UnixNano(), Outcome: op.Outcome, Checkpoints: string(cpJSON),
		UndoCheckpoint: string(op.UndoCheckpoint), UndoneBy: op.UndoneBy,
	}, nil
}

// MarkUndone records that operation id was undone by the operation by.
func (l *OperationLog) MarkUndone(ctx context.Context, id, by string) error {
	return l.db.write(ctx, "operation", id, func(tx *gorm.DB) error {
		res := tx.Model(&operationRow{}).Where("workspace_id = ? AND id = ?", l.db.workspace, id).Update("undone_by", by)
		if res.Error != nil {
			return fmt.Errorf("mark operation %s undone: %w", id, res.Error)
		}
		if res.RowsAffected == 0 {
			return fault.NotFound("operation %s not found", id)
		}
		return nil
	})
}

// List returns the operations newest first, at most limit of them (0: all), only those of plan
// when it is not "".
func (l *OperationLog) List(ctx context.Context, limit int, plan string) ([]port.LoggedOperation, error) {
	q := l.db.scoped(ctx).Order("started_at DESC, id DESC")
	if plan != "" {
		q = q.Where("plan = ?", plan)
	}
	if limit > 0 {
		q = q.Limit(limit)
	}
	var rows []operationRow
	if err := q.Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list operations: %w", err)
	}
	out := make([]port.LoggedOperation, 0, len(rows))
	for _, r := range rows {
		op := port.LoggedOperation{
			ID: r.ID, Kind: r.Kind, Plan: r.Plan, StartedAt: time.Unix(0, r.StartedAt).UTC(),
			FinishedAt: time.Unix(0, r.FinishedAt).UTC(), Outcome: r.Outcome,
			UndoCheckpoint: checkpoint.ID(r.UndoCheckpoint), UndoneBy: r.UndoneBy,
		}
		var cps []string
		if err := json.Unmarshal([]byte(r.Args), &op.Args); err != nil {
			return nil, fault.Wrap(fault.ErrIntegrity, err, "operation %s: its arguments are damaged", r.ID)
		}
		if err := json.Unmarshal([]byte(r.Checkpoints), &cps); err != nil {
			return nil, fault.Wrap(fault.ErrIntegrity, err, "operation %s: its checkpoints are damaged", r.ID)
		}
		for _, c := range cps {
			op.Checkpoints = append(op.Checkpoints, checkpoint.ID(c))
		}
		out = append(out, op)
	}
	return out, nil
}
