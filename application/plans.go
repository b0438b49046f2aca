package application

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/plan"
)

// OnFailure is what a run does when a decision fails.
type OnFailure string

// The failure policies.
const (
	StopOnFailure     OnFailure = "stop"
	RollbackOnFailure OnFailure = "rollback"
)

// ErrRollbackNeedsCheckpoints refuses --on-failure rollback with --no-checkpoints: there would be
// nothing to roll back to, and skipping the rollback silently would mislead.
var ErrRollbackNeedsCheckpoints = fault.Invalid("--on-failure rollback needs the pre_decision checkpoints that --no-checkpoints turns off")

// ParseOnFailure validates a policy name.
func ParseOnFailure(s string) (OnFailure, error) {
	switch OnFailure(s) {
	case StopOnFailure, RollbackOnFailure:
		return OnFailure(s), nil
	}
	return "", fault.Invalid("--on-failure must be stop or rollback, not %q", s)
}

// DecisionFailedError reports a decision that ran and did not succeed.
type DecisionFailedError struct {
	DecisionID string
	Status     plan.Status
	ExitCode   *int
	TimedOut   bool
}

func (e *DecisionFailedError) Error() string {
	switch {
	case e.TimedOut:
		return fmt.Sprintf("decision %q timed out", e.DecisionID)
	case e.ExitCode != nil:
		return fmt.Sprintf("decision %q failed with exit code %d", e.DecisionID, *e.ExitCode)
	}
	return fmt.Sprintf("decision %q %s", e.DecisionID, e.Status)
}

// PlanService executes plans and ad-hoc decisions, checkpointing before each decision and recording
// what each one changed.
type PlanService struct {
	plans plan.Repository
	cps   *CheckpointService
	exec  Executor
	snap  Snapshotter
	store TreeStore
	clock Clock
}

// NewPlanService returns the service, makes rollbacks revert the decisions they undo, and registers
// the repair that closes attempts a killed run left running.
func NewPlanService(plans plan.Repository, cps *CheckpointService, exec Executor, snap Snapshotter, store TreeStore, clock Clock) *PlanService {
	s := &PlanService{plans: plans, cps: cps, exec: exec, snap: snap, store: store, clock: clock}
	cps.SetDecisionReverter(s)
	cps.Guard().AddRepair(s.closeStale)
	return s
}

// Event narrates a run for the user.
type Event struct {
	Kind       string // "skip", "start", "finish"
	DecisionID string
	Attempt    *plan.Attempt
}

// RunRequest describes `plan run`.
type RunRequest struct {
	Name          string
	Source        string
	Decisions     []plan.Definition
	NoCheckpoints bool
	OnFailure     OnFailure
	Live          io.Writer
	Events        func(Event)
	Warn          func(string)
}

// RunResult is the state after a run.
type RunResult struct {
	Plan     *plan.Plan
	Ran      []string
	Skipped  []string
	Rollback *RollbackResult // set when --on-failure rollback rolled back
}

// Run executes a plan's decisions in order, resuming: decisions that already succeeded are skipped.
func (s *PlanService) Run(ctx context.Context, req RunRequest) (RunResult, error) {
	if req.NoCheckpoints && req.OnFailure == RollbackOnFailure {
		return RunResult{}, ErrRollbackNeedsCheckpoints
	}
	ctx, release, err := s.cps.Guard().Enter(ctx, "run")
	if err != nil {
		return RunResult{}, err
	}
	defer release()
	p, err := s.plans.ByName(ctx, req.Name)
	switch {
	case errors.Is(err, fault.ErrNotFound):
		if p, err = plan.New(ident.New(s.clock.Now()), req.Name, req.Source, !req.NoCheckpoints, s.clock.Now()); err != nil {
			return RunResult{}, err
		}
	case err != nil:
		return RunResult{}, err
	}
	if err := p.Define(req.Decisions); err != nil {
		return RunResult{}, err
	}
	p.SetCheckpoints(!req.NoCheckpoints)
	if err := s.plans.Save(ctx, p); err != nil {
		return RunResult{}, err
	}
	res := RunResult{Plan: p}
	for _, def := range req.Decisions {
		d, err := p.Decision(def.ID)
		if err != nil {
			return res, err
		}
		if d.Status() == plan.Succeeded {
			res.Skipped = append(res.Skipped, d.ID())
			emit(req.Events, Event{Kind: "skip", DecisionID: d.ID(), Attempt: d.Latest()})
			continue
		}
		a, timedOut, err := s.execute(ctx, p, d.ID(), "", req.Live, req.Events, req.Warn)
		res.Ran = append(res.Ran, d.ID())
		if err != nil {
			return res, err
		}
		if a.Status == plan.Succeeded {
			continue
		}
		p.SkipPending(d.ID())
		if err := s.plans.Save(context.WithoutCancel(ctx), p); err != nil {
			return res, err
		}
		failure := decisionFailure(d.ID(), a, timedOut)
		if a.Status == plan.Interrupted {
			return res, failure
		}
		if req.OnFailure == RollbackOnFailure && a.CheckpointID != "" {
			rb, err := s.cps.rollbackToID(ctx, checkpoint.ID(a.CheckpointID), RollbackRequest{Warn: req.Warn})
			if err != nil {
				return res, errors.Join(failure, fmt.Errorf("roll back after the failure: %w", err))
			}
			res.Rollback = &rb
			if res.Plan, err = s.plans.ByName(ctx, req.Name); err != nil {
				return res, err
			}
		}
		return res, failure
	}
	return res, nil
}

