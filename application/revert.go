package application

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// kindRevert is the journal and history kind of a surgical revert.
const kindRevert = "revert"

// ConflictMode says what a surgical revert does with paths it cannot merge cleanly.
type ConflictMode string

// The modes.
const (
	// ConflictRefuse changes nothing when any path conflicts.
	ConflictRefuse ConflictMode = "refuse"
	// ConflictMarkers applies everything, writing diff3 markers into conflicting text files and a
	// conflicting file's pre-state beside it as PATH.reverted; the correction needs attention.
	ConflictMarkers ConflictMode = "markers"
)

// RevertRequest describes `plan revert`.
type RevertRequest struct {
	DecisionID string
	Reason     string
	Plan       string       // the decision's plan; "" is the current plan
	Conflicts  ConflictMode // "" is ConflictRefuse
	// Run, when set, replaces the decision's command and runs it once on the reverted workspace as a
	// new attempt (pre_decision checkpoint, artifacts); later decisions are not run again.
	Run      string
	DryRun   bool
	Progress port.Progress
	Live     io.Writer
	Events   func(Event)
	Warn     func(string)
}

// RevertResult is what a surgical revert did (or, dry or refused, would do).
type RevertResult struct {
	Correction *correction.Correction // nil unless it was applied
	Item       correction.Item        // the reverted attempt
	Paths      []RevertPath
	Counts     port.ChangeCounts // what the change does to the workspace
	Backup     *checkpoint.Checkpoint
	DryRun     bool
	Refused    bool // conflicts and ConflictRefuse: nothing was changed
	Reexecuted bool // the replacement command ran (Run)
	// End is the post_run checkpoint of the state the replacement left, as `plan run` takes one
	// (nil without Run, with checkpoints off, or when it was interrupted).
	End *checkpoint.Checkpoint
}

// revertDetail is what the journal carries for the finisher.
type revertDetail struct {
	DecisionID string                `json:"decision_id"`
	Reason     string                `json:"reason"`
	Plan       string                `json:"plan,omitempty"`
	Scope      []correction.Item     `json:"scope"`
	Conflicts  []correction.Conflict `json:"conflicts,omitempty"`
	Command    string                `json:"command,omitempty"`
}

