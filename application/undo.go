package application

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/plan"
)

// Undo, undo --to and redo. Every one is a rollback of the workspace and the decision states to a
// checkpoint the log names, under the journal, with its own safety checkpoint:
//
//   - undo rolls back to the safety checkpoint of the newest operation that stands (not undone); when
//     that checkpoint was deleted (pruned), it steps past the operation to the next one whose
//     checkpoint is left, undoing both, and warns;
//   - undo --to ENTRY restores the state right after ENTRY (as `jj op restore`): it undoes, as one
//     rollback, every operation that finished after ENTRY and stands, back to the safety checkpoint of
//     the oldest of them, which must be left;
//   - redo takes back the newest undo that stands, as long as nothing changed the workspace after it:
//     it rolls back to the checkpoint the undo took before it changed anything, and the operations it
//     undid stand again (a later undo takes them back again).
//
// The undo's log entry has the ID of its rollback, so a redo gives back exactly the decision states
// the undo's rollback reverted.

// UndoRequest asks to undo the most recent operation that can be, or, with To, every operation
// after the log entry To.
type UndoRequest struct {
	DryRun bool
	// To names a log entry (its ID or a unique prefix): restore the state right after it.
	To       string
	Progress port.Progress
	Warn     func(string)
}

// UndoResult says what was (or, dry, would be) undone.
type UndoResult struct {
	// Undone is the oldest operation undone: the one whose safety checkpoint the workspace went back
	// to. All are every operation undone, newest first (Undone last); Skipped those of them whose
	// safety checkpoint was deleted, stepped past.
	Undone  port.LoggedOperation
	All     []port.LoggedOperation
	Skipped []port.LoggedOperation
	// Operation is the undo's own log entry (zero when dry).
	Operation port.LoggedOperation
	Rollback  RollbackResult
	// Restored are the decisions the undone operations had reverted that got their status back.
	Restored []string
}

// workspaceNeutral are the logged kinds a redo can be made across: they change neither the files
// nor the decision states, or (run, exec) log what they changed as entries of their own (each
// decision, the rollback of --rerun-changed), which do block a redo. A recover only finishes or
// takes back an operation that had started (an undo or a redo it finishes logs its own entry, see
// logstep.go), and records what it would replace in a pre_recover checkpoint first.
var workspaceNeutral = map[string]bool{
	"init": true, "checkpoint": true, "delete": true, "prune": true, "gc": true, "pin": true, "unpin": true,
	"clone": true, "redo": true, "resolve": true, "run": true, "exec": true, "recover": true,
}

// after reports whether op finished after e (the log's order for undo --to; ties go by ID, which is
// time-ordered).
func after(op, e port.LoggedOperation) bool {
	if !op.FinishedAt.Equal(e.FinishedAt) {
		return op.FinishedAt.After(e.FinishedAt)
	}
	return op.ID > e.ID
}

// undid returns the IDs of the operations an undo entry undid, as its Args name them:
// [KIND ID MORE…] for a plain undo, [--to ENTRY ID…] for undo --to.
func undid(u port.LoggedOperation) []string {
	if len(u.Args) >= 2 && u.Args[0] == "--to" {
		return u.Args[2:]
	}
	if len(u.Args) >= 2 {
		return u.Args[1:]
	}
	return nil
}

// findEntry finds a log entry by ID or unique prefix.
func findEntry(ops []port.LoggedOperation, ref string) (port.LoggedOperation, error) {
	var found []port.LoggedOperation
	for _, op := range ops {
		if op.ID == ref {
			return op, nil
		}
		if strings.HasPrefix(op.ID, ref) {
			found = append(found, op)
		}
	}
	switch len(found) {
	case 0:
		return port.LoggedOperation{}, fault.NotFound("no operation %q in the log (plan history lists them)", ref)
	case 1:
		return found[0], nil
	}
	ids := make([]string, len(found))
	for i, op := range found {
		ids[i] = op.ID
	}
	return port.LoggedOperation{}, fault.Invalid("operation prefix %q is ambiguous: %s", ref, strings.Join(ids, ", "))
}

// safetyCheckpoint reads op's safety checkpoint; gone is true when it was deleted.
func (s *HistoryService) safetyCheckpoint(ctx context.Context, id checkpoint.ID) (cp *checkpoint.Checkpoint, gone bool, err error) {
	cp, err = s.checkpoints.Get(ctx, id)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, true, nil
	}
	return cp, false, err
}

