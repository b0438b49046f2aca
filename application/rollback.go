package application

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/tree"
)

// The one rollback (restore) and what it is built of: the previews of a dry run, the tree a
// partial restore goes to, the journaled change (journalTo), and its finisher, the database side
// of a rollback (finishRollback), which recovery also runs for a rollback a crash interrupted.

func (o *Operations) previewRollback(ctx context.Context, target *checkpoint.Checkpoint, p port.Progress) (RollbackResult, error) {
	want, err := o.entries(target)
	if err != nil {
		return RollbackResult{}, err
	}
	live, err := o.snap.Scan(ctx, p)
	if err != nil {
		return RollbackResult{}, fmt.Errorf("scan the workspace: %w", err)
	}
	changes := tree.Diff(live, want)
	return RollbackResult{Target: target, Changes: changes, Counts: Count(changes), DryRun: true}, nil
}

// grafted returns the tree a per-path restore makes: base with req.Paths as target holds them.
func (o *Operations) grafted(base []tree.Entry, target *checkpoint.Checkpoint, paths []string) ([]tree.Entry, error) {
	want, err := o.entries(target)
	if err != nil {
		return nil, err
	}
	return tree.Graft(base, want, paths)
}

// previewPaths is previewRollback for a per-path restore.
func (o *Operations) previewPaths(ctx context.Context, target *checkpoint.Checkpoint, req RollbackRequest) (RollbackResult, error) {
	live, err := o.snap.Scan(ctx, req.Progress)
	if err != nil {
		return RollbackResult{}, fmt.Errorf("scan the workspace: %w", err)
	}
	merged, err := o.grafted(live, target, req.Paths)
	if err != nil {
		return RollbackResult{}, err
	}
	changes := tree.Diff(live, merged)
	return RollbackResult{Target: target, Changes: changes, Counts: Count(changes), DryRun: true}, nil
}

// restoreSpec is what restore takes the workspace back to, and how.
type restoreSpec struct {
	// target is the checkpoint to go back to; id names it when target is nil.
	target *checkpoint.Checkpoint
	id     checkpoint.ID
	// req.Mode RestoreState marks decisions reverted and touches no file; req.Paths restores only
	// those paths of target; req.Progress, Warn and NeverUndo go to the journaled change.
	req RollbackRequest
	// op is the journaled kind and the detail its finisher needs (nil: a plain rollback).
	op *port.Operation
	// backup is the safety checkpoint the caller already recorded (a correction's
	// pre_correction); nil has restore record a pre_rollback one.
	backup *checkpoint.Checkpoint
	// keep are paths that stay as they are live (run --rerun-changed keeps the plan file it runs);
	// req.Paths, when set, wins over it.
	keep []string
}

// restore is the one rollback every use case goes through (rollback and per-path restore,
// correction, undo and redo, a run's on_failure rollback, rerun-changed). It records the workspace
// as a safety checkpoint (unless the caller did), works out the tree to go to (target's; with
// paths, the record with those paths grafted from target; with keep, target's with those paths as
// they are live), stores it before the journal names it, and takes the workspace there under the
// journal (journalTo). The caller holds the guard.
func (o *Operations) restore(ctx context.Context, r restoreSpec) (RollbackResult, error) {
	target := r.target
	if target == nil {
		var err error
		if target, err = o.checkpoints.Get(ctx, r.id); err != nil {
			return RollbackResult{}, err
		}
	}
	if r.req.Mode == RestoreState {
		return o.restoreState(ctx, target, r.req.DryRun)
	}
	paths, keep := r.req.Paths, r.keep
	for _, p := range keep {
		if err := tree.ValidatePath(p); err != nil {
			return RollbackResult{}, err
		}
	}
	if o.trees == nil { // optional in OperationsParams
		if len(paths) > 0 { // refuse before recording anything
			return RollbackResult{}, errors.New("per-path restore is not wired: Operations has no TreeWriter")
		}
		keep = nil // nothing to store a kept tree in: a whole rollback
	}
	backup := r.backup
	if backup == nil {
		note, what := "before rollback to "+string(target.ID()), "rolling back"
		switch {
		case len(paths) > 0:
			note, what = fmt.Sprintf("before restoring %s from %s", strings.Join(paths, ", "), target.ID()), "restoring"
		case len(keep) > 0:
			note = fmt.Sprintf("before rollback to %s (keeping %s)", target.ID(), strings.Join(keep, ", "))
		}
		var err error
		backup, err = o.create(ctx, CreateRequest{
			Type: checkpoint.PreRollback, Progress: r.req.Progress, Warn: r.req.Warn, AlsoExclude: target.Root(), Note: note,
		})
		if err != nil {
			return RollbackResult{}, fmt.Errorf("record the current state before %s: %w", what, err)
		}
	}
	root := target.Root()
	if len(paths) > 0 || len(keep) > 0 {
		merged, res, err := o.mergedTree(ctx, target, backup, r.backup == nil, paths, keep)
		if err != nil {
			return res, err
		}
		if root, err = o.trees.StoreEntries(merged, nil); err != nil {
			return RollbackResult{Backup: backup}, fmt.Errorf("store the restored tree: %w", err)
		}
	}
	return o.journalTo(ctx, target, root, r.req, r.op, backup)
}

