// Package plan is the plan aggregate: a named, ordered list of decisions, each with the history of
// its executions (attempts). The aggregate enforces the legal status transitions; no other layer
// sets a status directly.
//
// Invariants:
//   - decision IDs are unique within a plan; a decision plan runs has an ID matching
//     ^[a-z0-9][a-z0-9_-]{0,63}$, one recorded from outside (Outside, an agent's tool call) keeps
//     the agent's ID, ^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$;
//   - plan never runs an Outside decision: it cannot start an attempt of one (a correction's
//     re-execution refuses it); its attempts are recorded (RecordOutside, FinishOutside), several
//     of them may be running at once (an agent's parallel tool calls), and they never count as
//     the plan's one running decision;
//   - a decision's status is its latest attempt's status, or pending/skipped before any attempt;
//   - at most one attempt of a plan is running at any time, and a new attempt starts only from
//     pending, skipped, failed, interrupted or reverted: a succeeded decision must be reverted first;
//   - attempts are numbered 1, 2, … per decision and never removed; reverting marks them, so the
//     record of what ran is never lost;
//   - a decision whose command is go-func:NAME@HOST (FuncCommand) is the Go function NAME of the
//     host program HOST, not a shell command.
package plan

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/tree"
)

// Status is a decision's or an attempt's state.
type Status string

// The statuses of the contract.
const (
	Pending     Status = "pending"
	Running     Status = "running"
	Succeeded   Status = "succeeded"
	Failed      Status = "failed"
	Interrupted Status = "interrupted"
	Reverted    Status = "reverted"
	Skipped     Status = "skipped"
)

var (
	runID      = ident.NewPattern("a-z0-9", "a-z0-9_-", 64)        // ^[a-z0-9][a-z0-9_-]{0,63}$
	decisionID = ident.NewPattern("A-Za-z0-9", "A-Za-z0-9_-", 128) // ^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$
)

// ValidateDecisionID checks a name that may name a decision of either kind: one plan runs
// (ValidateRunID) or an agent's tool call recorded from outside, whose ID is the agent's own
// (Claude Code's toolu_01AbC…, Codex's call_…): letters of both cases, digits, '_' and '-'.
func ValidateDecisionID(id string) error {
	if !decisionID.Match(id) {
		return fault.Invalid("decision ID %q must match ^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$", id)
	}
	return nil
}

// ValidateRunID checks the ID of a decision plan runs (a plan file's or `plan exec`'s).
func ValidateRunID(id string) error {
	if !runID.Match(id) {
		return fault.Invalid("decision ID %q must match ^[a-z0-9][a-z0-9_-]{0,63}$", id)
	}
	return nil
}

// Definition is what a plan file (or `plan exec`) says about a decision.
type Definition struct {
	ID string
	// Kind says who runs the decision: plan (Executed) or something outside it (Outside).
	Kind    Kind
	Name    string
	Run     string
	Timeout time.Duration
	Env     map[string]string
	// Labels go on the decision's pre_decision checkpoints (phase, stage, task id).
	Labels map[string]string
	// Retries is how many times a failed attempt is retried, each from the decision's pre_decision
	// checkpoint (0 to MaxRetries).
	Retries int
	// OnFailure overrides the run's policy for this decision: stop, rollback or continue ("" keeps
	// the run's).
	OnFailure string
	// Validate is a command run after the decision's own command succeeded; its failure fails the
	// decision.
	Validate string
}

// MaxRetries bounds a decision's retries.
const MaxRetries = 10

func (d Definition) validate() error {
	if d.Kind == Outside {
		return d.validateOutside()
	}
	if d.Kind != Executed {
		return fault.Invalid("decision %q: unknown kind %q", d.ID, d.Kind)
	}
	if err := ValidateRunID(d.ID); err != nil {
		return err
	}
	if err := checkpoint.ValidateLabels(d.Labels); err != nil {
		return fault.Invalid("decision %q: %s", d.ID, err.Error())
	}
	if d.Retries < 0 || d.Retries > MaxRetries {
		return fault.Invalid("decision %q: retries must be 0 to %d, not %d", d.ID, MaxRetries, d.Retries)
	}
	switch d.OnFailure {
	case "", "stop", "rollback", "continue":
	default:
		return fault.Invalid("decision %q: on_failure must be stop, rollback or continue, not %q", d.ID, d.OnFailure)
	}
	if strings.TrimSpace(d.Run) == "" {
		return fault.Invalid("decision %q has no command to run", d.ID)
	}
	if d.Timeout < 0 {
		return fault.Invalid("decision %q has a negative timeout", d.ID)
	}
	return nil
}

