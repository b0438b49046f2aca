package kernel

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

type lockKey struct{}

// Finisher completes the database side of a journaled operation of one kind after its workspace side
// reached the target tree. It MUST be idempotent: recovery may call it for an operation whose
// database commit already happened before a crash.
type Finisher func(ctx context.Context, op port.Operation) error

// Recorder records the live workspace as a checkpoint of type pre_recover and returns its ID.
// Recovery calls it before it changes a workspace that holds work done after the crash.
type Recorder func(ctx context.Context, note string) (string, error)

// Guard serialises mutating use cases on one workspace and recovers interrupted operations before any
// of them runs. Services share one Guard.
//
// Recovery never destroys what it did not record: before it rolls a journaled operation forward or
// back, it compares the live workspace with the operation's source and target trees, and anything
// in neither (work done after the crash) is first recorded as a pre_recover checkpoint. Read-only
// commands never recover: they report the pending operation (RecoverIfIdle).
type Guard struct {
	// Failpoint, when set, is called at each step of a journaled operation; crash tests arm it.
	Failpoint func(name string) error
	// OnRecover, when set, hears of every recovery Enter performs, so the caller can tell the user
	// that an interrupted operation was finished (and where work found since was recorded).
	OnRecover func(RecoverResult)

	locker    port.Locker
	journal   port.Journal
	restorer  port.Restorer
	finishers map[string]Finisher
	repairs   []func(ctx context.Context) error
	recorder  Recorder
	// logger, when set, enters an operation recovery finished in the operation log.
	logger Finisher
}

// NewGuard returns a Guard.
func NewGuard(l port.Locker, j port.Journal, r port.Restorer) *Guard {
	return &Guard{locker: l, journal: j, restorer: r, finishers: map[string]Finisher{}}
}

// Register installs the finisher for operations of kind. Services call it from their constructors.
func (g *Guard) Register(kind string, f Finisher) { g.finishers[kind] = f }

// RegisterLogger installs what enters an operation recovery finished in the operation log, as the
// command a crash stopped would have once it returned (so that `plan undo` takes it back).
func (g *Guard) RegisterLogger(f Finisher) { g.logger = f }

// RegisterRecorder installs what records unrecorded work before recovery; the checkpoint use
// cases provide it. Without one, recovery refuses to touch a workspace that holds such work.
func (g *Guard) RegisterRecorder(r Recorder) { g.recorder = r }

// AddRepair installs a check that runs under the lock after journal recovery, whenever no other
// process holds the lock: the plan use cases use it to close attempts a killed run left "running".
func (g *Guard) AddRepair(fn func(ctx context.Context) error) { g.repairs = append(g.repairs, fn) }

// RecoverIfIdle is what read-only commands run first. It never acts on a pending journal: a
// pending operation is returned in RecoverResult.Pending for the command to report (the workspace
// may be part-way through it until a mutating command or `plan recover` finishes it). Otherwise,
// when the lock is free, it runs the repairs (closing attempts a killed run left running), so a
// read-only command never shows that stale state.
func (g *Guard) RecoverIfIdle(ctx context.Context) (RecoverResult, error) {
	if ctx.Value(lockKey{}) != nil {
		return g.recover(ctx)
	}
	if op, err := g.journal.Pending(); err != nil || op != nil {
		return RecoverResult{Pending: op}, err
	}
	unlock, ok, err := g.locker.TryLock("recover")
	if err != nil || !ok {
		return RecoverResult{}, err
	}
	defer func() { _ = unlock() }()
	// A journal that appeared before the lock was ours belongs to a process that died since.
	if op, err := g.journal.Pending(); err != nil || op != nil {
		return RecoverResult{Pending: op}, err
	}
	return g.recover(context.WithValue(ctx, lockKey{}, "recover"))
}

// Enter takes the workspace lock for purpose (unless ctx already carries it) and recovers a pending
// operation. The returned context carries the lock; release MUST be called exactly once.
func (g *Guard) Enter(ctx context.Context, purpose string) (context.Context, func(), error) {
	if ctx.Value(lockKey{}) != nil {
		return ctx, func() {}, nil
	}
	unlock, err := g.locker.Lock(ctx, purpose)
	if err != nil {
		return ctx, nil, err
	}
	release := func() { _ = unlock() }
	ctx = context.WithValue(ctx, lockKey{}, purpose)
	res, err := g.recover(ctx)
	if err != nil {
		release()
		return ctx, nil, fmt.Errorf("recover an interrupted operation before %s: %w", purpose, err)
	}
	if res.Recovered && g.OnRecover != nil {
		g.OnRecover(res)
	}
	return ctx, release, nil
}