// RevertDecision reverts decision req.DecisionID alone (a surgical correction): every path the
// decision changed gets its state from before the decision back, merged line by line with what later
// decisions and the user changed since, and every later decision keeps its result and status.
//
// It has a correction's guarantees: the plan is made from the live workspace and, unless dry, a
// pre_correction checkpoint is taken and the plan made again from it; the target tree (that
// checkpoint's tree with the decision's changes taken out) is stored, the decision's artifacts are
// archived, and the workspace goes from the checkpoint's tree to the target through the journaled
// apply that rollbacks use, so a crash leaves the state before or after. A refused revert (conflicts
// and ConflictRefuse) returns a fault.ErrConflict error and the result listing them; the workspace
// is not touched.
func (s *CorrectionService) RevertDecision(ctx context.Context, req RevertRequest) (_ RevertResult, err error) {
	if !req.DryRun {
		var done func(*error)
		ctx, done = s.ops.begin(ctx, "revert", req.Plan, "--decision", req.DecisionID, "--reason", req.Reason)
		defer done(&err)
	}
	if err := correction.ValidateReason(req.Reason); err != nil {
		return RevertResult{}, err
	}
	if err := plan.ValidateDecisionID(req.DecisionID); err != nil {
		return RevertResult{}, err
	}
	switch req.Conflicts {
	case "":
		req.Conflicts = ConflictRefuse
	case ConflictRefuse, ConflictMarkers:
	default:
		return RevertResult{}, fault.Invalid("--conflicts %q: want refuse or markers", req.Conflicts)
	}
	if s.trees == nil {
		return RevertResult{}, errors.New("surgical revert is not wired: Operations has no TreeWriter")
	}
	ctx, release, err := s.guard.Enter(ctx, "revert")
	if err != nil {
		return RevertResult{}, err
	}
	defer release()
	if req.Plan, err = s.ops.decisionPlan(ctx, req.Plan, req.DecisionID); err != nil {
		return RevertResult{}, err
	}
	item, pre, err := s.revertTarget(ctx, req)
	if err != nil {
		return RevertResult{}, err
	}
	res := RevertResult{Item: item, DryRun: req.DryRun}
	changes, err := s.store.DiffTrees(pre.Root(), item.ResultTree)
	if err != nil {
		return res, fmt.Errorf("read what %s changed: %w", req.DecisionID, err)
	}
	preEntries, err := s.ops.entries(pre)
	if err != nil {
		return res, err
	}
	live, err := s.snap.Scan(ctx, req.Progress)
	if err != nil {
		return res, fmt.Errorf("scan the workspace: %w", err)
	}
	in := correction.RevertInput{
		Decision: req.DecisionID, Changes: changes, Live: live, Pre: preEntries,
		ReadLive: func(e tree.Entry) ([]byte, error) { return slurp(s.snap.OpenLive(e.Path)) },
		ReadOld:  func(e tree.Entry) ([]byte, error) { return slurp(s.store.OpenBlob(e.Hash)) },
		Markers:  req.Conflicts == ConflictMarkers, Diff3: diff3Merge,
	}
	first, err := correction.PlanRevert(in)
	if err != nil {
		return res, err
	}
	res.Paths, res.Counts = first.Paths, Count(tree.Diff(live, first.Target))
	if conflicts := first.Conflicts(); len(conflicts) > 0 && req.Conflicts == ConflictRefuse {
		res.Refused = true
		if req.DryRun {
			return res, nil
		}
		return res, refusal(req.DecisionID, conflicts)
	}
	if req.DryRun {
		return res, nil
	}

	id := ident.New(s.clock.Now())
	safety, err := s.ops.create(ctx, CreateRequest{
		Type: checkpoint.PreCorrection, Progress: req.Progress, Warn: req.Warn, AlsoExclude: pre.Root(),
		Note: fmt.Sprintf("before surgical revert %s of %s: %s", id, req.DecisionID, req.Reason),
	})
	if err != nil {
		return res, fmt.Errorf("record the workspace before reverting: %w", err)
	}
	res.Backup = safety
	// Planned again from what the safety checkpoint recorded, which is what the journal goes from:
	// the workspace may have changed since the scan.
	if in.Live, err = s.ops.entries(safety); err != nil {
		return res, err
	}
	in.ReadLive = in.ReadOld
	final, err := correction.PlanRevert(in)
	if err != nil {
		return res, err
	}
	res.Paths, res.Counts = final.Paths, Count(tree.Diff(in.Live, final.Target))
	conflicts := final.Conflicts()
	if len(conflicts) > 0 && req.Conflicts == ConflictRefuse {
		res.Refused = true
		return res, refusal(req.DecisionID, conflicts)
	}
	target, err := s.trees.StoreEntries(final.Target, final.Blobs)
	if err != nil {
		return res, fmt.Errorf("store the reverted tree: %w", err)
	}
	scope := []correction.Item{item}
	items, err := archiveItems(scope, req.Warn)
	if err != nil {
		return res, err
	}
	if err := s.archiver.Stage(ctx, id, items); err != nil {
		return res, errors.Join(fmt.Errorf("archive the decision's artifacts: %w", err), s.archiver.Discard(id))
	}
	d := revertDetail{DecisionID: req.DecisionID, Reason: req.Reason, Plan: req.Plan, Scope: scope, Command: req.Run}
	for _, c := range conflicts {
		d.Conflicts = append(d.Conflicts, correction.Conflict{Path: c.Path, Why: c.Why, Written: c.Written})
	}
	detail, err := json.Marshal(d)
	if err != nil {
		return res, errors.Join(err, s.archiver.Discard(id))
	}
	op := port.Operation{
		ID: id, Kind: kindRevert, Source: safety.Root(), Target: target,
		TargetCheckpoint: pre.ID(), BackupCheckpoint: safety.ID(), StartedAt: s.clock.Now(),
		Counts: res.Counts, Detail: detail,
	}
	if _, err := s.guard.Change(ctx, op, nil, req.Progress, false); err != nil {
		if pending, perr := s.guard.Pending(); perr == nil && pending == nil {
			err = errors.Join(err, s.archiver.Discard(id))
		}
		return res, fmt.Errorf("revert %s: %w", req.DecisionID, err)
	}
	note(ctx, func(op *port.LoggedOperation) {
		if op.Kind != "revert" {
			return
		}
		op.ID, op.UndoCheckpoint = id, safety.ID()
		if op.Plan == "" {
			op.Plan = req.Plan
		}
	})
	if res.Correction, err = s.corrections.Get(ctx, id); err != nil {
		return res, fmt.Errorf("revert %s is recorded, but reading it back failed: %w", id, err)
	}
	if req.Run == "" {
		return res, nil
	}
	res.Correction, res.Reexecuted, res.End, err = s.runReplacement(ctx, id, req)
	return res, err
}