// Attempt is one execution of a decision.
type Attempt struct {
	Number       int
	Status       Status
	Command      string
	CheckpointID checkpoint.ID // the pre_decision checkpoint, "" when checkpoints were off
	ResultTree   tree.Hash     // the workspace tree right after the attempt, zero when unknown
	ExitCode     *int
	StartedAt    time.Time
	FinishedAt   time.Time
	Artifacts    []artifact.Artifact
	RevertedBy   string // the rollback or correction that reverted it
	// RevertedFrom is the status the attempt had before it was reverted ("" when it is not, or
	// was reverted before this was kept).
	RevertedFrom Status
	LogPath      string
}

// Decision is one step of a plan.
type Decision struct {
	def      Definition
	skipped  bool
	attempts []*Attempt
	// correctedBy is the correction whose command replaced the plan file's (Redefine), fileRun the
	// command the plan file gave when it did: the decision keeps the correction's command until the
	// plan file gives another one than fileRun (Define). Both "" when no correction stands.
	correctedBy, fileRun string
}

// Corrected says which correction replaced the decision's command (by) and what the plan file's
// command was then (fileRun); ok is false when the decision's command is the plan file's own.
func (d *Decision) Corrected() (by, fileRun string, ok bool) {
	return d.correctedBy, d.fileRun, d.correctedBy != ""
}

// ID returns the decision's ID.
func (d *Decision) ID() string { return d.def.ID }

// Definition returns what the plan says about the decision.
func (d *Decision) Definition() Definition {
	def := d.def
	def.Env = maps.Clone(d.def.Env)
	return def
}

// Attempts returns copies of the attempts, oldest first: the aggregate changes them only through
// its methods.
func (d *Decision) Attempts() []Attempt {
	out := make([]Attempt, len(d.attempts))
	for i, a := range d.attempts {
		out[i] = a.clone()
	}
	return out
}

// Latest returns a copy of the newest attempt; ok is false when the decision never ran.
func (d *Decision) Latest() (Attempt, bool) {
	if len(d.attempts) == 0 {
		return Attempt{}, false
	}
	return d.attempts[len(d.attempts)-1].clone(), true
}

// latest is the newest attempt itself, for the aggregate's own changes.
func (d *Decision) latest() *Attempt {
	if len(d.attempts) == 0 {
		return nil
	}
	return d.attempts[len(d.attempts)-1]
}

// clone copies a, sharing nothing with it.
func (a *Attempt) clone() Attempt {
	c := *a
	c.Artifacts = slices.Clone(a.Artifacts)
	if a.ExitCode != nil {
		code := *a.ExitCode
		c.ExitCode = &code
	}
	return c
}

// Status is the latest attempt's status, or pending/skipped.
func (d *Decision) Status() Status {
	if a := d.latest(); a != nil {
		return a.Status
	}
	if d.skipped {
		return Skipped
	}
	return Pending
}

// Plan is the aggregate root.
type Plan struct {
	id          string
	name        string
	source      string
	checkpoints bool
	createdAt   time.Time
	decisions   []*Decision
	turns       []Turn
	// What changed since the plan was loaded, for a repository that saves only that: whole is set
	// when the list itself changed (order, removals; a new plan), dirty names changed decisions.
	whole   bool
	dirty   map[string]bool
	partial bool
}

// New returns an empty plan.
func New(id, name, source string, checkpoints bool, now time.Time) (*Plan, error) {
	if strings.TrimSpace(name) == "" {
		return nil, fault.Invalid("a plan needs a name")
	}
	return &Plan{id: id, name: name, source: source, checkpoints: checkpoints, createdAt: now.UTC(), whole: true}, nil
}