// chooseUndo picks what a plain undo takes back: the newest standing operation, and past it, when
// its safety checkpoint is gone, the next ones until one whose checkpoint is left.
func (s *HistoryService) chooseUndo(ctx context.Context, ops []port.LoggedOperation, res *UndoResult) (*checkpoint.Checkpoint, error) {
	for _, op := range ops {
		if stateOnly(op) {
			// Going past it would undo an older operation, files and all, while the one the user
			// means (the newest) stays: refused, not guessed.
			return nil, fault.Conflict("the newest operation, rollback %s, changed decision states only (--mode state, rewind --state) and keeps no safety checkpoint: plan undo cannot take it back, and will not undo the operation before it instead; nothing was changed (`plan undo --to ENTRY` undoes everything after an entry you name)", op.ID)
		}
		if !undoable(op) {
			continue
		}
		cp, gone, err := s.safetyCheckpoint(ctx, op.UndoCheckpoint)
		if err != nil {
			return nil, err
		}
		res.All = append(res.All, op)
		if gone {
			res.Skipped = append(res.Skipped, op)
			continue
		}
		res.Undone = op
		return cp, nil
	}
	if len(res.Skipped) > 0 {
		last := res.Skipped[len(res.Skipped)-1]
		return nil, fault.Conflict("cannot undo %s %s: its safety checkpoint %s was deleted (pruned?), and so was every earlier operation's; nothing was changed",
			last.Kind, last.ID, last.UndoCheckpoint)
	}
	return nil, fault.NotFound("nothing to undo: no rollback, correction or decision is left that was not undone")
}

// chooseUndoTo picks what undo --to ENTRY takes back: every standing operation that finished after
// ENTRY; the workspace goes back to the safety checkpoint of the oldest of them.
func (s *HistoryService) chooseUndoTo(ctx context.Context, ops []port.LoggedOperation, ref string, res *UndoResult) (port.LoggedOperation, *checkpoint.Checkpoint, error) {
	e, err := findEntry(ops, ref)
	if err != nil {
		return e, nil, err
	}
	byID := map[string]port.LoggedOperation{}
	for _, op := range ops {
		byID[op.ID] = op
	}
	for _, op := range ops {
		if !after(op, e) {
			continue
		}
		// An undo or redo after ENTRY that changed an operation from before it: the state after
		// ENTRY cannot be had by undoing what came after (it would need that operation redone).
		if op.Kind == "undo" || op.Kind == "redo" {
			subject := op
			if op.Kind == "redo" && len(op.Args) == 2 {
				subject = byID[op.Args[1]]
			}
			for _, id := range undid(subject) {
				if x, ok := byID[id]; !ok || !after(x, e) {
					return e, nil, fault.Conflict("cannot restore the state after %s: %s %s, after it, changed %s, which came before it; undo or redo that first",
						e.ID, op.Kind, op.ID, id)
				}
			}
		}
		if undoable(op) {
			res.All = append(res.All, op)
		}
	}
	if len(res.All) == 0 {
		return e, nil, fault.NotFound("nothing to undo after %s %s: no rollback, correction or decision after it stands", e.Kind, e.ID)
	}
	res.Undone = res.All[len(res.All)-1]
	cp, gone, err := s.safetyCheckpoint(ctx, res.Undone.UndoCheckpoint)
	if err != nil {
		return e, nil, err
	}
	if gone {
		return e, nil, fault.Conflict("cannot restore the state after %s: the safety checkpoint %s of %s %s, the first operation after it, was deleted (pruned?); nothing was changed",
			e.ID, res.Undone.UndoCheckpoint, res.Undone.Kind, res.Undone.ID)
	}
	return e, cp, nil
}

