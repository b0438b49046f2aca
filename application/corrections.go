package application

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/planhq/plan/application/internal/kernel"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/plan"
)

const kindCorrection = "correction"

// CorrectionService reverts a wrong decision and everything executed after it, archives what they
// produced, and re-executes from the corrected decision.
//
// The revert step is one journaled operation: pre_correction checkpoint → archive staged durably →
// journal → workspace rolled back to the target's pre_decision checkpoint → (finisher) archive
// published, decisions marked reverted, rollback and correction recorded in one transaction →
// journal cleared. A crash anywhere leaves either the state before the correction or the state after
// its revert step, with archive and database in agreement.
type CorrectionService struct {
	ops *Operations
	// The parts of the shared core this service uses, taken from it when it is built.
	guard       *kernel.Guard
	clock       port.Clock
	checkpoints checkpoint.Repository
	plans       plan.Repository
	corrections correction.Repository
	store       port.TreeStore
	snap        port.Snapshotter
	trees       port.TreeWriter
	tx          port.Transactor
	archiver    port.Archiver
}

// NewCorrectionService returns the service.
func NewCorrectionService(ops *Operations) *CorrectionService {
	return &CorrectionService{ops: ops, guard: ops.guard, clock: ops.clock, checkpoints: ops.checkpoints, plans: ops.plans, corrections: ops.corrections, store: ops.store, snap: ops.snap, trees: ops.trees, tx: ops.tx, archiver: ops.archiver}
}

// CorrectRequest describes `plan correct`.
type CorrectRequest struct {
	DecisionID  string
	Reason      string
	Run         string // replacement command for the corrected decision; "" keeps it
	Plan        string // the plan the decision belongs to; "" is the current plan
	NoReexecute bool
	DryRun      bool
	// Validate, when set, runs after the correction finished (see ValidationFailedError).
	Validate string
	Progress port.Progress
	Live     io.Writer
	Events   func(Event)
	Warn     func(string)
	// Funcs are Go functions the re-execution may call, beside the registered ones: a decision that
	// is a Go function (DecisionFunc) is re-executed only by a program that has it.
	Funcs map[string]port.DecisionFunc
}

// CorrectResult is what a correction did (or, dry, would do).
type CorrectResult struct {
	Correction *correction.Correction // nil on a dry run
	Scope      []correction.Item
	Rollback   RollbackResult
	Reexecuted []string
	// End is the post_run checkpoint of the state the re-execution ended in, as `plan run` takes
	// one (nil when nothing was re-executed, checkpoints were off or it was interrupted).
	End    *checkpoint.Checkpoint
	DryRun bool
}

// Correct runs RevertDecisions and then, unless asked not to, ApplyCorrection.
func (s *CorrectionService) Correct(ctx context.Context, req CorrectRequest) (_ CorrectResult, err error) {
	if !req.DryRun {
		var done func(*error)
		ctx, done = s.ops.begin(ctx, "correct", req.Plan, correctArgs(req)...)
		defer done(&err)
	}
	ctx, release, err := s.guard.Enter(ctx, "correct")
	if err != nil {
		return CorrectResult{}, err
	}
	defer release()
	// The re-execution runs the plan the revert step reverted, whichever plan is current by then.
	if req.Plan, err = s.ops.decisionPlan(ctx, req.Plan, req.DecisionID); err != nil {
		return CorrectResult{}, err
	}
	if !req.DryRun && !req.NoReexecute {
		if err := s.reexecutionReady(ctx, req); err != nil {
			return CorrectResult{}, err
		}
	}
	res, err := s.RevertDecisions(ctx, req)
	if err == nil && !req.DryRun && !req.NoReexecute {
		var c *correction.Correction
		c, res.Reexecuted, res.End, err = s.apply(ctx, res.Correction.ID(), req)
		if c != nil {
			res.Correction = c
		}
	}
	if err != nil || req.DryRun || req.Validate == "" {
		return res, err
	}
	return res, s.ops.validate(ctx, req.Validate, checkpoint.ID(res.Correction.Params().SafetyCheckpointID), req.Live)
}

func correctArgs(req CorrectRequest) []string {
	args := []string{"--decision", req.DecisionID, "--reason", req.Reason}
	if req.Run != "" {
		args = append(args, "--run", req.Run)
	}
	if req.NoReexecute {
		args = append(args, "--no-reexecute")
	}
	return args
}