// DecisionState is the persisted form of a decision, for Rehydrate.
type DecisionState struct {
	Def      Definition
	Skipped  bool
	Attempts []*Attempt
	// CorrectedBy and FileRun are Decision.Corrected's: the correction whose command Def.Run is,
	// and the plan file's command it replaced ("" both when Def.Run is the file's).
	CorrectedBy, FileRun string
}

// Rehydrate rebuilds a stored plan. Only persistence mappers call it.
func Rehydrate(id, name, source string, checkpoints bool, createdAt time.Time, ds []DecisionState) *Plan {
	// Whole until a repository that loaded it says otherwise (Saved): saving a plan rebuilt from
	// elsewhere writes all of it.
	p := &Plan{id: id, name: name, source: source, checkpoints: checkpoints, createdAt: createdAt.UTC(), whole: true}
	for _, s := range ds {
		d := &Decision{def: s.Def, skipped: s.Skipped, attempts: s.Attempts}
		if s.CorrectedBy != "" {
			d.correctedBy, d.fileRun = s.CorrectedBy, s.FileRun
		}
		p.decisions = append(p.decisions, d)
	}
	return p
}

// ID returns the plan's ID.
func (p *Plan) ID() string { return p.id }

// Name returns the plan's name.
func (p *Plan) Name() string { return p.name }

// Source returns the plan file the plan came from ("" for ad-hoc plans).
func (p *Plan) Source() string { return p.source }

// Checkpoints reports whether decisions get pre_decision checkpoints.
func (p *Plan) Checkpoints() bool { return p.checkpoints }

// SetCheckpoints records the latest run's checkpoint setting.
func (p *Plan) SetCheckpoints(on bool) { p.checkpoints = on }

// CreatedAt returns when the plan was first run.
func (p *Plan) CreatedAt() time.Time { return p.createdAt }

// Decisions returns the decisions in plan order. Callers must not modify them.
func (p *Plan) Decisions() []*Decision { return p.decisions }

// Decision finds a decision by ID.
func (p *Plan) Decision(id string) (*Decision, error) {
	for _, d := range p.decisions {
		if d.def.ID == id {
			return d, nil
		}
	}
	return nil, fault.NotFound("decision %q not found in plan %q", id, p.name)
}

// Define brings the plan in line with a plan file's definitions: the decisions take the file's
// order, new ones in their place; existing ones take the file's command, name, env and timeout for
// future attempts and keep their history; decisions the file no longer lists stay after the
// neighbour they followed. A file that changes the relative order of decisions that already ran is
// refused: resuming it would be ambiguous.
//
// A decision a correction gave a new command (Redefine) keeps it while the file gives the command
// it gave when the correction was made: the correction stands until the file itself changes that
// decision's command, and then the file's command supersedes it (Corrected is cleared).
func (p *Plan) Define(defs []Definition) error {
	if p.partial {
		return errPartial
	}
	seen := map[string]bool{}
	for _, d := range defs {
		if err := d.validate(); err != nil {
			return err
		}
		if seen[d.ID] {
			return fault.Invalid("decision ID %q appears twice", d.ID)
		}
		seen[d.ID] = true
	}
	// Decisions that ran must keep their relative order.
	ranBefore := map[string]int{}
	for i, d := range p.decisions {
		if len(d.attempts) > 0 {
			ranBefore[d.def.ID] = i
		}
	}
	last, lastID := -1, ""
	for _, def := range defs {
		if i, ran := ranBefore[def.ID]; ran {
			if i < last {
				return fault.Conflict("plan file puts decision %q, which already ran, after %q, which ran later; start a plan with a new name instead", def.ID, lastID)
			}
			last, lastID = i, def.ID
		}
	}
	ordered := make([]*Decision, 0, len(defs))
	for _, def := range defs {
		d, err := p.Decision(def.ID)
		if err != nil {
			d = &Decision{}
		}
		if d.correctedBy != "" {
			if def.Run == d.fileRun {
				def.Run = d.def.Run
			} else {
				d.correctedBy, d.fileRun = "", ""
			}
		}
		d.def = def
		ordered = append(ordered, d)
	}
	// Decisions the file dropped keep their record, placed after the decision they followed.
	for i, d := range p.decisions {
		if seen[d.def.ID] {
			continue
		}
		at := 0
		if i > 0 {
			at = slices.Index(ordered, p.decisions[i-1]) + 1
		}
		ordered = slices.Insert(ordered, at, d)
	}
	p.decisions = ordered
	p.whole = true
	return nil
}

