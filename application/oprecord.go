package application

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

// Recording is one operation on its way into the operation log (`plan history`). The services
// record their own operations, so whoever calls them (the CLI, a host program) gets the same log
// and the same `plan undo`:
//   - a service called with a context that carries no Recording starts one, fills it and writes it
//     when it returns (kind, arguments, outcome, the checkpoints it made or used, its safety
//     checkpoint, and one "decision" entry per decision attempt it started);
//   - a service called with a context that carries one (WithRecording) adds what it knows to that
//     one and writes nothing: the caller that made it writes it, once, with Finish. The CLI makes
//     one per command, so a command that calls several services is one entry;
//   - a context marked Unrecorded records nothing (a command the log does not keep, a dry run).
type Recording struct {
	mu    sync.Mutex
	entry port.LoggedOperation
	// decisions logs each decision attempt started since the operation began as its own entry.
	decisions bool
	off       bool
	// folded is the entry as the operation's last transaction wrote it (see commitLogged), nil
	// until then, and foldLog the log it was written to.
	folded  *port.LoggedOperation
	foldLog port.OperationReplacer
	// also are entries of operations it ran as steps of its own that stand on their own in the
	// log (run --rerun-changed's rollback), written after its entry and before its decisions'.
	also []port.LoggedOperation
}

// snapshot is the entry so far, whether the operation logs its decisions, and whether it records.
func (r *Recording) snapshot() (port.LoggedOperation, bool, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entry, r.decisions, r.off
}

// fold notes that the operation's entry was written as e, in its last transaction, to log.
func (r *Recording) fold(e port.LoggedOperation, log port.OperationReplacer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.folded, r.foldLog = &e, log
}

// NewRecording starts recording an operation of kind begun at start. args is how it was asked for
// (the CLI's command line); plan the plan it works on ("" for the current one or none).
func NewRecording(kind string, args []string, plan string, start time.Time) *Recording {
	return &Recording{
		entry:     port.LoggedOperation{Kind: kind, Args: slices.Clone(args), Plan: plan, StartedAt: start.UTC()},
		decisions: kind == "run" || kind == "exec",
	}
}

// SetPlan names the plan the operation works on, when the command knew it other than by --plan
// (an agent session's rewind).
func (r *Recording) SetPlan(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entry.Plan = name
}

type recordingKey struct{}

// WithRecording returns ctx carrying r: the services it reaches add to r instead of logging their
// own entry.
func WithRecording(ctx context.Context, r *Recording) context.Context {
	return context.WithValue(ctx, recordingKey{}, r)
}

// Unrecorded returns ctx under which the services log nothing.
func Unrecorded(ctx context.Context) context.Context {
	return WithRecording(ctx, &Recording{off: true})
}

func recordingOf(ctx context.Context) *Recording {
	r, _ := ctx.Value(recordingKey{}).(*Recording)
	return r
}

// note lets fn fill in what the running service knows about the operation ctx records.
func note(ctx context.Context, fn func(op *port.LoggedOperation)) {
	r := recordingOf(ctx)
	if r == nil || r.off {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(&r.entry)
}

// noteAlso adds to the operation ctx records the entry of an operation it ran as a step that
// stands on its own in the log (and in undo's walk): run --rerun-changed's rollback.
func noteAlso(ctx context.Context, op port.LoggedOperation) {
	r := recordingOf(ctx)
	if r == nil || r.off {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.also = append(r.also, op)
}

// noteUse adds a checkpoint the operation used (a rollback's target).
func noteUse(op *port.LoggedOperation, id checkpoint.ID) {
	if id != "" && !slices.Contains(op.Checkpoints, id) {
		op.Checkpoints = append(op.Checkpoints, id)
	}
}

// begin starts recording the service call about to run, unless ctx already records (or refuses to
// record) an operation or the workspace keeps no log. The service defers done(&err).
func (o *Operations) begin(ctx context.Context, kind, planName string, args ...string) (context.Context, func(*error)) {
	if o.oplog == nil || recordingOf(ctx) != nil {
		return ctx, func(*error) {}
	}
	r := NewRecording(kind, append([]string{kind}, args...), planName, o.clock.Now())
	ctx = WithRecording(ctx, r)
	return ctx, func(err *error) {
		// A log that cannot be written does not change the operation's outcome: it happened.
		_ = o.finish(context.WithoutCancel(ctx), r, Outcome(*err))
	}
}

// The names of how an operation ended (LoggedOperation.Outcome), besides a fault kind's
// (fault.Name). They are stored and printed (`plan history`, the CLI's JSON kinds): never rename
// one. A decision attempt's own entry names its status instead ("failed", "reverted", …).
const (
	OutcomeOK          = "ok"
	OutcomeInterrupted = "interrupted"
	// OutcomeValidationFailed: a check failed, after a restore that stands (ValidationFailedError)
	// or before a checkpoint it refused (NotValidError).
	OutcomeValidationFailed = "validation_failed"
	OutcomeDecisionFailed   = "decision_failed"
	OutcomeInternal         = "internal"
	// OutcomeUsage is a caller's, never Outcome's: the CLI's, for a command line it refused.
	OutcomeUsage = "usage"
)

// Outcome names how an operation ended for the log: OutcomeOK, or how it failed (the kind of its
// error, see Outcomes). It is the one classifier of an error into such a name: the CLI's exit
// codes and JSON kinds follow it.
func Outcome(err error) string {
	var vf *ValidationFailedError
	var nv *NotValidError
	var df *DecisionFailedError
	name := fault.Name(err)
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, context.Canceled):
		return OutcomeInterrupted
	case name != "":
		return name
	case errors.As(err, &vf), errors.As(err, &nv):
		return OutcomeValidationFailed
	case errors.As(err, &df):
		return OutcomeDecisionFailed
	}
	return OutcomeInternal
}