// reexecutionReady refuses, before anything changes, a correction whose re-execution would need a
// Go function this program does not have: the corrected decision (unless req.Run replaces it) and
// every decision after it.
func (s *CorrectionService) reexecutionReady(ctx context.Context, req CorrectRequest) error {
	p, err := s.ops.plan(ctx, req.Plan)
	if errors.Is(err, fault.ErrNotFound) {
		return nil // RevertDecisions says what is missing, in its words
	}
	if err != nil {
		return err
	}
	var ids []string
	from := false
	for _, d := range p.Decisions() {
		from = from || d.ID() == req.DecisionID
		if from && (d.ID() != req.DecisionID || req.Run == "") {
			ids = append(ids, d.ID())
		}
	}
	return s.ops.funcsReady(p, ids, req.Funcs)
}

// decisionPlan is the plan a command that names decision id means when no plan is named (name ""):
// the one plan that has a decision of that ID, wherever it stands among the plans (not whichever
// ran last), and the current plan when none has (its error then says what is missing). A decision
// ID that two or more plans have is ambiguous: refused, naming them, for --plan to choose. A named
// plan is taken as it is.
func (o *Operations) decisionPlan(ctx context.Context, name, id string) (string, error) {
	if name != "" {
		return name, nil
	}
	ps, err := o.plans.List(ctx)
	if err != nil {
		return "", err
	}
	var holders []string
	for _, p := range ps {
		if _, err := p.Decision(id); err == nil {
			holders = append(holders, p.Name())
		}
	}
	switch len(holders) {
	case 0:
		return "", nil
	case 1:
		return holders[0], nil
	}
	return "", fault.Invalid("decision %q is in %d plans (%s): name one with --plan NAME", id, len(holders), strings.Join(holders, ", "))
}

// correctionDetail is what the journal carries for the finisher.
type correctionDetail struct {
	DecisionID string            `json:"decision_id"`
	Reason     string            `json:"reason"`
	Command    string            `json:"command"`
	Scope      []correction.Item `json:"scope"`
	// Plan is the corrected decision's plan when it is not the current one.
	Plan string `json:"plan,omitempty"`
}

