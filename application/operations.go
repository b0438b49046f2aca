package application

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// Operations is the core the use cases share, and the only thing they share: recording the
// workspace as a checkpoint (with its metrics), previewing and applying a journaled rollback
// against a backup checkpoint, recording a finished rollback (its count, the decisions it reverts,
// its history) in one unit of work, running one attempt of a decision, and the checkpoints that
// something still needs. Its methods are unexported: a host reaches them only through the services.
//
// NewOperations is also the one place where crash recovery is wired, in a fixed order, so that every
// graph that has a service has all of recovery: the finishers of both journaled kinds (rollback,
// correction), the recorder that keeps work done after a crash, and the repairs, which run in this
// order: attempts a killed run left running are closed (recording what they changed), staged
// archives nothing refers to are removed, and corrections left re-executing are closed.
type Operations struct {
	checkpoints checkpoint.Repository
	plans       plan.Repository
	corrections correction.Repository
	snap        Snapshotter
	store       TreeStore
	guard       *Guard
	tx          Transactor
	history     History
	clock       Clock
	git         GitProbe
	metrics     Metrics
	exec        Executor
	archiver    Archiver
	trees       TreeWriter
	// oplog is the operation log, once a HistoryService is built on this core: a use case logs its
	// own operation through it, and folds the entry into its last transaction (see commitLogged).
	oplog OperationLog
	funcs *funcRegistry
	host  string
	// steps holds, by rollback ID, what an undo's or a redo's log step did (see logstep.go), for
	// the use case that ran the rollback to report.
	steps sync.Map
}

// OperationsParams are Operations' collaborators. Metrics may be nil.
type OperationsParams struct {
	Checkpoints checkpoint.Repository
	Plans       plan.Repository
	Corrections correction.Repository
	Snapshotter Snapshotter
	Store       TreeStore
	Guard       *Guard
	Tx          Transactor
	History     History
	Clock       Clock
	Git         GitProbe
	Metrics     Metrics
	Executor    Executor
	Archiver    Archiver
	// Trees stores a surgical revert's target tree; without it RevertDecision refuses.
	Trees TreeWriter
	// Log is the operation log the services record their operations in (`plan history`, `plan
	// undo`); nil records nothing until NewHistoryService gives it one. With it, what the next
	// `plan undo` and `plan redo` roll back to is protected like a live decision's checkpoint.
	Log OperationLog
	// Host names the program the services run in, for the decisions it runs as Go functions
	// (DecisionFunc): a `plan correct` from the CLI, which cannot call them, names it. "" is
	// "a Go host program".
	Host string
}

// NewOperations returns the shared core and installs crash recovery into its guard.
func NewOperations(p OperationsParams) *Operations {
	o := &Operations{
		checkpoints: p.Checkpoints, plans: p.Plans, corrections: p.Corrections, snap: p.Snapshotter,
		store: p.Store, guard: p.Guard, tx: p.Tx, history: p.History, clock: p.Clock, git: p.Git,
		metrics: p.Metrics, exec: p.Executor, archiver: p.Archiver, trees: p.Trees,
		oplog: p.Log, funcs: newFuncRegistry(), host: p.Host,
	}
	g := p.Guard
	g.Register(kindRollback, o.finishRollback)
	g.Register(kindCorrection, o.finishCorrection)
	g.Register(kindRevert, o.finishRevert)
	g.RegisterRecorder(o.recordBeforeRecovery)
	g.RegisterLogger(o.logRecovered)
	g.AddRepair(o.closeStaleAttempts)
	g.AddRepair(func(context.Context) error { return o.archiver.CleanStaged() })
	g.AddRepair(o.closeStaleCorrections)
	return o
}

// entries returns a checkpoint's tree as an ordered entry list.
func (o *Operations) entries(cp *checkpoint.Checkpoint) ([]tree.Entry, error) {
	entries, err := o.store.Flatten(cp.Root())
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", cp.ID(), err)
	}
	return entries, nil
}

