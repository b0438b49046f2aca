package application

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// One attempt of a decision: what execute runs for plan run, exec and a correction's re-execution,
// and the repair that closes attempts a killed run left running.

// track has the snapshotter follow the workspace's changes, when it can, for a command that runs
// decisions: each takes a snapshot before and after, and between them only what changed needs
// reading. The caller defers the returned stop.
func (o *Operations) track() (stop func()) {
	if t, ok := o.snap.(port.ChangeTracker); ok {
		return t.Track()
	}
	return func() {}
}

// attemptLog is where attempt number of decision id of the plan called planName writes its output,
// relative to the state directory: logs/plans/<plan>/<id>.<number>.log, the plan's name encoded as
// one safe file name (logName). Fix: every plan's attempt wrote logs/<id>.<number>.log, so two plans
// with a decision of the same ID (or a plan's decision and `plan exec --id` of the same ID) wrote
// the same file, and the later run replaced the earlier one's recorded output. Each attempt
// records its path, so the logs of attempts made before keep being read where they are.
func attemptLog(planName, id string, number int) string {
	return fmt.Sprintf("logs/plans/%s/%s.%d.log", logName(planName), id, number)
}

// logNameMax bounds a plan's encoded name in a log path, well under a file name's 255 bytes.
const logNameMax = 96

// logName encodes a plan's name as one file name, distinct for distinct names: ASCII letters,
// digits, '-' and '_' stay, every other byte is %XX (so no name is "." or "..", holds a '/' or
// starts a hidden file), and an encoding longer than logNameMax is cut and given '~' and a hash
// of the whole name ('~' is otherwise always encoded).
func logName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	enc := b.String()
	if len(enc) <= logNameMax {
		return enc
	}
	sum := sha256.Sum256([]byte(name))
	return enc[:logNameMax-17] + "~" + hex.EncodeToString(sum[:8])
}