// RevertDecisions reverts decision req.DecisionID and every decision executed after it: it takes a
// pre_correction checkpoint, archives the reverted decisions' artifacts, rolls the workspace back to
// the decision's pre_decision checkpoint and records the correction, atomically.
func (s *CorrectionService) RevertDecisions(ctx context.Context, req CorrectRequest) (_ CorrectResult, err error) {
	if !req.DryRun {
		var done func(*error)
		ctx, done = s.ops.begin(ctx, "correct", req.Plan, append(correctArgs(req), "--no-reexecute")...)
		defer done(&err)
	}
	if err := correction.ValidateReason(req.Reason); err != nil {
		return CorrectResult{}, err
	}
	if err := plan.ValidateDecisionID(req.DecisionID); err != nil {
		return CorrectResult{}, err
	}
	ctx, release, err := s.guard.Enter(ctx, "correct")
	if err != nil {
		return CorrectResult{}, err
	}
	defer release()
	if req.Plan, err = s.ops.decisionPlan(ctx, req.Plan, req.DecisionID); err != nil {
		return CorrectResult{}, err
	}
	p, err := s.ops.plan(ctx, req.Plan)
	if errors.Is(err, fault.ErrNotFound) && req.Plan != "" {
		return CorrectResult{}, fault.NotFound("no plan %q in this workspace (`plan plans` lists them)", req.Plan)
	}
	if errors.Is(err, fault.ErrNotFound) {
		return CorrectResult{}, fault.NotFound("decision %q not found: no plan has run in this workspace", req.DecisionID)
	}
	if err != nil {
		return CorrectResult{}, err
	}
	scope, err := correction.Scope(p, req.DecisionID)
	if err != nil {
		return CorrectResult{}, err
	}
	if err := refuseOutside(p, scope); err != nil {
		return CorrectResult{}, err
	}
	target, err := s.checkpoints.Get(ctx, scope[0].CheckpointID)
	if errors.Is(err, fault.ErrNotFound) {
		return CorrectResult{}, fault.Conflict("the pre_decision checkpoint %s of %q was deleted; the decision cannot be corrected", scope[0].CheckpointID, req.DecisionID)
	}
	if err != nil {
		return CorrectResult{}, err
	}
	if err := s.refuseAcrossSurgical(ctx, target, req.DecisionID); err != nil {
		return CorrectResult{}, err
	}
	if req.DryRun {
		rb, err := s.ops.previewRollback(ctx, target, req.Progress)
		return CorrectResult{Scope: scope, Rollback: rb, DryRun: true}, err
	}

	id := ident.New(s.clock.Now())
	safety, err := s.ops.create(ctx, CreateRequest{
		Type: checkpoint.PreCorrection, Progress: req.Progress, Warn: req.Warn, AlsoExclude: target.Root(),
		Note: fmt.Sprintf("before correction %s of %s: %s", id, req.DecisionID, req.Reason),
	})
	if err != nil {
		return CorrectResult{}, fmt.Errorf("record the workspace before correcting: %w", err)
	}
	items, err := archiveItems(scope, req.Warn)
	if err != nil {
		return CorrectResult{}, err
	}
	if err := s.archiver.Stage(ctx, id, items); err != nil {
		return CorrectResult{}, errors.Join(fmt.Errorf("archive the reverted decisions' artifacts: %w", err), s.archiver.Discard(id))
	}
	detail, err := json.Marshal(correctionDetail{DecisionID: req.DecisionID, Reason: req.Reason, Command: req.Run, Scope: scope, Plan: req.Plan})
	if err != nil {
		return CorrectResult{}, errors.Join(err, s.archiver.Discard(id))
	}
	op := &port.Operation{ID: id, Kind: kindCorrection, Detail: detail}
	rb, err := s.ops.restore(ctx, restoreSpec{target: target, req: RollbackRequest{Progress: req.Progress, Warn: req.Warn}, op: op, backup: safety})
	if err != nil {
		// A journal still pending means recovery will finish (and publish) or undo the operation;
		// otherwise the workspace is back as it was and the staged archive must go.
		if pending, perr := s.guard.Pending(); perr == nil && pending == nil {
			err = errors.Join(err, s.archiver.Discard(id))
		}
		return CorrectResult{}, fmt.Errorf("correct %s: %w", req.DecisionID, err)
	}
	note(ctx, func(op *port.LoggedOperation) {
		if op.Kind != "correct" {
			return
		}
		op.ID, op.UndoCheckpoint = id, safety.ID()
		noteUse(op, target.ID())
		if op.Plan == "" {
			op.Plan = req.Plan
		}
	})
	c, err := s.corrections.Get(ctx, id)
	if err != nil {
		return CorrectResult{}, fmt.Errorf("correction %s is recorded, but reading it back failed: %w", id, err)
	}
	return CorrectResult{Correction: c, Scope: scope, Rollback: rb}, nil
}

func archiveItems(scope []correction.Item, warn func(string)) ([]port.ArchiveItem, error) {
	items := make([]port.ArchiveItem, 0, len(scope))
	for _, it := range scope {
		if it.ResultTree.IsZero() {
			if len(it.Artifacts) > 0 && warn != nil {
				warn(fmt.Sprintf("decision %q attempt %d has no recorded result tree; its artifacts cannot be archived", it.DecisionID, it.Attempt))
			}
			items = append(items, port.ArchiveItem{DecisionID: it.DecisionID, Attempt: it.Attempt})
			continue
		}
		items = append(items, port.ArchiveItem{DecisionID: it.DecisionID, Attempt: it.Attempt, ResultTree: it.ResultTree, Artifacts: it.Artifacts})
	}
	return items, nil
}

// ApplyCorrection re-executes a reverted correction's decision (with req.Run replacing its command
// when given) and every later decision that has not succeeded, each with a new pre_decision
// checkpoint and attempt. The correction's status says whether re-execution succeeded.
func (s *CorrectionService) ApplyCorrection(ctx context.Context, id string, req CorrectRequest) (*correction.Correction, []string, error) {
	c, reexecuted, _, err := s.apply(ctx, id, req)
	return c, reexecuted, err
}