// runReplacement runs req.Run as a new attempt of the reverted decision, alone, records how it
// went on the correction (reexecuting → succeeded | failed), and takes the end-of-run checkpoint
// `plan run` would.
func (s *CorrectionService) runReplacement(ctx context.Context, id string, req RevertRequest) (*correction.Correction, bool, *checkpoint.Checkpoint, error) {
	var c *correction.Correction
	if err := s.corrections.Update(ctx, id, func(x *correction.Correction) error {
		c = x
		return x.StartReexecution()
	}); err != nil {
		return c, false, nil, err
	}
	p, err := s.ops.plan(ctx, req.Plan)
	if err == nil {
		err = p.Redefine(req.DecisionID, req.Run, id)
	}
	var ran bool
	var end *checkpoint.Checkpoint
	if err == nil {
		defer s.ops.track()()
		var r attemptResult
		r, err = s.ops.execute(ctx, p, req.DecisionID, req.Live, req.Events, req.Warn, nil)
		ran = r.Ran
		if ran && r.Attempt.Status != plan.Interrupted {
			end = s.ops.recordEnd(ctx, p, req.DecisionID, req.Warn)
		}
		if err == nil {
			err = r.failure(req.DecisionID)
		}
	}
	uerr := s.corrections.Update(context.WithoutCancel(ctx), id, func(x *correction.Correction) error {
		if ran {
			x.RecordReexecuted(req.DecisionID)
		}
		c = x
		return x.Finish(err == nil, s.clock.Now())
	})
	if err != nil {
		return c, ran, end, fmt.Errorf("revert %s is recorded, but its replacement did not succeed: %w", id, err)
	}
	return c, ran, end, uerr
}

// revertTarget finds the attempt a surgical revert undoes and its pre_decision checkpoint.
func (s *CorrectionService) revertTarget(ctx context.Context, req RevertRequest) (correction.Item, *checkpoint.Checkpoint, error) {
	p, err := s.ops.plan(ctx, req.Plan)
	switch {
	case errors.Is(err, fault.ErrNotFound) && req.Plan != "":
		return correction.Item{}, nil, fault.NotFound("no plan %q in this workspace (`plan plans` lists them)", req.Plan)
	case errors.Is(err, fault.ErrNotFound):
		return correction.Item{}, nil, fault.NotFound("decision %q not found: no plan has run in this workspace", req.DecisionID)
	case err != nil:
		return correction.Item{}, nil, err
	}
	scope, err := correction.Scope(p, req.DecisionID)
	if err != nil {
		return correction.Item{}, nil, err
	}
	item := scope[0]
	if item.ResultTree.IsZero() {
		return item, nil, fault.Conflict("what decision %q changed was not recorded (no result tree); `plan correct` can still revert it with everything after it", req.DecisionID)
	}
	pre, err := s.checkpoints.Get(ctx, item.CheckpointID)
	if errors.Is(err, fault.ErrNotFound) {
		return item, nil, fault.Conflict("the pre_decision checkpoint %s of %q was deleted; the decision cannot be reverted", item.CheckpointID, req.DecisionID)
	}
	return item, pre, err
}