// EnterIfFree takes the workspace lock for purpose only when it is free now and no operation is
// pending (housekeeping that can wait for the next command); ok is false otherwise, and nothing was
// done. The returned context carries the lock; when ok, release MUST be called exactly once.
func (g *Guard) EnterIfFree(ctx context.Context, purpose string) (context.Context, func(), bool, error) {
	if ctx.Value(lockKey{}) != nil {
		return ctx, func() {}, true, nil
	}
	unlock, ok, err := g.locker.TryLock(purpose)
	if err != nil || !ok {
		return ctx, nil, false, err
	}
	if op, err := g.journal.Pending(); err != nil || op != nil {
		_ = unlock()
		return ctx, nil, false, err
	}
	return context.WithValue(ctx, lockKey{}, purpose), func() { _ = unlock() }, true, nil
}

// RecoverResult says what recovery found and did.
type RecoverResult struct {
	Recovered bool
	Operation *port.Operation
	// Outcome is "completed" (the operation was finished) or "rolled_back" (undone).
	Outcome string
	Stats   port.ApplyStats
	// Recorded is the pre_recover checkpoint that holds Unrecorded, the live paths recovery found
	// in neither the source nor the target tree; empty when there were none.
	Recorded   string
	Unrecorded []string
	// Pending is the interrupted operation a read-only command found and left alone.
	Pending *port.Operation
}

// Recover finishes or undoes an operation a crash left behind. It is what `plan recover` runs; every
// mutating use case runs it implicitly through Enter.
func (g *Guard) Recover(ctx context.Context) (RecoverResult, error) {
	ctx, release, err := g.enterNoRecover(ctx)
	if err != nil {
		return RecoverResult{}, err
	}
	defer release()
	return g.recover(ctx)
}

func (g *Guard) enterNoRecover(ctx context.Context) (context.Context, func(), error) {
	if ctx.Value(lockKey{}) != nil {
		return ctx, func() {}, nil
	}
	unlock, err := g.locker.Lock(ctx, "recover")
	if err != nil {
		return ctx, nil, err
	}
	return context.WithValue(ctx, lockKey{}, "recover"), func() { _ = unlock() }, nil
}

// Pending reports the operation a crash left behind, if any, without taking the lock.
func (g *Guard) Pending() (*port.Operation, error) { return g.journal.Pending() }

func (g *Guard) recover(ctx context.Context) (RecoverResult, error) {
	res, err := g.recoverJournal(ctx)
	if err != nil {
		return res, err
	}
	for _, fn := range g.repairs {
		if err := fn(context.WithoutCancel(ctx)); err != nil {
			return res, err
		}
	}
	return res, nil
}

func (g *Guard) recoverJournal(ctx context.Context) (RecoverResult, error) {
	op, err := g.journal.Pending()
	if err != nil || op == nil {
		return RecoverResult{}, err
	}
	// Recovery must not be cut short by the signal that interrupted the original command.
	ctx = context.WithoutCancel(ctx)
	res := RecoverResult{Recovered: true, Operation: op}
	from, to := op.Source, op.Target
	if err := g.recordUnrecorded(ctx, op, &res, from, to); err != nil {
		return res, err
	}
	switch op.Direction {
	case port.Forward:
		if res.Stats, err = g.restorer.Reconcile(ctx, to); err != nil {
			return res, fmt.Errorf("finish %s %s: %w", op.Kind, op.ID, err)
		}
		fin, ok := g.finishers[op.Kind]
		if !ok {
			return res, fmt.Errorf("finish %s %s: no finisher registered for kind %q", op.Kind, op.ID, op.Kind)
		}
		if err := fin(ctx, *op); err != nil {
			return res, fmt.Errorf("finish %s %s: %w", op.Kind, op.ID, err)
		}
		if g.logger != nil {
			if err := g.logger(ctx, *op); err != nil {
				return res, fmt.Errorf("log finished %s %s: %w", op.Kind, op.ID, err)
			}
		}
		res.Outcome = "completed"
	case port.Backward:
		if res.Stats, err = g.restorer.Reconcile(ctx, from); err != nil {
			return res, fmt.Errorf("undo %s %s: %w", op.Kind, op.ID, err)
		}
		res.Outcome = "rolled_back"
	default:
		return res, errors.New("journal names an unknown direction " + string(op.Direction))
	}
	if err := g.journal.Clear(); err != nil {
		return res, fmt.Errorf("clear journal: %w", err)
	}
	return res, nil
}