// apply is ApplyCorrection that also returns the end-of-run checkpoint: after the last decision it
// re-executed (a failed one included, not an interrupted one) the state it ended in is recorded as
// a post_run checkpoint, by the code `plan run` takes its own with (recordEnd).
func (s *CorrectionService) apply(ctx context.Context, id string, req CorrectRequest) (_ *correction.Correction, _ []string, _ *checkpoint.Checkpoint, err error) {
	ctx, done := s.ops.begin(ctx, "correct", req.Plan, "--apply", id)
	defer done(&err)
	ctx, release, err := s.guard.Enter(ctx, "correct")
	if err != nil {
		return nil, nil, nil, err
	}
	defer release()
	// Everything that can refuse the re-execution is checked before the correction moves to
	// reexecuting: a refused call leaves it reverted, so it can be re-executed once the request is
	// right (a correction left reexecuting is closed as failed by the next command's recovery).
	c, err := s.corrections.Get(ctx, id)
	if err != nil {
		return nil, nil, nil, err
	}
	if req.Plan, err = s.ops.decisionPlan(ctx, req.Plan, c.Params().DecisionID); err != nil {
		return c, nil, nil, err
	}
	p, err := s.ops.plan(ctx, req.Plan)
	if err != nil {
		return c, nil, nil, err
	}
	target := c.Params().DecisionID
	if cmd := c.Params().Command; cmd != "" {
		if err := p.Redefine(target, cmd, id); err != nil {
			return c, nil, nil, err
		}
	}
	ids, err := p.Reexecution(target)
	if err != nil {
		return c, nil, nil, err
	}
	if err := s.ops.funcsReady(p, ids, req.Funcs); err != nil {
		return c, nil, nil, err
	}
	if err := s.corrections.Update(ctx, id, func(x *correction.Correction) error {
		c = x
		return x.StartReexecution()
	}); err != nil {
		return nil, nil, nil, err
	}
	var reexecuted []string
	var runErr error
	var last attemptResult
	defer s.ops.track()()
	for _, id := range ids {
		r, err := s.ops.execute(ctx, p, id, req.Live, req.Events, req.Warn, req.Funcs)
		if r.Ran {
			reexecuted = append(reexecuted, id)
			last = r
		}
		if err != nil {
			runErr = err
			break
		}
		if runErr = r.failure(id); runErr != nil {
			p.SkipPending(id)
			if err := s.plans.Save(context.WithoutCancel(ctx), p); err != nil {
				runErr = errors.Join(runErr, err)
			}
			break
		}
	}
	var end *checkpoint.Checkpoint
	if len(reexecuted) > 0 && last.Attempt.Status != plan.Interrupted {
		end = s.ops.recordEnd(ctx, p, reexecuted[len(reexecuted)-1], req.Warn)
	}
	err = s.corrections.Update(context.WithoutCancel(ctx), id, func(x *correction.Correction) error {
		for _, r := range reexecuted {
			x.RecordReexecuted(r)
		}
		c = x
		return x.Finish(runErr == nil, s.clock.Now())
	})
	if runErr != nil {
		return c, reexecuted, end, fmt.Errorf("correction %s is recorded, but re-execution stopped: %w", id, runErr)
	}
	return c, reexecuted, end, err
}

// List returns the corrections, newest first.
func (s *CorrectionService) List(ctx context.Context) ([]*correction.Correction, error) {
	return s.corrections.List(ctx)
}

// UndoneBy maps each correction (and surgical revert) that was undone to the undo that undid it, as
// the operation log says (`plan history` shows the same entry as undone); one that stands, or was
// redone, is not in it.
func (s *CorrectionService) UndoneBy(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	if s.ops.oplog == nil {
		return out, nil
	}
	ops, err := s.ops.oplog.List(ctx, 0, "")
	if err != nil {
		return nil, err
	}
	for _, op := range ops {
		if (op.Kind == "correct" || op.Kind == kindRevert) && op.UndoneBy != "" {
			out[op.ID] = op.UndoneBy
		}
	}
	return out, nil
}

// Show finds a correction by ID or unique prefix.
func (s *CorrectionService) Show(ctx context.Context, ref string) (*correction.Correction, error) {
	if err := ident.ValidateRef("correction", ref); err != nil {
		return nil, err
	}
	return s.corrections.Resolve(ctx, ref)
}

// refuseOutside refuses a correction whose scope holds a decision recorded from outside (an agent's
// tool call): a correction re-executes its scope, and plan cannot run an agent's tool call again.
func refuseOutside(p *plan.Plan, scope []correction.Item) error {
	for _, it := range scope {
		if d, err := p.Decision(it.DecisionID); err == nil && d.Kind() == plan.Outside {
			return fault.Conflict("decision %q is a tool call an agent ran (recorded from outside): `plan correct` re-executes "+
				"what it reverts, and plan cannot run an agent's tool call again; undo it with `plan revert --decision %s` "+
				"(that call alone) or `plan rewind --tool-call %s` (it and everything after it)", it.DecisionID, it.DecisionID, it.DecisionID)
		}
	}
	return nil
}