// refusal is the error of a revert refused for its conflicts.
func refusal(id string, conflicts []RevertPath) error {
	var b bytes.Buffer
	for i, c := range conflicts {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(conflicts)-3)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", c.Path, c.Why)
	}
	return fault.Conflict("reverting %s conflicts with later changes in %d path(s) (%s): nothing was changed; resolve them, or pass --conflicts markers",
		id, len(conflicts), b.String())
}

func slurp(r io.ReadCloser, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	return io.ReadAll(r)
}

// finishRevert is the database side of a surgical revert; recovery calls it too. It publishes the
// archive, then marks the decision reverted, records the history and the correction (kind surgical)
// in one transaction. Every step is idempotent.
func (o *Operations) finishRevert(ctx context.Context, op port.Operation) error {
	var d revertDetail
	return o.finishArchived(ctx, op, &d, "revert", func(ctx context.Context, dir string) error {
		p, err := o.plan(ctx, d.Plan)
		if err != nil {
			return err
		}
		if err := p.RevertOne(d.DecisionID, op.ID); err != nil {
			return err
		}
		// The replacement command is the decision's from now on (a tool call an agent ran has no
		// command plan runs: its replacement is refused by runReplacement, after the revert).
		if dec, _ := p.Decision(d.DecisionID); d.Command != "" && dec.Kind() != plan.Outside {
			if err := p.Redefine(d.DecisionID, d.Command, op.ID); err != nil {
				return err
			}
		}
		if err := o.savePlanKeepingCurrent(ctx, p); err != nil {
			return err
		}
		now := o.clock.Now()
		if err := o.history.Record(ctx, port.HistoryRecord{
			ID: op.ID, Kind: kindRevert, TargetCheckpoint: op.TargetCheckpoint, BackupCheckpoint: op.BackupCheckpoint,
			StartedAt: op.StartedAt, FinishedAt: now, Added: op.Counts.Added, Modified: op.Counts.Modified,
			Deleted: op.Counts.Deleted, Reverted: []string{d.DecisionID},
		}); err != nil {
			return err
		}
		c, err := correction.NewSurgical(correction.Params{
			ID: op.ID, DecisionID: d.DecisionID, Reason: d.Reason, Scope: d.Scope,
			SafetyCheckpointID: string(op.BackupCheckpoint), RollbackCheckpointID: string(op.TargetCheckpoint),
			ArchiveDir: dir, CreatedAt: op.StartedAt, Conflicts: d.Conflicts, Command: d.Command,
		}, now)
		if err != nil {
			return err
		}
		return o.corrections.Add(ctx, c)
	})
}

// savePlanKeepingCurrent saves p without making it the current plan when it is not: saving a plan
// makes it current, so the current one is saved again after it.
func (o *Operations) savePlanKeepingCurrent(ctx context.Context, p *plan.Plan) error {
	cur, err := o.plans.Current(ctx)
	if err != nil {
		return err
	}
	if err := o.plans.Save(ctx, p); err != nil {
		return err
	}
	if cur.Name() == p.Name() {
		return nil
	}
	return o.plans.Save(ctx, cur)
}

// refuseAcrossSurgical refuses a full correction whose rollback would go back past a surgical
// revert: the rollback would bring the surgically reverted decision's changes back while it stays
// reverted (it started before the corrected decision, so nothing marks or re-runs it).
func (s *CorrectionService) refuseAcrossSurgical(ctx context.Context, target *checkpoint.Checkpoint, id string) error {
	cs, err := s.corrections.List(ctx)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if c.Kind() == correction.Surgical && !c.Params().CreatedAt.Before(target.CreatedAt()) {
			return fault.Conflict("decision %q was surgically reverted (correction %s) after %q ran: rolling back to %q's checkpoint would bring its changes back; use `plan revert --decision %s` instead",
				c.Params().DecisionID, c.ID(), id, id, id)
		}
	}
	return nil
}
