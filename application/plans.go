package application

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/planhq/plan/application/internal/kernel"
	"github.com/planhq/plan/application/port"
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
	// ContinueOnFailure records the failure and goes on with the next decision.
	ContinueOnFailure OnFailure = "continue"
)

// ErrRollbackNeedsCheckpoints refuses --on-failure rollback with --no-checkpoints: there would be
// nothing to roll back to, and skipping the rollback silently would mislead.
var ErrRollbackNeedsCheckpoints = fault.Invalid("--on-failure rollback needs the pre_decision checkpoints that --no-checkpoints turns off")

// ParseOnFailure validates a policy name.
func ParseOnFailure(s string) (OnFailure, error) {
	switch OnFailure(s) {
	case StopOnFailure, RollbackOnFailure, ContinueOnFailure:
		return OnFailure(s), nil
	}
	return "", fault.Invalid("--on-failure must be stop, rollback or continue, not %q", s)
}

// DecisionFailedError reports a decision that ran and did not succeed.
type DecisionFailedError struct {
	DecisionID string
	Status     plan.Status
	ExitCode   *int
	TimedOut   bool
	// Validation says the decision's own command succeeded and its validate command failed.
	Validation bool
}

func (e *DecisionFailedError) Error() string {
	switch {
	case e.Validation && e.TimedOut:
		return fmt.Sprintf("decision %q failed its validation (timed out)", e.DecisionID)
	case e.Validation && e.ExitCode != nil:
		return fmt.Sprintf("decision %q failed its validation (exit code %d)", e.DecisionID, *e.ExitCode)
	case e.Validation:
		return fmt.Sprintf("decision %q failed its validation", e.DecisionID)
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
	ops *Operations
	// The parts of the shared core this service uses, taken from it when it is built.
	guard       *kernel.Guard
	clock       port.Clock
	checkpoints checkpoint.Repository
	plans       plan.Repository
	exec        port.Executor
}

// NewPlanService returns the service.
func NewPlanService(ops *Operations) *PlanService {
	return &PlanService{ops: ops, guard: ops.guard, clock: ops.clock, checkpoints: ops.checkpoints, plans: ops.plans, exec: ops.exec}
}

// Event narrates a run for the user.
type Event struct {
	Kind       string // "skip", "start", "finish", "retry"
	DecisionID string
	Attempt    plan.Attempt
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
	// Funcs are Go functions this run may call, beside the registered ones (PlanService.Register):
	// a decision whose Run is "go-func:NAME" (this host) or plan.FuncCommand(NAME, host) is the
	// function called NAME.
	Funcs map[string]port.DecisionFunc
	// RerunChanged re-executes from the first succeeded decision whose definition changed (see
	// rerun.go); without it such decisions are reported and skipped.
	RerunChanged bool
	// Keep are workspace-relative paths the rollback of RerunChanged leaves as they are (the plan
	// file itself, when it lies in the workspace).
	Keep []string
}

// RunResult is the state after a run.
type RunResult struct {
	Plan     *plan.Plan
	Ran      []string
	Skipped  []string
	Rollback *RollbackResult // set when --on-failure rollback rolled back
	// Failed lists the decisions that failed and the run went on past (on_failure continue).
	Failed []string
	// Retried counts the retries each decision needed.
	Retried map[string]int
	// End is the post_run checkpoint of the state the run ended in (nil when none was taken: no
	// decision ran, checkpoints were off, the run was interrupted or rolled back).
	End *checkpoint.Checkpoint
	// Changed are the succeeded decisions whose definition the plan file changed; Rerun, with
	// RerunChanged, the rollback to the first one's pre_decision checkpoint (nil otherwise).
	Changed []ChangedDecision
	Rerun   *RollbackResult
}

// Run executes a plan's decisions in order, resuming: decisions that already succeeded are skipped.
func (s *PlanService) Run(ctx context.Context, req RunRequest) (_ RunResult, err error) {
	ctx, done := s.ops.begin(ctx, "run", req.Name, req.Name)
	defer done(&err)
	req.Decisions = s.ops.hostFuncs(req.Decisions)
	if req.NoCheckpoints && req.OnFailure == RollbackOnFailure {
		return RunResult{}, ErrRollbackNeedsCheckpoints
	}
	if req.NoCheckpoints {
		for _, d := range req.Decisions {
			if d.OnFailure == string(RollbackOnFailure) || d.Retries > 0 {
				return RunResult{}, fault.Invalid("decision %q: on_failure rollback and retries start from its pre_decision checkpoint, which --no-checkpoints turns off", d.ID)
			}
		}
	}
	ctx, release, err := s.guard.Enter(ctx, "run")
	if err != nil {
		return RunResult{}, err
	}
	defer release()
	defer s.ops.track()()
	p, err := s.plans.ByName(ctx, req.Name)
	switch {
	case errors.Is(err, fault.ErrNotFound):
		if p, err = plan.New(ident.New(s.clock.Now()), req.Name, req.Source, !req.NoCheckpoints, s.clock.Now()); err != nil {
			return RunResult{}, err
		}
	case err != nil:
		return RunResult{}, err
	}
	// A changed decision keeps the definition it ran with until it is re-executed: a re-run that
	// fails before it rolled back leaves it detected as changed.
	changed := changedDecisions(p, req.Decisions)
	defs := req.Decisions
	if len(changed) > 0 {
		defs = keepRan(p, req.Decisions, changed)
		if req.Warn != nil && !req.RerunChanged {
			req.Warn(changedWarning(changed))
		}
		for _, c := range changed {
			if req.Warn != nil && req.RerunChanged && c.Supersedes != "" {
				req.Warn(fmt.Sprintf("decision %s: re-run with the plan file's command, which supersedes correction %s", c.ID, c.Supersedes))
			}
		}
	}
	if req.Warn != nil {
		for _, w := range supersededWarnings(p, req.Decisions) {
			req.Warn(w)
		}
	}
	if err := p.Define(defs); err != nil {
		return RunResult{}, err
	}
	p.SetCheckpoints(!req.NoCheckpoints)
	var due []string
	for _, d := range req.Decisions {
		if dec, err := p.Decision(d.ID); err == nil && dec.Status() != plan.Succeeded {
			due = append(due, d.ID)
		}
	}
	if err := s.ops.funcsReady(p, due, req.Funcs); err != nil {
		return RunResult{}, err
	}
	if err := s.plans.Save(ctx, p); err != nil {
		return RunResult{}, err
	}
	note(ctx, func(op *port.LoggedOperation) { op.Plan = p.Name() })
	res := RunResult{Plan: p, Changed: changed}
	if len(changed) > 0 && req.RerunChanged {
		rb, err := s.rerunFrom(ctx, p, changed[0].ID, req)
		if err != nil {
			return res, err
		}
		res.Rerun = &rb
		if rb.Backup != nil && rb.Target != nil {
			// The rollback stands on its own in the log: plan undo walks back through the re-run.
			noteAlso(ctx, port.LoggedOperation{
				ID: rb.OperationID, Kind: "rollback", Args: []string{"--rerun-changed", changed[0].ID}, Plan: p.Name(),
				StartedAt: rb.Backup.CreatedAt(), FinishedAt: rb.Backup.CreatedAt(), Outcome: OutcomeOK,
				Checkpoints: []checkpoint.ID{rb.Target.ID(), rb.Backup.ID()}, UndoCheckpoint: rb.Backup.ID(),
			})
		}
		if p, err = s.plans.ByName(ctx, req.Name); err != nil {
			return res, err
		}
		if err := p.Define(req.Decisions); err != nil {
			return res, err
		}
		if err := s.plans.Save(ctx, p); err != nil {
			return res, err
		}
		res.Plan = p
	}
	for _, def := range req.Decisions {
		d, err := p.Decision(def.ID)
		if err != nil {
			return res, err
		}
		if d.Status() == plan.Succeeded {
			res.Skipped = append(res.Skipped, d.ID())
			a, _ := d.Latest()
			emit(req.Events, Event{Kind: "skip", DecisionID: d.ID(), Attempt: a})
			continue
		}
		policy := req.OnFailure
		if def.OnFailure != "" {
			policy = OnFailure(def.OnFailure)
		}
		if policy == RollbackOnFailure {
			if p, err = s.undoInterrupted(ctx, p, d, req); err != nil {
				return res, err
			}
			res.Plan = p
		}
		r, err := s.ops.execute(ctx, p, d.ID(), req.Live, req.Events, req.Warn, req.Funcs)
		res.Ran = append(res.Ran, d.ID())
		if err != nil {
			return res, err
		}
		// Retries: each from the decision's pre_decision checkpoint, so it starts clean (the
		// failed attempt is reverted by that rollback).
		for n := 0; r.failure(d.ID()) != nil && r.Attempt.Status != plan.Interrupted && n < def.Retries; n++ {
			if a := r.Attempt; a.CheckpointID != "" {
				if _, err := s.ops.restore(ctx, restoreSpec{id: a.CheckpointID, req: RollbackRequest{Warn: req.Warn}}); err != nil {
					return res, errors.Join(r.failure(d.ID()), fmt.Errorf("restore %q's pre_decision checkpoint to retry it: %w", d.ID(), err))
				}
				if p, err = s.plans.ByName(ctx, req.Name); err != nil {
					return res, err
				}
				res.Plan = p
			}
			emit(req.Events, Event{Kind: "retry", DecisionID: d.ID(), Attempt: r.Attempt})
			if res.Retried == nil {
				res.Retried = map[string]int{}
			}
			res.Retried[d.ID()]++
			if r, err = s.ops.execute(ctx, p, d.ID(), req.Live, req.Events, req.Warn, req.Funcs); err != nil {
				return res, err
			}
		}
		failure, a := r.failure(d.ID()), r.Attempt
		if failure == nil {
			continue
		}
		if policy == ContinueOnFailure && a.Status != plan.Interrupted {
			res.Failed = append(res.Failed, d.ID())
			if req.Warn != nil {
				req.Warn(failure.Error() + "; on_failure continue: going on with the next decision")
			}
			continue
		}
		p.SkipPending(d.ID())
		if err := s.plans.Save(context.WithoutCancel(ctx), p); err != nil {
			return res, err
		}
		if a.Status == plan.Interrupted {
			return res, failure
		}
		if policy == RollbackOnFailure && a.CheckpointID != "" {
			rb, err := s.ops.restore(ctx, restoreSpec{id: a.CheckpointID, req: RollbackRequest{Warn: req.Warn}})
			if err != nil {
				return res, errors.Join(failure, fmt.Errorf("roll back after the failure: %w", err))
			}
			res.Rollback = &rb
			if res.Plan, err = s.plans.ByName(ctx, req.Name); err != nil {
				return res, err
			}
			return res, failure
		}
		res.End = s.ops.recordEnd(ctx, p, d.ID(), req.Warn)
		return res, failure
	}
	if len(res.Ran) > 0 {
		res.End = s.ops.recordEnd(ctx, p, res.Ran[len(res.Ran)-1], req.Warn)
	}
	if len(res.Failed) > 0 {
		return res, fmt.Errorf("%d decision(s) failed and the run went on past them (on_failure continue): %s: %w",
			len(res.Failed), strings.Join(res.Failed, ", "), &DecisionFailedError{DecisionID: res.Failed[0], Status: plan.Failed})
	}
	return res, nil
}

// undoInterrupted rolls the workspace back to the pre_decision checkpoint of d's latest attempt when
// that attempt was interrupted (a run killed or stopped by a signal while it ran): under
// on_failure rollback an attempt that did not succeed is undone, and one that could not be undone
// when it ended is undone before the decision runs again, so the new attempt does not start from
// (and its own rollback does not keep) the interrupted one's partial changes. The workspace as it
// was is kept in the rollback's pre_rollback checkpoint. It returns the plan as it is after.
func (s *PlanService) undoInterrupted(ctx context.Context, p *plan.Plan, d *plan.Decision, req RunRequest) (*plan.Plan, error) {
	a, ok := d.Latest()
	if !ok || a.Status != plan.Interrupted || a.CheckpointID == "" {
		return p, nil
	}
	rb, err := s.ops.restore(ctx, restoreSpec{id: a.CheckpointID, req: RollbackRequest{Warn: req.Warn}})
	if err != nil {
		return p, fmt.Errorf("decision %q: undo its interrupted attempt %d (on_failure rollback) from its pre_decision checkpoint %s before running it again: %w",
			d.ID(), a.Number, a.CheckpointID, err)
	}
	if req.Warn != nil {
		req.Warn(fmt.Sprintf("decision %q: its attempt %d was interrupted; on_failure rollback restored its pre_decision checkpoint %s before running it again (the workspace as it was is checkpoint %s)",
			d.ID(), a.Number, a.CheckpointID, rb.Backup.ID()))
	}
	return s.plans.ByName(ctx, p.Name())
}

func emit(fn func(Event), e Event) {
	if fn != nil {
		fn(e)
	}
}

// sessionOf is SessionOf for a plan a lookup returned (none when it failed).
func sessionOf(p *plan.Plan, err error) (agent, session string, ok bool) {
	if err != nil || p == nil {
		return "", "", false
	}
	return SessionOf(p)
}

// ExecRequest describes `plan exec`: one decision, a shell Command or a Go function (Func, or
// FuncName registered with Register).
type ExecRequest struct {
	// ID is the decision's ID; "" generates one (GenerateDecisionID).
	ID   string
	Name string
	// Plan is the plan to add the decision to ("" is AdhocPlan, whatever ran last); one that does
	// not exist yet is started. A plan that runs from a plan file is refused.
	Plan    string
	Command string
	// Func is the decision as a Go function, recorded as plan.FuncCommand(FuncName, host) (FuncName
	// defaults to the decision's ID, which defaults to FuncName-N, or func-N without a FuncName).
	// With FuncName alone, the registered function of that name.
	Func     port.DecisionFunc
	FuncName string
	Live     io.Writer
	Events   func(Event)
	Warn     func(string)
}

// AdhocPlan is the name of the plan `plan exec` adds its decisions to without a plan named.
const AdhocPlan = "adhoc"

// Exec runs one ad-hoc decision appended to the ad-hoc plan req.Plan (AdhocPlan when ""), or to an
// agent's session plan named so; a plan that runs from a plan file is refused.
func (s *PlanService) Exec(ctx context.Context, req ExecRequest) (_ RunResult, err error) {
	args := []string{"--", req.Command}
	if req.Func != nil || req.FuncName != "" {
		args = []string{"--func", cmp.Or(req.FuncName, req.ID, "func")}
		if req.Command != "" {
			return RunResult{}, fault.Invalid("decision %q: a command or a Go function, not both", req.ID)
		}
	}
	if req.ID != "" {
		if err := plan.ValidateDecisionID(req.ID); err != nil {
			return RunResult{}, err
		}
	}
	ctx, done := s.ops.begin(ctx, "exec", req.Plan, args...)
	defer done(&err)
	ctx, release, err := s.guard.Enter(ctx, "exec")
	if err != nil {
		return RunResult{}, err
	}
	defer release()
	defer s.ops.track()()
	// Ad-hoc decisions live in an ad-hoc plan (adhoc, or --plan NAME), never in whichever plan ran
	// last: a plan file's plan re-executes what a correction reverts, and an agent's session holds
	// the agent's tool calls.
	if req.Plan == "" {
		req.Plan = AdhocPlan
	}
	p, err := s.ops.plan(ctx, req.Plan)
	if _, _, agent := sessionOf(p, err); err == nil && !agent && p.Source() != "" {
		return RunResult{}, fault.Conflict("plan %q runs from its plan file %s: add the decision to that file, or leave out --plan "+
			"(ad-hoc decisions go to the plan %s); nothing was run", p.Name(), p.Source(), AdhocPlan)
	}
	switch {
	case errors.Is(err, fault.ErrNotFound):
		if p, err = plan.New(ident.New(s.clock.Now()), req.Plan, "", true, s.clock.Now()); err != nil {
			return RunResult{}, err
		}
	case err != nil:
		return RunResult{}, err
	}
	note(ctx, func(op *port.LoggedOperation) { op.Plan = p.Name() })
	run := req.Command
	var funcs map[string]port.DecisionFunc
	if req.Func != nil || req.FuncName != "" {
		if req.ID == "" {
			req.ID = nextDecisionID(p, slug(cmp.Or(req.FuncName, "func")))
		}
		fname := cmp.Or(req.FuncName, req.ID)
		if run, err = plan.FuncCommand(fname, s.ops.hostName()); err != nil {
			return RunResult{}, err
		}
		if req.Func != nil {
			funcs = map[string]port.DecisionFunc{fname: req.Func}
		}
	}
	if req.ID == "" {
		req.ID = GenerateDecisionID(p, run)
	}
	name := req.Name
	if name == "" {
		name = req.ID
	}
	if _, err := p.Append(plan.Definition{ID: req.ID, Name: name, Run: run}); err != nil {
		return RunResult{}, err
	}
	if err := s.ops.funcsReady(p, []string{req.ID}, funcs); err != nil {
		return RunResult{}, err
	}
	if err := s.plans.Save(ctx, p); err != nil {
		return RunResult{}, err
	}
	note(ctx, func(op *port.LoggedOperation) { op.Plan = p.Name() })
	res := RunResult{Plan: p, Ran: []string{req.ID}}
	r, err := s.ops.execute(ctx, p, req.ID, req.Live, req.Events, req.Warn, funcs)
	if err != nil {
		return res, err
	}
	if r.Attempt.Status != plan.Interrupted {
		res.End = s.ops.recordEnd(ctx, p, req.ID, req.Warn)
	}
	return res, r.failure(req.ID)
}

// recordEnd takes the post_run checkpoint: the state a run, an exec or a correction's re-execution
// ended in, after decision last, so rollback, clone and diff reach what the plan produced, and the
// name `DECISION` of the last decision has a checkpoint to name. Inside the run's change tracking it costs what changed since
// the last decision's own snapshot: nothing, mostly. A plan run without checkpoints records none.
// Failing to record it is a warning, not a failed run: every decision's own state is recorded
// already.
func (o *Operations) recordEnd(ctx context.Context, p *plan.Plan, last string, warn func(string)) *checkpoint.Checkpoint {
	if !p.Checkpoints() {
		return nil
	}
	cp, err := o.create(context.WithoutCancel(ctx), CreateRequest{
		Type: checkpoint.PostRun, DecisionID: last, Note: fmt.Sprintf("end of plan %s, after decision %s", p.Name(), last),
	})
	if err != nil {
		if warn != nil {
			warn("the state the run ended in was not recorded as a checkpoint: " + err.Error())
		}
		return nil
	}
	return cp
}

// AttemptToken names one attempt's processes: the executor puts it in their environment so a later
// command can find and stop what a killed plan left running.
func AttemptToken(p *plan.Plan, id string, number int) string {
	return fmt.Sprintf("%s/%s/%d", p.ID(), id, number)
}

// Status returns the current plan.
func (s *PlanService) Status(ctx context.Context) (*plan.Plan, error) { return s.StatusOf(ctx, "") }

// StatusOf returns the plan called name, or the current plan when name is "".
func (s *PlanService) StatusOf(ctx context.Context, name string) (*plan.Plan, error) {
	return s.ops.namedPlan(ctx, name)
}

// namedPlan is plan with the messages a user needs when there is none.
func (o *Operations) namedPlan(ctx context.Context, name string) (*plan.Plan, error) {
	p, err := o.plan(ctx, name)
	switch {
	case errors.Is(err, fault.ErrNotFound) && name != "":
		return nil, fault.NotFound("no plan %q in this workspace (`plan plans` lists them)", name)
	case errors.Is(err, fault.ErrNotFound):
		return nil, fault.NotFound("no plan has run in this workspace yet: `plan run FILE` or `plan exec` starts one")
	}
	return p, err
}

// PlanSummary is one plan of the workspace, for `plan plans`.
type PlanSummary struct {
	Plan      *plan.Plan
	Current   bool
	Decisions map[plan.Status]int
	LastRunAt time.Time // zero when no decision ran
}

// Plans lists every plan of the workspace, the current one first.
func (s *PlanService) Plans(ctx context.Context) ([]PlanSummary, error) {
	ps, err := s.plans.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]PlanSummary, 0, len(ps))
	for i, p := range ps {
		sum := PlanSummary{Plan: p, Current: i == 0, Decisions: map[plan.Status]int{}}
		for _, d := range p.Decisions() {
			sum.Decisions[d.Status()]++
			if a, ran := d.Latest(); ran && a.StartedAt.After(sum.LastRunAt) {
				sum.LastRunAt = a.StartedAt
			}
		}
		out = append(out, sum)
	}
	return out, nil
}