// Append adds one ad-hoc decision at the end (plan exec). An existing decision that has not
// succeeded gets the new definition and may run again.
func (p *Plan) Append(def Definition) (*Decision, error) {
	if p.partial {
		return nil, errPartial
	}
	if err := def.validate(); err != nil {
		return nil, err
	}
	if def.Kind == Outside {
		return nil, fault.Invalid("decision %q is recorded from outside (RecordOutside), not appended to run", def.ID)
	}
	if d, err := p.Decision(def.ID); err == nil {
		if d.Status() == Succeeded {
			return nil, fault.Conflict("decision %q already succeeded; correct it with `plan correct --decision %s`", def.ID, def.ID)
		}
		if d.def.Kind == Outside {
			return nil, errOutside(def.ID)
		}
		d.def = def
		d.correctedBy, d.fileRun = "", "" // the command given now is the decision's
		p.mark(def.ID)
		return d, nil
	}
	d := &Decision{def: def}
	p.decisions = append(p.decisions, d)
	p.mark(def.ID)
	return d, nil
}

// Running returns the running decision plan executes, if any (Outside decisions running in their
// agent are not plan's: see RunningOutside).
func (p *Plan) Running() *Decision {
	for _, d := range p.decisions {
		if d.Status() == Running && d.def.Kind == Executed {
			return d
		}
	}
	return nil
}

// Start begins a new attempt of decision id, running its definition's command (Redefine changes
// it), and returns a copy of it.
func (p *Plan) Start(id string, checkpointID checkpoint.ID, logPath string, now time.Time) (Attempt, error) {
	d, err := p.Decision(id)
	if err != nil {
		return Attempt{}, err
	}
	if d.def.Kind == Outside {
		return Attempt{}, errOutside(id)
	}
	if r := p.Running(); r != nil {
		return Attempt{}, fault.Conflict("decision %q is still running", r.ID())
	}
	switch d.Status() {
	case Pending, Skipped, Failed, Interrupted, Reverted:
	default:
		return Attempt{}, fault.Conflict("decision %q is %s and cannot start again", id, d.Status())
	}
	a := &Attempt{
		Number: len(d.attempts) + 1, Status: Running, Command: d.def.Run, CheckpointID: checkpointID,
		StartedAt: now.UTC(), LogPath: logPath,
	}
	d.attempts = append(d.attempts, a)
	d.skipped = false
	p.mark(id)
	return a.clone(), nil
}

// Outcome is how an attempt ended.
type Outcome struct {
	Status     Status // Succeeded, Failed or Interrupted
	ExitCode   *int
	ResultTree tree.Hash
	Artifacts  []artifact.Artifact
}

// Finish ends decision id's running attempt.
func (p *Plan) Finish(id string, o Outcome, now time.Time) error {
	d, err := p.Decision(id)
	if err != nil {
		return err
	}
	a := d.latest()
	if a == nil || a.Status != Running {
		return fault.Conflict("decision %q has no running attempt", id)
	}
	switch o.Status {
	case Succeeded, Failed, Interrupted:
	default:
		return fault.Invalid("an attempt cannot finish as %s", o.Status)
	}
	a.Status, a.ExitCode, a.ResultTree, a.Artifacts, a.FinishedAt = o.Status, o.ExitCode, o.ResultTree, slices.Clone(o.Artifacts), now.UTC()
	p.mark(id)
	return nil
}

// SkipPending marks every pending decision after id as skipped (a run stopped before them).
func (p *Plan) SkipPending(after string) {
	found := false
	for _, d := range p.decisions {
		if found && d.Status() == Pending {
			d.skipped = true
			p.mark(d.def.ID)
		}
		if d.def.ID == after {
			found = true
		}
	}
}