func emit(fn func(Event), e Event) {
	if fn != nil {
		fn(e)
	}
}

// ExecRequest describes `plan exec`.
type ExecRequest struct {
	ID      string
	Name    string
	Command string
	Live    io.Writer
	Events  func(Event)
	Warn    func(string)
}

// AdhocPlan is the name of the plan `plan exec` uses when no plan has run yet.
const AdhocPlan = "adhoc"

// Exec runs one ad-hoc decision appended to the current plan.
func (s *PlanService) Exec(ctx context.Context, req ExecRequest) (RunResult, error) {
	ctx, release, err := s.cps.Guard().Enter(ctx, "exec")
	if err != nil {
		return RunResult{}, err
	}
	defer release()
	p, err := s.plans.Current(ctx)
	switch {
	case errors.Is(err, fault.ErrNotFound):
		if p, err = plan.New(ident.New(s.clock.Now()), AdhocPlan, "", true, s.clock.Now()); err != nil {
			return RunResult{}, err
		}
	case err != nil:
		return RunResult{}, err
	}
	name := req.Name
	if name == "" {
		name = req.ID
	}
	if _, err := p.Append(plan.Definition{ID: req.ID, Name: name, Run: req.Command}); err != nil {
		return RunResult{}, err
	}
	if err := s.plans.Save(ctx, p); err != nil {
		return RunResult{}, err
	}
	res := RunResult{Plan: p, Ran: []string{req.ID}}
	a, timedOut, err := s.execute(ctx, p, req.ID, "", req.Live, req.Events, req.Warn)
	if err != nil {
		return res, err
	}
	return res, decisionFailure(req.ID, a, timedOut)
}

// decisionFailure is the error for an attempt of decision id that ran and did not succeed, nil
// when it did. The one place that builds it, so every path (run, exec, a correction's
// re-execution) reports a timeout as a timeout and an interruption as a cancellation.
func decisionFailure(id string, a *plan.Attempt, timedOut bool) error {
	if a.Status == plan.Succeeded {
		return nil
	}
	failure := &DecisionFailedError{DecisionID: id, Status: a.Status, ExitCode: a.ExitCode, TimedOut: timedOut}
	if a.Status == plan.Interrupted {
		return fmt.Errorf("%w: %w", failure, context.Canceled)
	}
	return failure
}

// execute runs one attempt of decision id: pre_decision checkpoint, durable "running" record, the
// process, then the result tree and artifacts. The outcome is recorded even when the context is
// cancelled, so an interrupted decision is never left "running". A decision that ran and failed
// (including a timeout, reported by timedOut) is not an error: the attempt's status says it.
func (s *PlanService) execute(ctx context.Context, p *plan.Plan, id, command string, live io.Writer, events func(Event), warn func(string)) (a *plan.Attempt, timedOut bool, err error) {
	a, res, err := s.executeAttempt(ctx, p, id, command, live, events, warn)
	return a, res.TimedOut, err
}

// AttemptToken names one attempt's processes: the executor puts it in their environment so a later
// command can find and stop what a killed plan left running.
func AttemptToken(p *plan.Plan, id string, number int) string {
	return fmt.Sprintf("%s/%s/%d", p.ID(), id, number)
}