// Log opens the recorded output of decision id's attempt (0: the latest).
func (s *PlanService) Log(ctx context.Context, id string, attempt int) (io.ReadCloser, plan.Attempt, error) {
	return s.LogOf(ctx, "", id, attempt)
}

// LogOf is Log for decision id of the plan called planName ("" is the current plan).
func (s *PlanService) LogOf(ctx context.Context, planName, id string, attempt int) (io.ReadCloser, plan.Attempt, error) {
	p, err := s.StatusOf(ctx, planName)
	if err != nil {
		return nil, plan.Attempt{}, err
	}
	a, err := pickAttempt(p, id, attempt)
	if err != nil {
		return nil, plan.Attempt{}, err
	}
	if strings.TrimSpace(a.LogPath) == "" {
		return nil, a, fault.NotFound("attempt %d of %q has no log", a.Number, id)
	}
	rc, err := s.exec.OpenLog(a.LogPath)
	return rc, a, err
}

// pickAttempt returns attempt number attempt of decision id (the latest when attempt is 0).
func pickAttempt(p *plan.Plan, id string, attempt int) (plan.Attempt, error) {
	d, err := p.Decision(id)
	if err != nil {
		return plan.Attempt{}, err
	}
	as := d.Attempts()
	if len(as) == 0 {
		return plan.Attempt{}, fault.NotFound("decision %q has not run yet", id)
	}
	if attempt == 0 {
		return as[len(as)-1], nil
	}
	if attempt > len(as) {
		return plan.Attempt{}, fault.NotFound("decision %q has %d attempts, not %d", id, len(as), attempt)
	}
	return as[attempt-1], nil
}