// recordBeforeRecovery records the live workspace as a pre_recover checkpoint; the guard calls it
// under the lock when recovery would otherwise overwrite work done after a crash.
func (o *Operations) recordBeforeRecovery(ctx context.Context, note string) (string, error) {
	cp, err := o.create(ctx, CreateRequest{Type: checkpoint.PreRecover, Note: note})
	if err != nil {
		return "", err
	}
	return string(cp.ID()), nil
}

func (o *Operations) create(ctx context.Context, req CreateRequest) (*checkpoint.Checkpoint, error) {
	cp, err := o.take(ctx, req)
	if err != nil && o.metrics != nil && !errors.Is(err, fault.ErrInvalid) {
		// Counted for `plan stats`; the failure itself is returned, never swallowed.
		_ = o.metrics.RecordCheckpointFailure(context.WithoutCancel(ctx), o.clock.Now(), err.Error())
	}
	return cp, err
}

func (o *Operations) take(ctx context.Context, req CreateRequest) (*checkpoint.Checkpoint, error) {
	if req.Type == "" {
		req.Type = checkpoint.Manual
	}
	if _, err := checkpoint.ParseType(string(req.Type)); err != nil {
		return nil, err
	}
	if len(req.Note) > checkpoint.MaxNoteLength {
		return nil, fault.Invalid("note is %d bytes; at most %d", len(req.Note), checkpoint.MaxNoteLength)
	}
	began := time.Now()
	now := o.clock.Now()
	var also []tree.Hash
	if !req.AlsoExclude.IsZero() {
		also = append(also, req.AlsoExclude)
	}
	snap, err := o.snap.Snapshot(ctx, req.Progress, also...)
	if err != nil {
		return nil, fmt.Errorf("snapshot the workspace: %w", err)
	}
	if err := o.guard.hit("checkpoint.stored"); err != nil {
		return nil, err
	}
	if req.Warn != nil {
		for _, w := range snap.Warnings {
			req.Warn(w)
		}
	}
	var parent checkpoint.ID
	switch latest, err := o.checkpoints.Latest(ctx); {
	case err == nil:
		parent = latest.ID()
	case !errors.Is(err, fault.ErrNotFound):
		return nil, err
	}
	commit, ok := o.git.Head()
	if !ok {
		commit = ""
	}
	cp, err := checkpoint.New(checkpoint.Params{
		ID: ident.New(now), Type: req.Type, CreatedAt: now, Note: req.Note, Labels: req.Labels,
		DecisionID: req.DecisionID, ParentID: parent, GitCommit: commit, Root: snap.Root,
		Stats: checkpoint.Stats{
			Files: snap.Files, Bytes: snap.Bytes, StoredBytes: snap.StoredBytes,
			Duration: time.Since(began),
		},
	})
	if err != nil {
		return nil, err
	}
	add := func(ctx context.Context) error {
		if err := o.checkpoints.Add(ctx, cp); err != nil {
			return fmt.Errorf("record checkpoint: %w", err)
		}
		if req.with != nil {
			return req.with(ctx, cp)
		}
		return nil
	}
	switch {
	case req.logged:
		err = o.commitLogged(ctx, add)
	case req.with != nil:
		err = o.tx.Do(ctx, add)
	default:
		err = add(ctx)
	}
	if err != nil {
		return nil, err
	}
	return cp, nil
}

// rollbackToID rolls back to a known checkpoint; the caller holds the guard.
func (o *Operations) rollbackToID(ctx context.Context, id checkpoint.ID, req RollbackRequest) (RollbackResult, error) {
	target, err := o.checkpoints.Get(ctx, id)
	if err != nil {
		return RollbackResult{}, err
	}
	return o.rollback(ctx, target, req, nil)
}