func (s *PlanService) executeAttempt(ctx context.Context, p *plan.Plan, id, command string, live io.Writer, events func(Event), warn func(string)) (*plan.Attempt, ExecResult, error) {
	d, err := p.Decision(id)
	if err != nil {
		return nil, ExecResult{}, err
	}
	number := len(d.Attempts()) + 1
	var pre *checkpoint.Checkpoint
	if p.Checkpoints() {
		pre, err = s.cps.create(ctx, CreateRequest{
			Type: checkpoint.PreDecision, DecisionID: id, Warn: warn,
			Note: fmt.Sprintf("before decision %s, attempt %d", id, number),
		})
		if err != nil {
			return nil, ExecResult{}, fmt.Errorf("take the pre_decision checkpoint of %q (the decision did not run): %w", id, err)
		}
	}
	cpID := ""
	if pre != nil {
		cpID = string(pre.ID())
	}
	logPath := fmt.Sprintf("logs/%s.%d.log", id, number)
	a, err := p.Start(id, command, cpID, logPath, s.clock.Now())
	if err != nil {
		return nil, ExecResult{}, err
	}
	if err := s.plans.Save(ctx, p); err != nil {
		return nil, ExecResult{}, err
	}
	emit(events, Event{Kind: "start", DecisionID: id, Attempt: a})
	def := d.Definition()
	res, execErr := s.exec.Execute(ctx, Command{
		DecisionID: id, Attempt: number, Script: a.Command, Env: def.Env, Timeout: def.Timeout, LogPath: logPath,
		Token: AttemptToken(p, id, number),
	}, live)
	octx := context.WithoutCancel(ctx)
	out := plan.Outcome{Status: plan.Failed}
	switch {
	case execErr != nil:
		if warn != nil {
			warn(fmt.Sprintf("decision %q could not start: %v", id, execErr))
		}
	case res.Interrupted:
		out.Status = plan.Interrupted
	case res.ExitCode == 0 && !res.TimedOut:
		out.Status = plan.Succeeded
	}
	if execErr == nil && !res.Interrupted {
		code := res.ExitCode
		out.ExitCode = &code
	}
	var recordErr error
	if pre != nil {
		out.ResultTree, out.Artifacts, recordErr = s.changesSince(octx, pre)
	}
	if err := p.Finish(id, out, s.clock.Now()); err != nil {
		return nil, res, err
	}
	if err := s.plans.Save(octx, p); err != nil {
		return nil, res, err
	}
	emit(events, Event{Kind: "finish", DecisionID: id, Attempt: a})
	if recordErr != nil {
		return a, res, fmt.Errorf("record what decision %q changed: %w", id, recordErr)
	}
	return a, res, nil
}

// changesSince snapshots the workspace and returns its tree and the artifacts since pre.
func (s *PlanService) changesSince(ctx context.Context, pre *checkpoint.Checkpoint) (string, []artifact.Artifact, error) {
	snap, err := s.snap.Snapshot(ctx, nil)
	if err != nil {
		return "", nil, err
	}
	changes, err := s.store.DiffTrees(pre.Root(), snap.Root)
	if err != nil {
		return "", nil, err
	}
	return snap.Root.String(), artifact.FromChanges(changes), nil
}

// closeStale finishes attempts a killed `plan run` left running: no process holds the lock, so none
// of them is still executing. What they changed is recorded from the workspace as it is now.
func (s *PlanService) closeStale(ctx context.Context) error {
	p, err := s.plans.Current(ctx)
	if errors.Is(err, fault.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	d := p.Running()
	if d == nil {
		return nil
	}
	a := d.Latest()
	// The killed plan's decision may have left processes behind; stop them before recording what
	// the decision changed, or they would go on changing the workspace unrecorded.
	if _, err := s.exec.Reap(AttemptToken(p, d.ID(), a.Number)); err != nil {
		return fmt.Errorf("stop what interrupted decision %q left running: %w", d.ID(), err)
	}
	out := plan.Outcome{Status: plan.Interrupted}
	if a.CheckpointID != "" {
		if pre, err := s.cps.repo.Get(ctx, checkpoint.ID(a.CheckpointID)); err == nil {
			out.ResultTree, out.Artifacts, err = s.changesSince(ctx, pre)
			if err != nil {
				return fmt.Errorf("record what interrupted decision %q changed: %w", d.ID(), err)
			}
		}
	}
	if err := p.Finish(d.ID(), out, s.clock.Now()); err != nil {
		return err
	}
	return s.plans.Save(ctx, p)
}

// RevertAfter marks every attempt that started at or after cp as reverted by operation op. It runs
// inside the rollback's unit of work.
func (s *PlanService) RevertAfter(ctx context.Context, cp *checkpoint.Checkpoint, op string) ([]string, error) {
	p, err := s.plans.Current(ctx)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ids := p.RevertStartedSince(cp.CreatedAt(), op)
	if len(ids) == 0 {
		return nil, nil
	}
	return ids, s.plans.Save(ctx, p)
}

// Status returns the current plan.
func (s *PlanService) Status(ctx context.Context) (*plan.Plan, error) {
	p, err := s.plans.Current(ctx)
	if errors.Is(err, fault.ErrNotFound) {
		return nil, fault.NotFound("no plan has run in this workspace yet: `plan run FILE` or `plan exec` starts one")
	}
	return p, err
}

// Log opens the recorded output of decision id's attempt (0: the latest).
func (s *PlanService) Log(ctx context.Context, id string, attempt int) (io.ReadCloser, *plan.Attempt, error) {
	p, err := s.Status(ctx)
	if err != nil {
		return nil, nil, err
	}
	d, err := p.Decision(id)
	if err != nil {
		return nil, nil, err
	}
	as := d.Attempts()
	if len(as) == 0 {
		return nil, nil, fault.NotFound("decision %q has not run yet", id)
	}
	a := as[len(as)-1]
	if attempt > 0 {
		if attempt > len(as) {
			return nil, nil, fault.NotFound("decision %q has %d attempts, not %d", id, len(as), attempt)
		}
		a = as[attempt-1]
	}
	if strings.TrimSpace(a.LogPath) == "" {
		return nil, a, fault.NotFound("attempt %d of %q has no log", a.Number, id)
	}
	rc, err := s.exec.OpenLog(a.LogPath)
	return rc, a, err
}