// Undo undoes the most recent workspace-changing operation not undone yet (a rollback, a
// correction, a surgical revert, a decision), or with To every one after that log entry, by rolling
// the workspace and the decision states back to the safety checkpoint taken just before the
// (oldest) one. The undo is itself a rollback (its own pre_rollback checkpoint makes it reversible:
// `plan redo`) and an entry in the log; the entries it undid are marked, so the next undo goes
// further back.
func (s *HistoryService) Undo(ctx context.Context, req UndoRequest) (UndoResult, error) {
	var res UndoResult
	ctx, release, err := s.enterUnlessDry(ctx, req.DryRun, "undo")
	if err != nil {
		return res, err
	}
	defer release()
	ops, err := s.log.List(ctx, 0, "")
	if err != nil {
		return res, err
	}
	var target *checkpoint.Checkpoint
	args := []string{}
	if req.To != "" {
		var e port.LoggedOperation
		if e, target, err = s.chooseUndoTo(ctx, ops, req.To, &res); err != nil {
			return res, err
		}
		args = append(args, "--to", e.ID)
	} else if target, err = s.chooseUndo(ctx, ops, &res); err != nil {
		return res, err
	} else {
		args = append(args, res.Undone.Kind)
	}
	for i := len(res.All) - 1; i >= 0; i-- {
		args = append(args, res.All[i].ID)
	}
	if req.Warn != nil {
		for _, op := range res.Skipped {
			req.Warn(fmt.Sprintf("the safety checkpoint %s of %s %s was deleted (pruned?): undoing it too, back to the one of %s %s",
				op.UndoCheckpoint, op.Kind, op.ID, res.Undone.Kind, res.Undone.ID))
		}
	}
	if req.DryRun {
		res.Rollback, err = s.ops.previewRollback(ctx, target, req.Progress)
		res.Rollback.Mode = RestoreBoth
		return res, err
	}
	id := ident.New(s.clock.Now())
	step := logStep{Entry: stepEntry{ID: id, Kind: "undo", Args: args, Plan: res.Undone.Plan, StartedAt: s.clock.Now()}}
	for _, op := range res.All {
		step.Undone = append(step.Undone, op.ID)
	}
	detail, err := stepDetail(step)
	if err != nil {
		return res, err
	}
	// The log step (the undo's entry, what it marks undone, the decision states it gives back)
	// commits with the rollback: see logstep.go.
	res.Rollback, err = s.ops.restore(ctx, restoreSpec{target: target, req: RollbackRequest{Mode: RestoreBoth, Progress: req.Progress, Warn: req.Warn},
		op: &port.Operation{ID: id, Kind: kindRollback, Detail: detail}})
	if err != nil {
		return res, fmt.Errorf("undo %s %s: %w", res.Undone.Kind, res.Undone.ID, err)
	}
	res.Rollback.Mode = RestoreBoth
	out, ok := s.ops.takeStep(id)
	if !ok {
		return res, fmt.Errorf("undo %s %s: the rollback %s was recorded without its log step", res.Undone.Kind, res.Undone.ID, id)
	}
	res.Rollback.RevertedDecisions = appendNew(res.Rollback.RevertedDecisions, out.reverted...)
	res.Restored, res.Operation = out.restored, out.entry
	return res, nil
}

// appendNew appends the xs not in to already.
func appendNew(to []string, xs ...string) []string {
	for _, x := range xs {
		if !slices.Contains(to, x) {
			to = append(to, x)
		}
	}
	return to
}

// RedoRequest asks to take back the newest undo.
type RedoRequest struct {
	DryRun   bool
	Progress port.Progress
	Warn     func(string)
}

// RedoResult says what was (or, dry, would be) redone.
type RedoResult struct {
	// Undo is the undo taken back; Redone the operations it had undone, which stand again.
	Undo   port.LoggedOperation
	Redone []port.LoggedOperation
	// Operation is the redo's own log entry (zero when dry).
	Operation port.LoggedOperation
	Rollback  RollbackResult
	// Reverted are the decisions the redone operations had reverted, reverted again; Restored those
	// the undo had reverted, back as they were.
	Reverted []string
	Restored []string
}

// chooseRedo finds the newest undo that stands, refusing when an operation that changed the
// workspace came after it (a redo would throw that away).
func chooseRedo(ops []port.LoggedOperation) (port.LoggedOperation, error) {
	var blocker *port.LoggedOperation
	for i, op := range ops {
		switch {
		case op.Kind == "undo" && op.UndoneBy == "":
			if blocker != nil {
				return op, fault.Conflict("cannot redo undo %s: %s %s ran after it and a redo would throw its changes away (plan undo takes it back first)",
					op.ID, blocker.Kind, blocker.ID)
			}
			return op, nil
		case op.Kind == "undo" || workspaceNeutral[op.Kind]:
		default:
			if blocker == nil {
				blocker = &ops[i]
			}
		}
	}
	return port.LoggedOperation{}, fault.NotFound("nothing to redo: no undo is left that was not redone")
}