// recordUnrecorded records, as a pre_recover checkpoint, whatever the live workspace holds that
// neither tree of the interrupted operation does, before recovery overwrites or removes it.
func (g *Guard) recordUnrecorded(ctx context.Context, op *port.Operation, res *RecoverResult, from, to tree.Hash) error {
	paths, err := g.restorer.Unrecorded(ctx, from, to)
	if err != nil {
		return fmt.Errorf("compare the workspace with interrupted %s %s (nothing was changed): %w", op.Kind, op.ID, err)
	}
	if len(paths) == 0 {
		return nil
	}
	res.Unrecorded = paths
	if g.recorder == nil {
		return fault.Conflict("interrupted %s %s: the workspace changed since (%s): nothing was changed; record it with a checkpoint, then run `plan recover`",
			op.Kind, op.ID, summarizePaths(paths))
	}
	id, err := g.recorder(ctx, fmt.Sprintf("before recovering interrupted %s %s (%d changed path(s))", op.Kind, op.ID, len(paths)))
	if err != nil {
		return fmt.Errorf("record the workspace before recovering %s %s (nothing was changed): %w", op.Kind, op.ID, err)
	}
	res.Recorded = id
	return nil
}

// summarizePaths names the first few paths of a list.
func summarizePaths(paths []string) string {
	const show = 3
	if len(paths) <= show {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:show], ", "), len(paths)-show)
}

// unfinished is the error of a finishLater change left journaled.
func unfinished(op port.Operation, err error) error {
	return fmt.Errorf("%w; the %s stays journaled: `plan recover` finishes it", err, op.Kind)
}

// Change is the journaled change: journal op (Forward), take the workspace from op.Source to
// op.Target (changes, when the caller compared the trees already), run op's kind's finisher (the
// database side), then remove the journal. The finisher's transaction is the commit point of every
// rollback, correction and revert. Before it, any failure puts the source tree back (the journal
// turned Backward while that happens), so a failed operation leaves the workspace as it was. After
// it, the operation has succeeded: a journal that cannot be cleared is harmless, because the next
// command's recovery finds the workspace at the target and the finisher already recorded. Unless
// finishLater: an operation that is finished, never undone (a clone's materialisation
// into the empty directory it made, where undoing would only leave a half-made workspace), whose
// failure once journaled leaves it Forward, so `plan recover` (or the next mutating command)
// finishes it once the cause (a store or database out of reach) is gone; the error says so.
func (g *Guard) Change(ctx context.Context, op port.Operation, changes []tree.Change, p port.Progress, finishLater bool) (port.ApplyStats, error) {
	from, to := op.Source, op.Target
	op.Direction = port.Forward
	if err := g.journal.Write(op); err != nil {
		return port.ApplyStats{}, fmt.Errorf("write journal: %w", err)
	}
	var stats port.ApplyStats
	var applyErr error
	if changes != nil {
		stats, applyErr = g.restorer.ApplyDiff(ctx, from, to, changes, p)
	} else {
		stats, applyErr = g.restorer.Apply(ctx, from, to, p)
	}
	if applyErr != nil {
		if finishLater {
			return stats, unfinished(op, applyErr)
		}
		var ie *port.IncompleteUndoError
		if errors.As(applyErr, &ie) {
			// The source tree could not be put back: leave a Backward journal so the next command retries.
			op.Direction = port.Backward
			if err := g.journal.Write(op); err != nil {
				return stats, errors.Join(applyErr, fmt.Errorf("write journal: %w", err))
			}
			return stats, applyErr
		}
		if err := g.journal.Clear(); err != nil {
			return stats, errors.Join(applyErr, fmt.Errorf("clear journal: %w", err))
		}
		return stats, applyErr
	}
	err := g.Hit(op.Kind + ".applied")
	if err == nil {
		fin, ok := g.finishers[op.Kind]
		if !ok {
			err = fmt.Errorf("no finisher registered for kind %q", op.Kind)
		} else if err = fin(context.WithoutCancel(ctx), op); err != nil {
			err = fmt.Errorf("record %s: %w", op.Kind, err)
		}
	}
	if err != nil {
		if finishLater {
			return stats, unfinished(op, err)
		}
		return stats, g.undo(ctx, op, from, err)
	}
	if g.Hit(op.Kind+".recorded") == nil {
		_ = g.journal.Clear() // see above: past the commit point, a leftover journal is harmless
	}
	return stats, nil
}

// undo puts the source tree back after the forward step succeeded but the operation could not be
// recorded, so the workspace and the database agree on the state before the operation.
func (g *Guard) undo(ctx context.Context, op port.Operation, from tree.Hash, cause error) error {
	op.Direction = port.Backward
	if err := g.journal.Write(op); err != nil {
		return errors.Join(cause, fmt.Errorf("write journal: %w", err))
	}
	if _, err := g.restorer.Reconcile(context.WithoutCancel(ctx), from); err != nil {
		return &port.IncompleteUndoError{Cause: cause, Undo: err}
	}
	if err := g.journal.Clear(); err != nil {
		return errors.Join(cause, fmt.Errorf("clear journal: %w", err))
	}
	return cause
}

// Hit is the failpoint of a journaled change's step name: an error when a crash test armed it.
func (g *Guard) Hit(name string) error {
	if g.Failpoint == nil {
		return nil
	}
	return g.Failpoint(name)
}
