package application

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/tree"
)

// An operation run to finish (a clone's materialisation) is never undone: whatever fails once it is
// journaled (the apply, the finisher) leaves the journal Forward, the error says `plan recover`
// finishes it, and recovery does, once the cause is gone.
func TestRunToFinishLeavesTheJournalForward(t *testing.T) {
	for name, setup := range map[string]func(e *guardEnv){
		"apply": func(e *guardEnv) { e.r.applyErr = errors.New("unexpected EOF") },
		"incomplete": func(e *guardEnv) {
			e.r.applyErr = &port.IncompleteUndoError{Cause: errors.New("EOF"), Undo: errors.New("ENOSPC")}
		},
		"finisher":       func(e *guardEnv) { e.finErr = errors.New("database lost") },
		"applied marker": func(e *guardEnv) { e.g.Failpoint = func(n string) error { return errors.New("injected " + n) } },
	} {
		t.Run(name, func(t *testing.T) {
			e := newGuardEnv()
			setup(e)
			_, err := e.g.Change(context.Background(), runOp(), nil, nil, true)
			if err == nil || !strings.HasSuffix(err.Error(), "; the rollback stays journaled: `plan recover` finishes it") {
				t.Fatalf("change (finishLater) = %v", err)
			}
			if e.j.op == nil || e.j.op.Direction != port.Forward || len(e.j.writes) != 1 || e.j.clears != 0 {
				t.Fatalf("journal %+v (%d writes, %d clears), want the one Forward write kept", e.j.op, len(e.j.writes), e.j.clears)
			}
			if len(e.r.reconciles) != 0 {
				t.Fatalf("reconciled %v: the source was put back", e.r.reconciles)
			}
			e.r.applyErr, e.finErr, e.g.Failpoint = nil, nil, nil
			res, err := e.g.Recover(context.Background())
			if err != nil || res.Outcome != "completed" {
				t.Fatalf("recover: %+v, %v", res, err)
			}
			if !slices.Equal(e.r.reconciles, []tree.Hash{dstTree}) || e.j.op != nil || len(e.fins) == 0 {
				t.Errorf("recovery: reconciles %v, journal %+v, finisher calls %d", e.r.reconciles, e.j.op, len(e.fins))
			}
		})
	}
	// Success is run's.
	e := newGuardEnv()
	if _, err := e.g.Change(context.Background(), runOp(), nil, nil, true); err != nil || e.j.op != nil || len(e.fins) != 1 {
		t.Errorf("success: %v, journal %+v, %d finisher calls", err, e.j.op, len(e.fins))
	}
}

// RollbackRequest.NeverUndo runs the rollback to finish: a failed apply stays journaled for
// `plan recover` instead of being undone.
func TestRollbackNeverUndo(t *testing.T) {
	e := newUseCaseEnv(t)
	e.setFile("a.txt", "a")
	cp, err := e.cps.Create(context.Background(), CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	e.setFile("b.txt", "b")
	e.r.applyErr = errors.New("unexpected EOF")
	_, err = e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(cp.ID()), NeverUndo: true})
	if !errors.Is(err, e.r.applyErr) || !strings.Contains(err.Error(), "`plan recover` finishes it") {
		t.Fatalf("rollback = %v", err)
	}
	if e.j.op == nil || e.j.op.Direction != port.Forward || e.j.op.TargetCheckpoint != cp.ID() {
		t.Errorf("journal %+v, want the rollback to %s kept Forward", e.j.op, cp.ID())
	}
}