// RevertStartedSince marks every finished attempt that started at or after t as reverted by op and
// returns the IDs of the decisions whose latest attempt that reverted, in plan order.
func (p *Plan) RevertStartedSince(t time.Time, op string) []string {
	return p.revertStartedSince(t, func(a *Attempt) { a.Status, a.RevertedBy, a.RevertedFrom = Reverted, op, a.Status })
}

// Unrevert gives the attempts operation op reverted the status they had before (an undo of that
// operation), and returns the decisions it changed. Attempts reverted before their earlier status
// was kept, or reverted since by another operation, stay as they are.
func (p *Plan) Unrevert(op string) []string {
	var ids []string
	for _, d := range p.decisions {
		changed := false
		for _, a := range d.attempts {
			if a.Status == Reverted && a.RevertedBy == op && a.RevertedFrom != "" {
				a.Status, a.RevertedBy, a.RevertedFrom = a.RevertedFrom, "", ""
				changed = true
			}
		}
		if changed {
			p.mark(d.def.ID)
			ids = append(ids, d.def.ID)
		}
	}
	return ids
}

// RevertOne marks decision id's latest attempt as reverted by op (a surgical revert): unlike
// RevertStartedSince it leaves every other decision as it is. It is idempotent for the same op.
func (p *Plan) RevertOne(id, op string) error {
	d, err := p.Decision(id)
	if err != nil {
		return err
	}
	a := d.latest()
	switch {
	case a == nil:
		return fault.Conflict("decision %q has not executed yet", id)
	case a.Status == Reverted && a.RevertedBy == op:
		return nil
	case a.Status != Succeeded && a.Status != Failed && a.Status != Interrupted:
		return fault.Conflict("decision %q is %s; only a finished decision can be reverted", id, a.Status)
	}
	a.Status, a.RevertedBy, a.RevertedFrom = Reverted, op, a.Status
	p.mark(id)
	return nil
}

// Rerevert marks again as reverted by op the attempts op had reverted before an undo gave them
// their status back (a redo of that undo): of each decision in ids, the latest attempt that started
// before op did (before), when it is finished. It returns the decisions it changed.
func (p *Plan) Rerevert(ids []string, before time.Time, op string) []string {
	var changed []string
	for _, id := range ids {
		d, err := p.Decision(id)
		if err != nil {
			continue // a decision the plan file no longer has: nothing to mark
		}
		for i := len(d.attempts) - 1; i >= 0; i-- {
			a := d.attempts[i]
			if !a.StartedAt.Before(before) {
				continue
			}
			switch a.Status {
			case Succeeded, Failed, Interrupted:
				a.Status, a.RevertedBy, a.RevertedFrom = Reverted, op, a.Status
				p.mark(id)
				changed = append(changed, id)
			}
			break
		}
	}
	return changed
}

// StartedSince lists, without changing anything, the decisions RevertStartedSince(t) would revert.
func (p *Plan) StartedSince(t time.Time) []string {
	return p.revertStartedSince(t, func(*Attempt) {})
}

func (p *Plan) revertStartedSince(t time.Time, revert func(*Attempt)) []string {
	var ids []string
	for _, d := range p.decisions {
		changed := false
		for _, a := range d.attempts {
			if a.StartedAt.Before(t) {
				continue
			}
			switch a.Status {
			case Succeeded, Failed, Interrupted:
				revert(a)
				changed = true
			}
		}
		if changed {
			p.mark(d.def.ID)
			ids = append(ids, d.def.ID)
		}
	}
	return ids
}

// Repository persists plans. The current plan is the one most recently run.
type Repository interface {
	// Current returns the current plan, or fault.ErrNotFound when none ran yet.
	Current(ctx context.Context) (*Plan, error)
	// ByName returns the plan with this name, or fault.ErrNotFound.
	ByName(ctx context.Context, name string) (*Plan, error)
	// Save inserts or replaces p and makes it the current plan.
	Save(ctx context.Context, p *Plan) error
	// List returns every plan, the current (most recently saved) one first.
	List(ctx context.Context) ([]*Plan, error)
	// Partial returns the plan called name with only those of decisions ids it has, and its turns
	// (Plan.Partial): reading and saving it costs what those decisions do, not the whole plan. It
	// returns fault.ErrNotFound when there is no such plan.
	Partial(ctx context.Context, name string, ids []string) (*Plan, error)
	// RunningExecuted returns the names of the plans with a running attempt of an Executed
	// decision, without reading the plans.
	RunningExecuted(ctx context.Context) ([]string, error)
}