// Redo takes back the newest undo that stands (see the top of this file): the workspace and the
// decision states go back to how they were just before it, and what it undid stands again.
func (s *HistoryService) Redo(ctx context.Context, req RedoRequest) (RedoResult, error) {
	var res RedoResult
	ctx, release, err := s.enterUnlessDry(ctx, req.DryRun, "redo")
	if err != nil {
		return res, err
	}
	defer release()
	ops, err := s.log.List(ctx, 0, "")
	if err != nil {
		return res, err
	}
	if res.Undo, err = chooseRedo(ops); err != nil {
		return res, err
	}
	u := res.Undo
	for _, id := range undid(u) {
		for _, op := range ops {
			if op.ID == id {
				res.Redone = append(res.Redone, op)
			}
		}
	}
	// An undo logged before undo entries took their rollback's ID cannot say which decision states
	// its rollback changed.
	if len(u.Checkpoints) != 2 {
		return res, fault.Conflict("cannot redo undo %s: its log entry does not name the checkpoint it took before undoing", u.ID)
	}
	known, err := s.history.Has(ctx, u.ID)
	if err != nil {
		return res, err
	}
	if !known {
		return res, fault.Conflict("cannot redo undo %s: an older plan recorded it; `plan rollback --to-checkpoint %s` restores its files", u.ID, u.Checkpoints[1])
	}
	target, gone, err := s.safetyCheckpoint(ctx, u.Checkpoints[1])
	if err != nil {
		return res, err
	}
	if gone {
		return res, fault.Conflict("cannot redo undo %s: the checkpoint %s it took before undoing was deleted (pruned?); nothing was changed", u.ID, u.Checkpoints[1])
	}
	if req.DryRun {
		res.Rollback, err = s.ops.previewRollback(ctx, target, req.Progress)
		res.Rollback.Mode = RestoreBoth
		return res, err
	}
	id := ident.New(s.clock.Now())
	step := logStep{Entry: stepEntry{ID: id, Kind: "redo", Args: []string{"undo", u.ID}, Plan: u.Plan, StartedAt: s.clock.Now()}, Redo: u.ID}
	for _, op := range res.Redone {
		step.Redone = append(step.Redone, stepEntry{ID: op.ID, Kind: op.Kind, Plan: op.Plan})
	}
	detail, err := stepDetail(step)
	if err != nil {
		return res, err
	}
	res.Rollback, err = s.ops.restore(ctx, restoreSpec{target: target, req: RollbackRequest{Mode: RestoreBoth, Progress: req.Progress, Warn: req.Warn},
		op: &port.Operation{ID: id, Kind: kindRollback, Detail: detail}})
	if err != nil {
		return res, fmt.Errorf("redo undo %s: %w", u.ID, err)
	}
	res.Rollback.Mode = RestoreBoth
	out, ok := s.ops.takeStep(id)
	if !ok {
		return res, fmt.Errorf("redo undo %s: the rollback %s was recorded without its log step", u.ID, id)
	}
	res.Restored, res.Reverted, res.Operation = out.restored, out.reverted, out.entry
	return res, nil
}

// rerevert marks again the decisions op (a rollback, a correction, a revert) had reverted, as its
// history record names them. A decision's own entry has no record: the undo's rollback reverted it,
// and unreverting the undo gave it back.
func (o *Operations) rerevert(ctx context.Context, op stepEntry) ([]string, error) {
	rec, err := o.history.Get(ctx, op.ID)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, nil
	}
	if err != nil || len(rec.Reverted) == 0 {
		return nil, err
	}
	ps, err := o.plans.List(ctx)
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	// The record names its own plan's decisions bare and another plan's as plan/decision.
	own := op.Plan
	if own == "" {
		own = ps[0].Name()
	}
	return o.changePlans(ctx, ps, own, func(p *plan.Plan) []string {
		var ids []string
		for _, r := range rec.Reverted {
			name, id, qualified := strings.Cut(r, "/")
			switch {
			case qualified && name == p.Name():
				ids = append(ids, id)
			case !qualified && p.Name() == own:
				ids = append(ids, r)
			}
		}
		return p.Rerevert(ids, rec.StartedAt, op.ID)
	})
}

// enterUnlessDry takes the workspace for op (see Guard), except for a dry run, which changes
// nothing and waits for no lock.
func (s *HistoryService) enterUnlessDry(ctx context.Context, dry bool, op string) (context.Context, func(), error) {
	if dry {
		return ctx, func() {}, nil
	}
	return s.guard.Enter(ctx, op)
}