// Outcomes are the names Outcome returns, each once.
func Outcomes() []string {
	out := []string{OutcomeOK, OutcomeInterrupted}
	for _, k := range fault.Kinds() {
		out = append(out, fault.Name(k))
	}
	return append(out, OutcomeValidationFailed, OutcomeDecisionFailed, OutcomeInternal)
}

// Finish writes r, which ended with outcome (Outcome's names, or the caller's own such as OutcomeUsage),
// to the log: its entry, then one entry per decision attempt it started. An operation refused
// before it changed anything (bad input, nothing found, a busy workspace) is not logged: the log
// would only fill with noise. Finishing r twice writes it once.
func (s *HistoryService) Finish(ctx context.Context, r *Recording, outcome string) error {
	return s.ops.finish(ctx, r, outcome)
}

func (o *Operations) finish(ctx context.Context, r *Recording, outcome string) error {
	r.mu.Lock()
	entry, off, folded, foldLog, also := r.entry, r.off, r.folded, r.foldLog, r.also
	r.off = true
	r.mu.Unlock()
	if off || o.oplog == nil {
		return nil
	}
	entry, skip, err := o.entryAsEnded(ctx, entry, outcome)
	if err != nil || skip {
		return err
	}
	var decisions []port.LoggedOperation
	if r.decisions {
		if p, err := o.namedPlan(ctx, entry.Plan); err == nil {
			entry.Plan = p.Name()
			decisions = attemptsSince(p, entry.StartedAt)
		}
	}
	if folded == nil {
		err = o.record(ctx, entry)
	} else {
		// The last transaction wrote the entry as it would stand: nothing more to write when it
		// does, the entry replaced (same ID) when the operation ended otherwise.
		entry.ID = folded.ID
		if !sameEntry(*folded, entry) {
			err = foldLog.Replace(ctx, o.stamp(entry))
		}
	}
	if err != nil {
		return err
	}
	for _, d := range append(also, decisions...) {
		if err := o.record(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// entryAsEnded is entry as the operation's log entry once it ended with outcome: the checkpoints
// it made (created since it started) added to those it used. skip says it is no operation to log:
// refused before it changed anything (bad input, nothing found, a busy workspace), which would
// only fill the log with noise.
func (o *Operations) entryAsEnded(ctx context.Context, entry port.LoggedOperation, outcome string) (port.LoggedOperation, bool, error) {
	entry.Outcome = outcome
	entry.Checkpoints = slices.Clone(entry.Checkpoints)
	created, err := o.checkpoints.ListSince(ctx, entry.StartedAt)
	if err != nil {
		return entry, false, err
	}
	made := 0
	for _, c := range created {
		if !slices.Contains(entry.Checkpoints, c.ID()) {
			entry.Checkpoints = append(entry.Checkpoints, c.ID())
			made++
		}
	}
	switch outcome {
	case OutcomeUsage, fault.Name(fault.ErrInvalid), fault.Name(fault.ErrNotFound), fault.Name(fault.ErrConflict), OutcomeValidationFailed:
		if made == 0 && entry.UndoCheckpoint == "" {
			return entry, true, nil
		}
	}
	if entry.Checkpoints == nil {
		entry.Checkpoints = []checkpoint.ID{}
	}
	return entry, false, nil
}

// attemptsSince are the log entries of p's decision attempts started at or after start.
func attemptsSince(p *plan.Plan, start time.Time) []port.LoggedOperation {
	var out []port.LoggedOperation
	for _, d := range p.Decisions() {
		for _, a := range d.Attempts() {
			if a.StartedAt.Before(start) {
				continue
			}
			outcome := string(a.Status)
			if a.Status == plan.Succeeded {
				outcome = OutcomeOK
			}
			cps := []checkpoint.ID{}
			if a.CheckpointID != "" {
				cps = append(cps, a.CheckpointID)
			}
			out = append(out, port.LoggedOperation{
				Kind: "decision", Args: []string{d.ID()}, Plan: p.Name(), StartedAt: a.StartedAt, FinishedAt: a.FinishedAt,
				Outcome: outcome, Checkpoints: cps, UndoCheckpoint: a.CheckpointID,
			})
		}
	}
	return out
}