// mergedTree is the tree a partial restore goes to: backup (the workspace as recorded) with paths
// grafted from target, or target with keep grafted from backup. A per-path graft that fails
// deletes the safety checkpoint restore took (owned) for a restore that never started: it would
// be litter; a caller's own is left alone. A failure to delete it names it in the result.
func (o *Operations) mergedTree(ctx context.Context, target, backup *checkpoint.Checkpoint, owned bool, paths, keep []string) ([]tree.Entry, RollbackResult, error) {
	live, err := o.entries(backup)
	if err != nil {
		return nil, RollbackResult{}, err
	}
	if len(keep) > 0 {
		want, err := o.entries(target)
		if err != nil {
			return nil, RollbackResult{}, err
		}
		merged, err := tree.Graft(want, live, present(keep, want, live))
		return merged, RollbackResult{}, err
	}
	merged, err := o.grafted(live, target, paths)
	if err != nil && owned {
		if derr := o.checkpoints.Delete(ctx, backup.ID()); derr != nil {
			return nil, RollbackResult{Backup: backup}, errors.Join(err, derr)
		}
	}
	return merged, RollbackResult{}, err
}

// journalTo takes the workspace, recorded as backup, to tree root (target's, or a partial
// restore's graft of it) under the journal: restore's last step, the journaled change.
func (o *Operations) journalTo(ctx context.Context, target *checkpoint.Checkpoint, root tree.Hash, req RollbackRequest, op *port.Operation, backup *checkpoint.Checkpoint) (RollbackResult, error) {
	changes, err := o.store.DiffTrees(backup.Root(), root)
	if err != nil {
		return RollbackResult{}, fmt.Errorf("compare with checkpoint %s: %w", target.ID(), err)
	}
	if op == nil {
		op = &port.Operation{Kind: kindRollback}
	}
	if op.ID == "" {
		op.ID = ident.New(o.clock.Now())
	}
	op.Source, op.Target = backup.Root(), root
	op.TargetCheckpoint, op.BackupCheckpoint = target.ID(), backup.ID()
	op.StartedAt = o.clock.Now()
	counts := Count(changes)
	op.Counts = counts
	if changes == nil {
		changes = []tree.Change{} // compared: nothing differs (nil would have the restorer compare again)
	}
	stats, err := o.guard.Change(ctx, *op, changes, req.Progress, req.NeverUndo)
	if err != nil {
		return RollbackResult{Target: target, Backup: backup}, fmt.Errorf("roll back to %s: %w", target.ID(), err)
	}
	rec, err := o.history.Get(ctx, op.ID)
	if err != nil {
		return RollbackResult{}, fmt.Errorf("read back rollback %s: %w", op.ID, err)
	}
	return RollbackResult{
		OperationID: op.ID, Target: target, Backup: backup, Changes: changes, Counts: counts,
		RevertedDecisions: rec.Reverted, Kept: stats.Kept,
	}, nil
}

// finishRollback is the database side of a rollback: count it on the target, mark later decisions
// reverted and record it in the history, in one transaction. It is idempotent.
func (o *Operations) finishRollback(ctx context.Context, op port.Operation) error {
	return o.tx.Do(ctx, func(ctx context.Context) error {
		done, err := o.history.Has(ctx, op.ID)
		if err != nil || done {
			return err
		}
		if err := o.recordRollback(ctx, op); err != nil {
			return err
		}
		return o.logStep(ctx, op)
	})
}

// recordRollback is finishRollback's body for callers that already run a transaction and checked
// that op is not recorded yet.
func (o *Operations) recordRollback(ctx context.Context, op port.Operation) error {
	var target *checkpoint.Checkpoint
	err := o.checkpoints.Update(ctx, op.TargetCheckpoint, func(c *checkpoint.Checkpoint) error {
		c.RecordRollback()
		target = c
		return nil
	})
	if err != nil {
		return err
	}
	var reverted []string
	if op.Kind != kindRollback || rollbackMode(op) != RestoreFiles {
		if reverted, err = o.revertAfter(ctx, target, op.ID, operationPlan(op)); err != nil {
			return err
		}
	}
	return o.history.Record(ctx, port.HistoryRecord{
		ID: op.ID, Kind: op.Kind, TargetCheckpoint: op.TargetCheckpoint,
		BackupCheckpoint: op.BackupCheckpoint, StartedAt: op.StartedAt, FinishedAt: o.clock.Now(),
		Added: op.Counts.Added, Modified: op.Counts.Modified, Deleted: op.Counts.Deleted, Reverted: reverted,
	})
}

// restoreState marks the decisions executed after target reverted, so the next run re-executes
// them, and leaves the workspace as it is (rollback --mode state). Dry, it only says which.
func (o *Operations) restoreState(ctx context.Context, target *checkpoint.Checkpoint, dry bool) (RollbackResult, error) {
	res := RollbackResult{Target: target, Mode: RestoreState, DryRun: dry}
	if dry {
		var err error
		res.RevertedDecisions, err = o.wouldRevert(ctx, target)
		return res, err
	}
	id := ident.New(o.clock.Now())
	err := o.tx.Do(ctx, func(ctx context.Context) error {
		reverted, err := o.revertAfter(ctx, target, id, "")
		if err != nil {
			return err
		}
		res.RevertedDecisions = reverted
		return o.history.Record(ctx, port.HistoryRecord{
			ID: id, Kind: kindRollback, TargetCheckpoint: target.ID(),
			StartedAt: o.clock.Now(), FinishedAt: o.clock.Now(), Reverted: reverted,
		})
	})
	return res, err
}

// present returns the paths of keep that either tree holds (a plan file .planignore excludes is in
// neither: nothing to keep).
func present(keep []string, a, b []tree.Entry) []string {
	var out []string
	for _, p := range keep {
		for _, e := range append(a[:len(a):len(a)], b...) {
			if e.Path == p {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
