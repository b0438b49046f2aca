package application

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
)

// An undo or a redo is a journaled rollback plus operation-log bookkeeping: its own entry, the
// entries it marks undone (or standing again), the decision states it gives back. That bookkeeping
// is a log step carried in the rollback's journal detail, and done in the rollback's own
// transaction, the commit point that crash recovery runs again: a kill at any moment leaves either
// the workspace as it was and the log without the undo, or both changed. (Done after the journaled
// rollback, a kill between the two left the workspace undone and the log not, and the next
// `plan undo` undid the same operation again.)

// logStep is what an undo or redo logs, decided before its rollback starts.
type logStep struct {
	// Entry is the undo or redo entry (its ID is the rollback's); its end and its checkpoints
	// (the target and the pre_rollback one) are filled in when it commits.
	Entry stepEntry `json:"entry"`
	// Undone, for an undo, are the entries it undoes, newest first.
	Undone []string `json:"undone,omitempty"`
	// Redo, for a redo, is the undo it takes back, and Redone what that undo had undone (newest
	// first), which stands again.
	Redo   string      `json:"redo,omitempty"`
	Redone []stepEntry `json:"redone,omitempty"`
}

// stepEntry is the part of a log entry a step needs.
type stepEntry struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	Args      []string  `json:"args,omitempty"`
	Plan      string    `json:"plan,omitempty"`
	StartedAt time.Time `json:"started_at"`
}

// stepOutcome is what a committed log step did, for the use case to report.
type stepOutcome struct {
	entry port.LoggedOperation
	// restored are the decisions given back the status they had; reverted those reverted again.
	restored, reverted []string
}

// stepDetail is the journal detail of a rollback that restores files and decision states and
// then does step.
func stepDetail(step logStep) ([]byte, error) {
	b, err := json.Marshal(rollbackDetail{Mode: RestoreBoth, Log: &step})
	if err != nil {
		return nil, fmt.Errorf("journal the %s: %w", step.Entry.Kind, err)
	}
	return b, nil
}

// logStep does the log step op's detail carries, if any, inside the rollback's transaction (after
// the rollback is recorded), and keeps its outcome for takeStep.
func (o *Operations) logStep(ctx context.Context, op port.Operation) error {
	step := stepOf(op)
	if step == nil {
		return nil
	}
	if o.oplog == nil {
		return fmt.Errorf("%s %s: no operation log to record it in", step.Entry.Kind, op.ID)
	}
	e := step.Entry
	out := stepOutcome{entry: port.LoggedOperation{
		ID: op.ID, Kind: e.Kind, Args: e.Args, Plan: e.Plan, StartedAt: e.StartedAt, FinishedAt: o.clock.Now(),
		Outcome: OutcomeOK, Checkpoints: []checkpoint.ID{op.TargetCheckpoint, op.BackupCheckpoint},
	}}
	var err error
	if step.Redo != "" {
		err = o.redoStep(ctx, step, &out)
	} else {
		err = o.undoStep(ctx, op, step, &out)
	}
	if err != nil {
		return err
	}
	o.steps.Store(op.ID, out)
	return nil
}

// undoStep gives back the decisions the undone operations reverted (newest first, as undoing them
// one by one would), then reverts every attempt started after the target: the rollback did so for
// those that stood, and an attempt an undone rollback had reverted that started after the target
// must stay reverted. Then it logs the undo and marks what it undid.
func (o *Operations) undoStep(ctx context.Context, op port.Operation, step *logStep, out *stepOutcome) error {
	for _, id := range step.Undone {
		r, err := o.unrevert(ctx, id)
		if err != nil {
			return err
		}
		out.restored = appendNew(out.restored, r...)
		if err := o.uncorrect(ctx, id); err != nil {
			return err
		}
	}
	target, err := o.checkpoints.Get(ctx, op.TargetCheckpoint)
	if err != nil {
		return err
	}
	again, err := o.revertAfter(ctx, target, op.ID, step.Entry.Plan)
	if err != nil {
		return err
	}
	for _, d := range again {
		out.restored = slices.DeleteFunc(out.restored, func(x string) bool { return x == d })
	}
	out.reverted = again
	if err := o.oplog.Add(ctx, out.entry); err != nil {
		return err
	}
	for _, id := range step.Undone {
		if err := o.oplog.MarkUndone(ctx, id, op.ID); err != nil {
			return err
		}
	}
	return nil
}

// redoStep gives back the decision states the undo reverted, reverts again what the operations it
// had undone reverted (oldest first), logs the redo, marks the undo taken back and what it undid
// standing again.
func (o *Operations) redoStep(ctx context.Context, step *logStep, out *stepOutcome) error {
	restored, err := o.unrevert(ctx, step.Redo)
	if err != nil {
		return err
	}
	out.restored = restored
	for i := len(step.Redone) - 1; i >= 0; i-- {
		r, err := o.rerevert(ctx, step.Redone[i])
		if err != nil {
			return err
		}
		out.reverted = appendNew(out.reverted, r...)
		if err := o.recorrect(ctx, step.Redone[i]); err != nil {
			return err
		}
	}
	if err := o.oplog.Add(ctx, out.entry); err != nil {
		return err
	}
	if err := o.oplog.MarkUndone(ctx, step.Redo, out.entry.ID); err != nil {
		return err
	}
	for _, e := range step.Redone {
		if err := o.oplog.MarkUndone(ctx, e.ID, ""); err != nil {
			return err
		}
	}
	return nil
}

// stepOf is the log step op's journal detail carries (nil for a rollback without one; a detail
// that does not parse has none: rollbackMode reads it as a rollback of files and states).
func stepOf(op port.Operation) *logStep {
	var d rollbackDetail
	if len(op.Detail) == 0 || json.Unmarshal(op.Detail, &d) != nil {
		return nil
	}
	return d.Log
}

// takeStep returns (and forgets) the outcome of rollback id's log step.
func (o *Operations) takeStep(id string) (stepOutcome, bool) {
	v, ok := o.steps.LoadAndDelete(id)
	if !ok {
		return stepOutcome{}, false
	}
	out, ok := v.(stepOutcome)
	return out, ok
}
