package application

import (
	"context"
	"errors"
	"fmt"

	"github.com/planhq/plan/domain/tree"
)

type lockKey struct{}

// Finisher completes the database side of a journaled operation of one kind after its workspace side
// reached the target tree. It MUST be idempotent: recovery may call it for an operation whose
// database commit already happened before a crash.
type Finisher func(ctx context.Context, op Operation) error

// Guard serialises mutating use cases on one workspace and recovers interrupted operations before any
// of them runs. Services share one Guard.
type Guard struct {
	// Failpoint, when set, is called at each step of a journaled operation; crash tests arm it.
	Failpoint func(name string) error

	locker    Locker
	journal   Journal
	restorer  Restorer
	finishers map[string]Finisher
	repairs   []func(ctx context.Context) error
}

// NewGuard returns a Guard.
func NewGuard(l Locker, j Journal, r Restorer) *Guard {
	return &Guard{locker: l, journal: j, restorer: r, finishers: map[string]Finisher{}}
}

// Register installs the finisher for operations of kind. Services call it from their constructors.
func (g *Guard) Register(kind string, f Finisher) { g.finishers[kind] = f }

// AddRepair installs a check that runs under the lock after journal recovery, whenever no other
// process holds the lock: the plan use cases use it to close attempts a killed run left "running".
func (g *Guard) AddRepair(fn func(ctx context.Context) error) { g.repairs = append(g.repairs, fn) }

// RecoverIfIdle recovers an interrupted operation and runs the repairs, but only when the workspace
// lock is free: a busy lock means the journal belongs to an operation that is still running.
// Read-only commands call it so they never show a half-finished state.
func (g *Guard) RecoverIfIdle(ctx context.Context) (RecoverResult, error) {
	if ctx.Value(lockKey{}) != nil {
		return g.recover(ctx)
	}
	unlock, ok, err := g.locker.TryLock("recover")
	if err != nil || !ok {
		return RecoverResult{}, err
	}
	defer func() { _ = unlock() }()
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
	if _, err := g.recover(ctx); err != nil {
		release()
		return ctx, nil, fmt.Errorf("recover an interrupted operation before %s: %w", purpose, err)
	}
	return ctx, release, nil
}

// RecoverResult says what recovery found and did.
type RecoverResult struct {
	Recovered bool
	Operation *Operation
	// Outcome is "completed" (the operation was finished) or "rolled_back" (undone).
	Outcome string
	Stats   ApplyStats
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
func (g *Guard) Pending() (*Operation, error) { return g.journal.Pending() }

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
	switch op.Direction {
	case Forward:
		to, err := parseHash(op.Target)
		if err != nil {
			return res, err
		}
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
		res.Outcome = "completed"
	case Backward:
		from, err := parseHash(op.Source)
		if err != nil {
			return res, err
		}
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

// run journals op, applies the workspace change from→to, runs the finisher and clears the journal.
//
// The finisher's transaction is the commit point. Before it, any failure puts the source tree back
// (the journal turned Backward while that happens), so a failed operation leaves the workspace as it
// was. After it, the operation has succeeded: a journal that cannot be cleared is harmless, because
// the next command's recovery finds the workspace at the target and the finisher already recorded.
func (g *Guard) run(ctx context.Context, op Operation, p Progress) (ApplyStats, error) {
	from, err := parseHash(op.Source)
	if err != nil {
		return ApplyStats{}, err
	}
	to, err := parseHash(op.Target)
	if err != nil {
		return ApplyStats{}, err
	}
	op.Direction = Forward
	if err := g.journal.Write(op); err != nil {
		return ApplyStats{}, fmt.Errorf("write journal: %w", err)
	}
	stats, applyErr := g.restorer.Apply(ctx, from, to, p)
	if applyErr != nil {
		var ie *IncompleteUndoError
		if errors.As(applyErr, &ie) {
			// The source tree could not be put back: leave a Backward journal so the next command retries.
			op.Direction = Backward
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
	err = g.hit(op.Kind + ".applied")
	if err == nil {
		fin, ok := g.finishers[op.Kind]
		if !ok {
			err = fmt.Errorf("no finisher registered for kind %q", op.Kind)
		} else if err = fin(context.WithoutCancel(ctx), op); err != nil {
			err = fmt.Errorf("record %s: %w", op.Kind, err)
		}
	}
	if err != nil {
		return stats, g.undo(ctx, op, from, err)
	}
	if g.hit(op.Kind+".recorded") == nil {
		_ = g.journal.Clear() // see above: past the commit point, a leftover journal is harmless
	}
	return stats, nil
}

// undo puts the source tree back after the forward step succeeded but the operation could not be
// recorded, so the workspace and the database agree on the state before the operation.
func (g *Guard) undo(ctx context.Context, op Operation, from tree.Hash, cause error) error {
	op.Direction = Backward
	if err := g.journal.Write(op); err != nil {
		return errors.Join(cause, fmt.Errorf("write journal: %w", err))
	}
	if _, err := g.restorer.Reconcile(context.WithoutCancel(ctx), from); err != nil {
		return &IncompleteUndoError{Cause: cause, Undo: err}
	}
	if err := g.journal.Clear(); err != nil {
		return errors.Join(cause, fmt.Errorf("clear journal: %w", err))
	}
	return cause
}

func (g *Guard) hit(name string) error {
	if g.Failpoint == nil {
		return nil
	}
	return g.Failpoint(name)
}

// IncompleteUndoError is returned by a Restorer when a failed Apply could not put the source tree
// back. The workspace is then mixed until recovery succeeds.
type IncompleteUndoError struct {
	Cause error // why the forward step failed
	Undo  error // why putting the source back failed
}

func (e *IncompleteUndoError) Error() string {
	return fmt.Sprintf("%v; putting the workspace back also failed (%v): run `plan recover` once the cause is fixed", e.Cause, e.Undo)
}

// Unwrap exposes both causes.
func (e *IncompleteUndoError) Unwrap() []error { return []error{e.Cause, e.Undo} }