// finish is the database side of a correction's revert step; recovery calls it too. It publishes
// the staged archive, then records the rollback (marking the decisions reverted) and the correction
// in one transaction. Every step is idempotent.
func (o *Operations) finishCorrection(ctx context.Context, op port.Operation) error {
	var d correctionDetail
	return o.finishArchived(ctx, op, &d, "correction", func(ctx context.Context, dir string) error {
		if err := o.recordRollback(ctx, op); err != nil {
			return err
		}
		if d.Command != "" {
			// The corrected command is the decision's from now on, re-executed or not: a later
			// `plan run` of the unchanged plan file runs it, not the one it replaced.
			if err := o.redefine(ctx, d.Plan, d.DecisionID, d.Command, op.ID); err != nil {
				return err
			}
		}
		c, err := correction.New(correction.Params{
			ID: op.ID, DecisionID: d.DecisionID, Reason: d.Reason, Command: d.Command, Scope: d.Scope,
			SafetyCheckpointID: string(op.BackupCheckpoint), RollbackCheckpointID: string(op.TargetCheckpoint),
			ArchiveDir: dir, CreatedAt: op.StartedAt,
		})
		if err != nil {
			return err
		}
		return o.corrections.Add(ctx, c)
	})
}

// redefine gives decision id of plan planName ("" is the current plan) correction by's command and
// saves the plan, leaving the current plan as it is.
func (o *Operations) redefine(ctx context.Context, planName, id, command, by string) error {
	p, err := o.plan(ctx, planName)
	if err != nil {
		return err
	}
	if err := p.Redefine(id, command, by); err != nil {
		return err
	}
	return o.savePlanKeepingCurrent(ctx, p)
}

// uncorrect gives every decision whose command correction by gave back the plan file's command (an
// undo of that correction), in every plan.
func (o *Operations) uncorrect(ctx context.Context, by string) error {
	ps, err := o.plans.List(ctx)
	if err != nil || len(ps) == 0 {
		return err
	}
	_, err = o.changePlans(ctx, ps, ps[0].Name(), func(p *plan.Plan) []string { return p.Uncorrect(by) })
	return err
}

// recorrect gives the decision correction op corrected its command again (a redo of the undo of
// op); an operation that is not a correction with a command changes nothing.
func (o *Operations) recorrect(ctx context.Context, op stepEntry) error {
	if op.Kind != "correct" && op.Kind != kindRevert {
		return nil
	}
	c, err := o.corrections.Get(ctx, op.ID)
	if errors.Is(err, fault.ErrNotFound) {
		return nil
	}
	if err != nil || c.Params().Command == "" {
		return err
	}
	return o.redefine(ctx, op.Plan, c.Params().DecisionID, c.Params().Command, op.ID)
}

// finishArchived is the database side shared by the operations that archive what they revert (a
// correction, a surgical revert): it reads the journal's detail into detail, publishes the staged
// archive, and runs record in one transaction unless the history already has op (every step is
// idempotent, as recovery needs). When record fails, the archive is unpublished: the guard puts the
// workspace back, and an archive must not outlive the record it belongs to.
func (o *Operations) finishArchived(ctx context.Context, op port.Operation, detail any, what string, record func(ctx context.Context, dir string) error) error {
	if err := json.Unmarshal(op.Detail, detail); err != nil {
		return fault.Wrap(fault.ErrIntegrity, err, "the journal's %s record is damaged", what)
	}
	dir, err := o.archiver.Publish(op.ID)
	if err != nil {
		return fmt.Errorf("publish archive: %w", err)
	}
	err = o.tx.Do(ctx, func(ctx context.Context) error {
		done, err := o.history.Has(ctx, op.ID)
		if err != nil || done {
			return err
		}
		return record(ctx, dir)
	})
	if err != nil {
		return errors.Join(err, o.archiver.Unpublish(op.ID))
	}
	return nil
}

// closeStale marks corrections whose re-execution a killed plan left "reexecuting" as failed: no
// process holds the lock, so none of them is still re-executing. The plan repair runs first and
// records the interrupted attempt.
func (o *Operations) closeStaleCorrections(ctx context.Context) error {
	cs, err := o.corrections.List(ctx)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if c.Status() != correction.Reexecuting {
			continue
		}
		if err := o.corrections.Update(ctx, c.ID(), func(x *correction.Correction) error {
			return x.Finish(false, o.clock.Now())
		}); err != nil {
			return err
		}
	}
	return nil
}