// Reexecution lists the decisions a correction of decision from runs again, in plan order: from
// itself and every later decision that has not succeeded (a reverted, failed, interrupted, skipped
// or pending one). Decisions before from, and later ones that succeeded since, stay as they are.
func (p *Plan) Reexecution(from string) ([]string, error) {
	if _, err := p.Decision(from); err != nil {
		return nil, err
	}
	var ids []string
	started := false
	for _, d := range p.decisions {
		started = started || d.def.ID == from
		if started && d.Status() != Succeeded {
			if d.def.Kind == Outside {
				return nil, errOutside(d.def.ID)
			}
			ids = append(ids, d.def.ID)
		}
	}
	return ids, nil
}

// Redefine replaces decision id's command for its next attempts with correction by's (a
// correction's --run): the decision keeps it until the plan file changes the command (Define), or
// the correction is undone (Uncorrect).
func (p *Plan) Redefine(id, command, by string) error {
	d, err := p.Decision(id)
	if err != nil {
		return err
	}
	if d.def.Kind == Outside {
		return errOutside(id)
	}
	if strings.TrimSpace(command) == "" {
		return fault.Invalid("decision %q needs a command", id)
	}
	if strings.TrimSpace(by) == "" {
		return fault.Invalid("decision %q: a new command needs the correction that gives it", id)
	}
	if d.correctedBy == "" {
		d.fileRun = d.def.Run
	}
	d.correctedBy = by
	d.def.Run = command
	p.mark(id)
	return nil
}

// Uncorrect gives the decisions whose command correction by replaced the plan file's command back
// (the undo of that correction), and returns their IDs.
func (p *Plan) Uncorrect(by string) []string {
	var ids []string
	for _, d := range p.decisions {
		if d.correctedBy == by && by != "" {
			d.def.Run, d.correctedBy, d.fileRun = d.fileRun, "", ""
			p.mark(d.def.ID)
			ids = append(ids, d.def.ID)
		}
	}
	return ids
}

// funcPrefix starts the command of a decision that is a Go function of a host program. A shell
// given it fails (no such command), so such a decision is never run as a shell command by mistake.
const funcPrefix = "go-func:"

// funcName is a Go function's name in a decision's command: ^[a-z0-9][a-z0-9_.-]{0,63}$.
var funcName = ident.NewPattern("a-z0-9", "a-z0-9_.-", 64)

// splitFuncCommand reads ^go-func:(NAME)@(HOST)$, NAME a funcName and HOST 1 to 128 characters
// none of which is white space (\S: not tab, newline, form feed, carriage return or space; a byte
// that is not UTF-8 counts as one character).
func splitFuncCommand(run string) (name, host string, ok bool) {
	rest, ok := strings.CutPrefix(run, funcPrefix)
	if !ok {
		return "", "", false
	}
	name, host, ok = strings.Cut(rest, "@") // a name holds no '@'
	if !ok || !funcName.Match(name) || host == "" || utf8.RuneCountInString(host) > 128 || strings.ContainsAny(host, "\t\n\f\r ") {
		return "", "", false
	}
	return name, host, true
}

// FuncCommand is the command recorded for a decision that is the Go function called name in the
// host program host: "go-func:NAME@HOST". Both must be valid (name as a decision ID, plus "."; host
// without white space, at most 128 bytes).
func FuncCommand(name, host string) (string, error) {
	run := funcPrefix + name + "@" + host
	if _, _, ok := splitFuncCommand(run); !ok {
		return "", fault.Invalid("Go function %q of host %q: the name must match ^[a-z0-9][a-z0-9_.-]{0,63}$ and the host name be 1 to 128 bytes without white space", name, host)
	}
	return run, nil
}

// ParseFuncCommand reads a command FuncCommand made; ok is false for any other command.
func ParseFuncCommand(run string) (name, host string, ok bool) {
	return splitFuncCommand(run)
}