func (o *Operations) previewRollback(ctx context.Context, target *checkpoint.Checkpoint, p Progress) (RollbackResult, error) {
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

// rollbackPaths restores only req.Paths: the pre_rollback checkpoint records the workspace, the
// target tree is that record with the paths grafted from the checkpoint (stored before the journal
// names it), and the same journaled change as a full rollback takes the workspace there. The
// caller holds the guard.
func (o *Operations) rollbackPaths(ctx context.Context, target *checkpoint.Checkpoint, req RollbackRequest, op *Operation) (RollbackResult, error) {
	if o.trees == nil { // optional in OperationsParams: refuse before recording anything
		return RollbackResult{}, errors.New("per-path restore is not wired: Operations has no TreeWriter")
	}
	backup, err := o.create(ctx, CreateRequest{
		Type: checkpoint.PreRollback, Progress: req.Progress, Warn: req.Warn, AlsoExclude: target.Root(),
		Note: fmt.Sprintf("before restoring %s from %s", strings.Join(req.Paths, ", "), target.ID()),
	})
	if err != nil {
		return RollbackResult{}, fmt.Errorf("record the current state before restoring: %w", err)
	}
	base, err := o.entries(backup)
	if err != nil {
		return RollbackResult{}, err
	}
	merged, err := o.grafted(base, target, req.Paths)
	if err != nil {
		// Nothing was touched: the safety checkpoint of a restore that never started is litter.
		if derr := o.checkpoints.Delete(ctx, backup.ID()); derr != nil {
			return RollbackResult{Backup: backup}, errors.Join(err, derr)
		}
		return RollbackResult{}, err
	}
	root, err := o.trees.StoreEntries(merged, nil)
	if err != nil {
		return RollbackResult{Backup: backup}, fmt.Errorf("store the restored tree: %w", err)
	}
	return o.rollbackTo(ctx, target, root, req, op, backup)
}

// rollback is the rollback step other use cases (corrections) compose: the caller already holds the
// guard. A non-nil op carries the kind and detail its finisher needs.
func (o *Operations) rollback(ctx context.Context, target *checkpoint.Checkpoint, req RollbackRequest, op *Operation) (RollbackResult, error) {
	return o.rollbackWithBackup(ctx, target, req, op, nil)
}

// rollbackWithBackup rolls back using backup as the undo point when the caller already recorded the
// current state (a correction's pre_correction checkpoint); otherwise it takes a pre_rollback one.
func (o *Operations) rollbackWithBackup(ctx context.Context, target *checkpoint.Checkpoint, req RollbackRequest, op *Operation, backup *checkpoint.Checkpoint) (RollbackResult, error) {
	if backup == nil {
		var err error
		backup, err = o.create(ctx, CreateRequest{
			Type: checkpoint.PreRollback, Progress: req.Progress, Warn: req.Warn, AlsoExclude: target.Root(),
			Note: "before rollback to " + string(target.ID()),
		})
		if err != nil {
			return RollbackResult{}, fmt.Errorf("record the current state before rolling back: %w", err)
		}
	}
	return o.rollbackTo(ctx, target, target.Root(), req, op, backup)
}

// rollbackTo takes the workspace, recorded as backup, to tree root (target's, or a per-path
// restore's graft of it) under the journal.
func (o *Operations) rollbackTo(ctx context.Context, target *checkpoint.Checkpoint, root tree.Hash, req RollbackRequest, op *Operation, backup *checkpoint.Checkpoint) (RollbackResult, error) {
	changes, err := o.store.DiffTrees(backup.Root(), root)
	if err != nil {
		return RollbackResult{}, fmt.Errorf("compare with checkpoint %s: %w", target.ID(), err)
	}
	if op == nil {
		op = &Operation{Kind: kindRollback}
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
	run := o.guard.run
	if req.NeverUndo {
		run = o.guard.runToFinish
	}
	stats, err := run(ctx, *op, changes, req.Progress)
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
func (o *Operations) finishRollback(ctx context.Context, op Operation) error {
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
func (o *Operations) recordRollback(ctx context.Context, op Operation) error {
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
	return o.history.Record(ctx, HistoryRecord{
		ID: op.ID, Kind: op.Kind, TargetCheckpoint: op.TargetCheckpoint,
		BackupCheckpoint: op.BackupCheckpoint, StartedAt: op.StartedAt, FinishedAt: o.clock.Now(),
		Added: op.Counts.Added, Modified: op.Counts.Modified, Deleted: op.Counts.Deleted, Reverted: reverted,
	})
}

// track has the snapshotter follow the workspace's changes, when it can, for a command that runs
// decisions: each takes a snapshot before and after, and between them only what changed needs
// reading. The caller defers the returned stop.
func (o *Operations) track() (stop func()) {
	if t, ok := o.snap.(ChangeTracker); ok {
		return t.Track()
	}
	return func() {}
}

// execute runs one attempt of decision id: pre_decision checkpoint, durable "running" record, the
// process, then the result tree and artifacts. The outcome is recorded even when the context is
// cancelled, so an interrupted decision is never left "running". A decision that ran and failed
// (including a timeout, reported by timedOut) is not an error: the attempt's status says it.
func (o *Operations) execute(ctx context.Context, p *plan.Plan, id string, live io.Writer, events func(Event), warn func(string), funcs map[string]DecisionFunc) (attemptResult, error) {
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
	logPath := fmt.Sprintf("logs/%s.%d.log", id, number)
	a, err := p.Start(id, cpID, logPath, o.clock.Now())
	if err != nil {
		return attemptResult{}, err
	}
	if err := o.plans.Save(ctx, p); err != nil {
		return attemptResult{}, err
	}
	emit(events, Event{Kind: "start", DecisionID: id, Attempt: a})
	def := d.Definition()
	res, execErr := o.exec.Execute(ctx, Command{
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
		vres, verr := o.exec.Execute(ctx, Command{
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

// attemptResult is how one attempt of a decision went. Ran is false when it never started (its
// checkpoint could not be taken); Attempt is then zero.
type attemptResult struct {
	Attempt          plan.Attempt
	Ran              bool
	TimedOut         bool
	ValidationFailed bool
}

// failure is the error for an attempt that ran and did not succeed, nil when it did. The one place
// that builds it, so every path (run, exec, a correction's re-execution) reports a timeout as a
// timeout and an interruption as a cancellation.
func (r attemptResult) failure(id string) error {
	if r.Attempt.Status == plan.Succeeded {
		return nil
	}
	failure := &DecisionFailedError{DecisionID: id, Status: r.Attempt.Status, ExitCode: r.Attempt.ExitCode, TimedOut: r.TimedOut,
		Validation: r.ValidationFailed}
	if r.Attempt.Status == plan.Interrupted {
		return fmt.Errorf("%w: %w", failure, context.Canceled)
	}
	return failure
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

// revertAfter marks every attempt that started at or after cp, in every plan of the workspace, as
// reverted by operation op: the workspace went back to before them, whichever plan ran them. It
// runs inside the operation's unit of work. The IDs returned are those of planName's decisions
// ("" is the current plan), and "plan/decision" for another plan's.
func (o *Operations) revertAfter(ctx context.Context, cp *checkpoint.Checkpoint, op, planName string) ([]string, error) {
	ps, err := o.plans.List(ctx) // the current plan first
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, nil
	}
	if planName == "" {
		planName = ps[0].Name()
	}
	return o.changePlans(ctx, ps, planName, func(p *plan.Plan) []string { return p.RevertStartedSince(cp.CreatedAt(), op) })
}

// qualified names decision id of plan p as revertAfter, unrevert and wouldRevert list it: plainly in
// plan planName, as plan/decision in any other.
func qualified(p *plan.Plan, planName, id string) string {
	if p.Name() != planName {
		return p.Name() + "/" + id
	}
	return id
}

// wouldRevert lists what revertAfter(cp, "") would revert, named as it names them, changing
// nothing: what a dry run reports.
func (o *Operations) wouldRevert(ctx context.Context, cp *checkpoint.Checkpoint) ([]string, error) {
	ps, err := o.plans.List(ctx) // the current plan first
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	var ids []string
	for i := len(ps) - 1; i >= 0; i-- { // in the order changePlans saves them
		for _, id := range ps[i].StartedSince(cp.CreatedAt()) {
			ids = append(ids, qualified(ps[i], ps[0].Name(), id))
		}
	}
	return ids, nil
}

// unrevert gives back the status they had to the attempts operation op reverted, in every plan
// (the undo of op), and lists the decisions it changed as revertAfter does.
func (o *Operations) unrevert(ctx context.Context, op string) ([]string, error) {
	ps, err := o.plans.List(ctx)
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	return o.changePlans(ctx, ps, ps[0].Name(), func(p *plan.Plan) []string { return p.Unrevert(op) })
}

// changePlans applies change to every plan of ps (the current one first) and saves those it
// changed, oldest first and the current plan last, so the current plan stays current. Decisions of
// plans other than planName are named plan/decision.
func (o *Operations) changePlans(ctx context.Context, ps []*plan.Plan, planName string, change func(*plan.Plan) []string) ([]string, error) {
	var ids []string
	saved := false
	for i := len(ps) - 1; i >= 0; i-- {
		p := ps[i]
		changed := change(p)
		if len(changed) == 0 && (i > 0 || !saved) {
			continue
		}
		if err := o.plans.Save(ctx, p); err != nil {
			return nil, err
		}
		saved = true
		for _, id := range changed {
			ids = append(ids, qualified(p, planName, id))
		}
	}
	return ids, nil
}

// finish is the database side of a correction's revert step; recovery calls it too. It publishes
// the staged archive, then records the rollback (marking the decisions reverted) and the correction
// in one transaction. Every step is idempotent.
func (o *Operations) finishCorrection(ctx context.Context, op Operation) error {
	var d correctionDetail
	return o.finishArchived(ctx, op, &d, "correction", func(ctx context.Context, dir string) error {
		if err := o.recordRollback(ctx, op); err != nil {
			return err
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

// finishArchived is the database side shared by the operations that archive what they revert (a
// correction, a surgical revert): it reads the journal's detail into detail, publishes the staged
// archive, and runs record in one transaction unless the history already has op (every step is
// idempotent, as recovery needs). When record fails, the archive is unpublished: the guard puts the
// workspace back, and an archive must not outlive the record it belongs to.
func (o *Operations) finishArchived(ctx context.Context, op Operation, detail any, what string, record func(ctx context.Context, dir string) error) error {
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

// protected maps checkpoints that must not be pruned to the reason.
func (o *Operations) protected(ctx context.Context) (map[checkpoint.ID]string, error) {
	out := map[checkpoint.ID]string{}
	ps, err := o.plans.List(ctx) // every plan's live decisions, not only the current plan's
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		for _, d := range p.Decisions() {
			a, ran := d.Latest()
			if !ran || a.CheckpointID == "" || a.Status == plan.Reverted {
				continue
			}
			name := d.ID()
			if p != ps[0] {
				name = p.Name() + "/" + name
			}
			out[a.CheckpointID] = fmt.Sprintf("pre_decision checkpoint of live decision %s (attempt %d): a correction rolls back to it", name, a.Number)
		}
	}
	cs, err := o.corrections.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		if c.Status() != correction.Reverted && c.Status() != correction.Reexecuting {
			continue
		}
		p := c.Params()
		out[checkpoint.ID(p.SafetyCheckpointID)] = fmt.Sprintf("safety checkpoint of unfinished correction %s", p.ID)
		out[checkpoint.ID(p.RollbackCheckpointID)] = fmt.Sprintf("rollback checkpoint of unfinished correction %s", p.ID)
	}
	return out, o.undoNeeds(ctx, out)
}

// undoNeeds adds to out the checkpoints the next `plan undo` and `plan redo` roll back to: the
// safety checkpoint of the newest operation that stands, and the one the newest undo took before it
// changed anything while a redo can still take it back. Older safety checkpoints may go: undo steps
// past an operation whose checkpoint is gone, and prune says which it made so (PruneResult.UndoLost).
func (o *Operations) undoNeeds(ctx context.Context, out map[checkpoint.ID]string) error {
	if o.oplog == nil {
		return nil
	}
	ops, err := o.oplog.List(ctx, 0, "")
	if err != nil {
		return err
	}
	for _, op := range ops {
		if op.undoable() {
			if _, ok := out[op.UndoCheckpoint]; !ok {
				out[op.UndoCheckpoint] = fmt.Sprintf("safety checkpoint of %s %s: the next `plan undo` rolls back to it", op.Kind, op.ID)
			}
			break
		}
	}
	if u, err := chooseRedo(ops); err == nil && len(u.Checkpoints) == 2 {
		if _, ok := out[u.Checkpoints[1]]; !ok {
			out[u.Checkpoints[1]] = fmt.Sprintf("taken by undo %s before it changed anything: `plan redo` rolls forward to it", u.ID)
		}
	}
	return nil
}

// rollbackMode reads a rollback's restore mode from its journal detail; a rollback journaled
// before modes existed restores both.
func rollbackMode(op Operation) RestoreMode {
	var d rollbackDetail
	if len(op.Detail) == 0 || json.Unmarshal(op.Detail, &d) != nil || d.Mode == "" {
		return RestoreBoth
	}
	return d.Mode
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
		return o.history.Record(ctx, HistoryRecord{
			ID: id, Kind: kindRollback, TargetCheckpoint: target.ID(),
			StartedAt: o.clock.Now(), FinishedAt: o.clock.Now(), Reverted: reverted,
		})
	})
	return res, err
}

// plan is the plan called name, or the current plan when name is "".
func (o *Operations) plan(ctx context.Context, name string) (*plan.Plan, error) {
	if name == "" {
		return o.plans.Current(ctx)
	}
	return o.plans.ByName(ctx, name)
}

// loggedKinds are the operation log's kinds of the journaled operations a command logs once it
// returns.
var loggedKinds = map[string]string{kindRollback: "rollback", kindCorrection: "correct", kindRevert: "revert"}

// logRecovered enters in the operation log an operation recovery finished for a command a crash
// stopped before it could log it (a rollback, a correction, a revert), with its safety checkpoint
// as the undo's: `plan undo` then takes it back as it would have. A step of another operation
// (undo's, redo's) is logged by its finisher; one without a safety checkpoint (a clone's) has no
// undo; one logged already is left as it is.
func (o *Operations) logRecovered(ctx context.Context, op Operation) error {
	kind, ok := loggedKinds[op.Kind]
	if !ok || op.BackupCheckpoint == "" || stepOf(op) != nil || o.oplog == nil {
		return nil
	}
	logged, err := o.oplog.List(ctx, 0, "")
	if err != nil {
		return err
	}
	for _, e := range logged {
		if e.ID == op.ID {
			return nil
		}
	}
	var used []checkpoint.ID
	for _, id := range []checkpoint.ID{op.TargetCheckpoint, op.BackupCheckpoint} {
		if id != "" {
			used = append(used, id)
		}
	}
	return o.oplog.Add(ctx, LoggedOperation{
		ID: op.ID, Kind: kind, Args: []string{"(finished by plan recover)"}, Plan: operationPlan(op),
		StartedAt: op.StartedAt, FinishedAt: o.clock.Now(), Outcome: OutcomeOK, Checkpoints: used,
		UndoCheckpoint: op.BackupCheckpoint,
	})
}

// operationPlan names the plan a journaled operation's decisions belong to: a correction's own
// plan, which need not be the current one; "" (the current plan) for a rollback.
func operationPlan(op Operation) string {
	if op.Kind != kindCorrection {
		return ""
	}
	var d correctionDetail
	if json.Unmarshal(op.Detail, &d) != nil {
		return ""
	}
	return d.Plan
}