// execute runs one attempt of decision id: pre_decision checkpoint, durable "running" record, the
// process, then the result tree and artifacts. The outcome is recorded even when the context is
// cancelled, so an interrupted decision is never left "running". A decision that ran and failed
// (including a timeout, reported by timedOut) is not an error: the attempt's status says it.
func (o *Operations) execute(ctx context.Context, p *plan.Plan, id string, live io.Writer, events func(Event), warn func(string), funcs map[string]port.DecisionFunc) (attemptResult, error) {
	d, err := p.Decision(id)
	if err != nil {
		return attemptResult{}, err
	}
	fn, err := o.funcOf(id, d.Definition().Run, funcs)
	if err != nil {
		return attemptResult{}, err // before its checkpoint: the decision did not run
	}
	number := len(d.Attempts()) + 1
	var pre *checkpoint.Checkpoint
	if p.Checkpoints() {
		pre, err = o.create(ctx, CreateRequest{
			Type: checkpoint.PreDecision, DecisionID: id, Warn: warn, Labels: d.Definition().Labels,
			Note: fmt.Sprintf("before decision %s, attempt %d", id, number),
		})
		if err != nil {
			return attemptResult{}, fmt.Errorf("take the pre_decision checkpoint of %q (the decision did not run): %w", id, err)
		}
	}
	var cpID checkpoint.ID
	if pre != nil {
		cpID = pre.ID()
	}
	logPath := attemptLog(p.Name(), id, number)
	a, err := p.Start(id, cpID, logPath, o.clock.Now())
	if err != nil {
		return attemptResult{}, err
	}
	if err := o.plans.Save(ctx, p); err != nil {
		return attemptResult{}, err
	}
	emit(events, Event{Kind: "start", DecisionID: id, Attempt: a})
	def := d.Definition()
	res, execErr := o.exec.Execute(ctx, port.Command{
		DecisionID: id, Attempt: number, Script: a.Command, Env: def.Env, Timeout: def.Timeout, LogPath: logPath,
		Token: AttemptToken(p, id, number), Func: fn,
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
	// The decision's check: it runs only after the command succeeded, and its failure fails the
	// decision (exit code its, output appended to the attempt's log).
	validationFailed := false
	if out.Status == plan.Succeeded && def.Validate != "" {
		vres, verr := o.exec.Execute(ctx, port.Command{
			DecisionID: id, Attempt: number, Script: def.Validate, Env: def.Env, Timeout: def.Timeout, LogPath: logPath,
			Token: AttemptToken(p, id, number), Append: true, Banner: "validate: " + def.Validate,
		}, live)
		switch {
		case verr != nil:
			// No exit code: the command's 0 would read as the validation's ("failed ... (exit code 0)").
			out.Status, out.ExitCode, validationFailed = plan.Failed, nil, true
			if warn != nil {
				warn(fmt.Sprintf("the validation of decision %q could not start: %v", id, verr))
			}
		case vres.Interrupted:
			out.Status, out.ExitCode = plan.Interrupted, nil
		case vres.ExitCode != 0 || vres.TimedOut:
			code := vres.ExitCode
			out.Status, out.ExitCode, validationFailed = plan.Failed, &code, true
			res.TimedOut = vres.TimedOut
		}
	}
	var recordErr error
	if pre != nil {
		out.ResultTree, out.Artifacts, recordErr = o.changesSince(octx, pre)
	}
	if err := p.Finish(id, out, o.clock.Now()); err != nil {
		return attemptResult{}, err
	}
	if err := o.plans.Save(octx, p); err != nil {
		return attemptResult{}, err
	}
	a, _ = d.Latest()
	emit(events, Event{Kind: "finish", DecisionID: id, Attempt: a})
	r := attemptResult{Attempt: a, Ran: true, TimedOut: res.TimedOut, ValidationFailed: validationFailed}
	if recordErr != nil {
		return r, fmt.Errorf("record what decision %q changed: %w", id, recordErr)
	}
	return r, nil
}

// changesSince snapshots the workspace and returns its tree and the artifacts since pre.
func (o *Operations) changesSince(ctx context.Context, pre *checkpoint.Checkpoint) (tree.Hash, []artifact.Artifact, error) {
	snap, err := o.snap.Snapshot(ctx, nil)
	if err != nil {
		return tree.Hash{}, nil, err
	}
	changes, err := o.store.DiffTrees(pre.Root(), snap.Root)
	if err != nil {
		return tree.Hash{}, nil, err
	}
	return snap.Root, artifact.FromChanges(changes), nil
}

// closeStale finishes attempts a killed `plan run` left running: no process holds the lock, so none
// of them is still executing. What they changed is recorded from the workspace as it is now.
func (o *Operations) closeStaleAttempts(ctx context.Context) error {
	// Read by index first: every command runs this, and loading a long plan (an agent session)
	// each time would make every command cost the session's length.
	names, err := o.plans.RunningExecuted(ctx)
	if err != nil || len(names) == 0 {
		return err
	}
	for _, name := range names {
		if err := o.closeStaleAttemptsOf(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// closeStaleAttemptsOf closes the attempt plan name's killed run left running.
func (o *Operations) closeStaleAttemptsOf(ctx context.Context, name string) error {
	p, err := o.plans.ByName(ctx, name)
	if err != nil {
		return err
	}
	d := p.Running()
	if d == nil {
		return nil
	}
	a, _ := d.Latest()
	// The killed plan's decision may have left processes behind; stop them before recording what
	// the decision changed, or they would go on changing the workspace unrecorded.
	if _, err := o.exec.Reap(AttemptToken(p, d.ID(), a.Number)); err != nil {
		return fmt.Errorf("stop what interrupted decision %q left running: %w", d.ID(), err)
	}
	out := plan.Outcome{Status: plan.Interrupted}
	if a.CheckpointID != "" {
		if pre, err := o.checkpoints.Get(ctx, a.CheckpointID); err == nil {
			out.ResultTree, out.Artifacts, err = o.changesSince(ctx, pre)
			if err != nil {
				return fmt.Errorf("record what interrupted decision %q changed: %w", d.ID(), err)
			}
		}
	}
	if err := p.Finish(d.ID(), out, o.clock.Now()); err != nil {
		return err
	}
	return o.plans.Save(ctx, p)
}
