package application

import (
	"context"
	"testing"

	"github.com/planhq/plan/application/port"
)

// crashed stands for a kill: the failpoint that raises it stops the use case where it is, the
// journal left as it was.
type crashed struct{}

// killedAt runs fn, which a failpoint named name stops as a kill would.
func killedAt(t *testing.T, e *useCaseEnv, name string, fn func()) {
	t.Helper()
	e.g.Failpoint = func(n string) error {
		if n == name {
			panic(crashed{})
		}
		return nil
	}
	defer func() {
		e.g.Failpoint = nil
		if r := recover(); r != (crashed{}) {
			t.Fatalf("not killed at %s (%v)", name, r)
		}
	}()
	fn()
}

// An undo and a redo killed once their rollback changed the workspace, before it was recorded:
// recovery records the rollback and the log step in one transaction, so the log says what the
// workspace shows, and the next undo undoes the operation the redo made stand again.
func TestAKilledUndoAndRedoAreLoggedByRecovery(t *testing.T) {
	ctx := context.Background()
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	_, rollback := rolledBackToB(t, e, hs)
	killedAt(t, e, kindRollback+".applied", func() { _, _ = hs.Undo(ctx, UndoRequest{}) })
	if len(log.ops) != 1 {
		t.Fatalf("the log before recovery: %+v", log.ops)
	}
	res, err := e.g.Recover(ctx)
	if err != nil || res.Outcome != "completed" {
		t.Fatalf("recover: %+v, %v", res, err)
	}
	undo := log.ops[0]
	if len(log.ops) != 2 || undo.Kind != "undo" || log.ops[1].ID != rollback.ID || log.ops[1].UndoneBy != undo.ID ||
		len(undo.Checkpoints) != 2 || undo.FinishedAt.IsZero() {
		t.Fatalf("the log after recovering the undo: %+v", log.ops)
	}
	if got := e.livePaths(); got != "a.txt b.txt c.txt" {
		t.Fatalf("workspace after the recovered undo: %q", got)
	}

	killedAt(t, e, kindRollback+".applied", func() { _, _ = hs.Redo(ctx, RedoRequest{}) })
	if _, err := e.g.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	redo := log.ops[0]
	if redo.Kind != "redo" || log.ops[1].ID != undo.ID || log.ops[1].UndoneBy != redo.ID || log.ops[2].UndoneBy != "" {
		t.Fatalf("the log after recovering the redo: %+v", log.ops)
	}
	if got := e.livePaths(); got != "a.txt" {
		t.Fatalf("workspace after the recovered redo: %q", got)
	}
	next, err := hs.Undo(ctx, UndoRequest{})
	if err != nil || next.Undone.ID != rollback.ID {
		t.Fatalf("the undo after: %+v, %v (want the rollback undone again)", next.Undone, err)
	}
}

// A journaled log step with no operation log to write to is an error of the commit, and a
// rollback without a step has none to do.
func TestLogStepNeedsALog(t *testing.T) {
	e := newUseCaseEnv(t)
	detail, err := stepDetail(logStep{Entry: stepEntry{ID: "op1", Kind: "undo"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ops.logStep(context.Background(), port.Operation{ID: "op1", Kind: kindRollback, Detail: detail}); err == nil {
		t.Fatal("a log step without an operation log succeeded")
	}
	if err := e.ops.logStep(context.Background(), port.Operation{ID: "op2", Kind: kindRollback, Detail: bothDetailForTest(t)}); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.ops.takeStep("op2"); ok {
		t.Fatal("a rollback without a step left an outcome")
	}
}

func bothDetailForTest(t *testing.T) []byte {
	t.Helper()
	return []byte(`{"mode":"both"}`)
}
