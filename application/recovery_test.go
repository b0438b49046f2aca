package application

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// A read-only command that already holds the lock (one use case inside another) recovers: it is
// the lock holder, so nobody else can be part-way through the operation.
func TestRecoverIfIdleUnderTheLockRecovers(t *testing.T) {
	e := newGuardEnv()
	e.j.op = pendingOp(port.Forward)
	res, err := e.g.RecoverIfIdle(underLock())
	if err != nil || !res.Recovered || res.Outcome != "completed" || res.Pending != nil || e.j.op != nil || len(e.fins) != 1 {
		t.Errorf("%+v, %v; journal %+v, finishes %d", res, err, e.j.op, len(e.fins))
	}
	if e.l.locks != 0 {
		t.Error("it locked again")
	}
}

// A journal written by a process that took the lock and died between the first look and TryLock is
// reported, not acted on.
func TestRecoverIfIdleReportsAJournalThatAppearedBeforeTheLock(t *testing.T) {
	e := newGuardEnv()
	repairs := 0
	e.g.AddRepair(func(context.Context) error { repairs++; return nil })
	e.l.onTake = func() { e.j.op = pendingOp(port.Backward) }
	res, err := e.g.RecoverIfIdle(context.Background())
	if err != nil || res.Recovered || res.Pending == nil || res.Pending.Direction != port.Backward {
		t.Fatalf("%+v, %v", res, err)
	}
	if len(e.r.reconciles) != 0 || repairs != 0 || e.j.op == nil || e.l.held {
		t.Errorf("reconciles %v, repairs %d, journal %+v, lock held %v", e.r.reconciles, repairs, e.j.op, e.l.held)
	}
}

// crashedRollback leaves the journal of a rollback of the use-case env that was killed after it
// journaled: the workspace is still at the source.
func crashedRollback(t *testing.T, e *useCaseEnv) (port.Operation, *checkpoint.Checkpoint) {
	t.Helper()
	p := ranABC(t, e)
	b, _ := p.Decision("b")
	target, err := e.repo.Get(context.Background(), latestOf(b).CheckpointID)
	if err != nil {
		t.Fatal(err)
	}
	e.g.Failpoint = func(name string) error {
		if name == kindRollback+".applied" {
			return errors.New("killed")
		}
		return nil
	}
	if _, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID())}); err == nil {
		t.Fatal("the failpoint did not fire")
	}
	e.g.Failpoint = nil
	op := e.j.writes[0]
	if op.Direction != port.Forward || op.Kind != kindRollback {
		t.Fatalf("journaled %+v", op)
	}
	e.j.op = &op
	return op, target
}

// Recovery of a rollback records work done after the crash as a pre_recover checkpoint first; when
// that checkpoint cannot be taken, it changes nothing and keeps the journal for the next try.
func TestRecoveryKeepsWorkDoneAfterTheCrash(t *testing.T) {
	e := newUseCaseEnv(t)
	op, target := crashedRollback(t, e)
	e.setFile("after-crash.txt", "precious")
	reconciles := len(e.r.reconciles)

	e.snap.err = errors.New("disk full")
	_, err := e.g.Recover(context.Background())
	if !errors.Is(err, e.snap.err) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("err = %v", err)
	}
	if e.j.op == nil || !strings.Contains(e.livePaths(), "after-crash.txt") || len(e.r.reconciles) != reconciles {
		t.Fatalf("a failed recovery changed something: journal %+v, workspace %q", e.j.op, e.livePaths())
	}
	if len(e.metrics.failures) == 0 {
		t.Error("the failed pre_recover checkpoint was not counted")
	}

	e.snap.err = nil
	res, err := e.g.Recover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rec, err := e.repo.Get(context.Background(), checkpoint.ID(res.Recorded))
	if err != nil || rec.Type() != checkpoint.PreRecover || !strings.Contains(rec.Note(), op.ID) {
		t.Fatalf("pre_recover checkpoint %v, %v", rec, err)
	}
	if entries, _ := e.store.Flatten(rec.Root()); !strings.Contains(pathsOf(entries), "after-crash.txt") {
		t.Errorf("the pre_recover checkpoint lacks the work done after the crash: %s", pathsOf(entries))
	}
	// Finished forward: the workspace is at the target, and b and c are reverted.
	if e.livePaths() != "a.txt" || e.j.op != nil || res.Outcome != "completed" {
		t.Errorf("workspace %q, journal %+v, outcome %s", e.livePaths(), e.j.op, res.Outcome)
	}
	if decisionStatus(t, e, "b") != plan.Reverted || decisionStatus(t, e, "c") != plan.Reverted {
		t.Error("recovery did not record the rollback's reverted decisions")
	}
	if got, _ := e.repo.Get(context.Background(), target.ID()); got.RollbackCount() != 1 {
		t.Errorf("rollback count %d", got.RollbackCount())
	}
}

func pathsOf(entries []tree.Entry) string {
	var b strings.Builder
	for _, x := range entries {
		b.WriteString(x.Path + " ")
	}
	return b.String()
}

// operationPlan names a correction's plan from its journal detail; anything else, or a detail it
// cannot read, is the current plan.
func TestOperationPlan(t *testing.T) {
	for _, c := range []struct {
		op   port.Operation
		want string
	}{
		{port.Operation{Kind: kindCorrection, Detail: []byte(`{"plan":"q"}`)}, "q"},
		{port.Operation{Kind: kindCorrection, Detail: []byte(`{`)}, ""},
		{port.Operation{Kind: kindCorrection, Detail: []byte(`{}`)}, ""},
		{port.Operation{Kind: kindRollback, Detail: []byte(`{"plan":"q"}`)}, ""},
	} {
		if got := operationPlan(c.op); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.op.Kind, c.op.Detail, got, c.want)
		}
	}
}

// An operation undone after its finisher failed, whose journal then cannot be cleared, reports both
// and leaves the journal (now backward) for recovery, which finds the source in place.
func TestRunUndoWhoseJournalCannotBeCleared(t *testing.T) {
	e := newGuardEnv()
	e.finErr = errors.New("database locked")
	e.j.clearErr = errors.New("EIO")
	_, err := e.g.Change(context.Background(), *pendingOp(port.Forward), nil, nil, false)
	if !errors.Is(err, e.finErr) || !errors.Is(err, e.j.clearErr) || !strings.Contains(err.Error(), "clear journal") {
		t.Fatalf("err = %v", err)
	}
	if e.j.op == nil || e.j.op.Direction != port.Backward {
		t.Fatalf("journal %+v, want it left backward", e.j.op)
	}
	e.j.clearErr = nil
	res, err := e.g.Recover(context.Background())
	if err != nil || res.Outcome != "rolled_back" || e.j.op != nil {
		t.Errorf("recovery: %+v, %v", res, err)
	}
}

// A rollback recovery finished is entered in the operation log once, with its safety checkpoint
// as the undo's (the command that would have logged it died): `plan undo` then takes it back. A
// log that cannot be read or written keeps the journal for the next try.
func TestRecoveryLogsTheRollbackItFinished(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	op, _ := crashedRollback(t, e)
	if op.BackupCheckpoint == "" {
		t.Fatal("the crashed rollback journaled no safety checkpoint")
	}
	log.listErr = errors.New("db down")
	if _, err := e.g.Recover(context.Background()); !errors.Is(err, log.listErr) || e.j.op == nil {
		t.Fatalf("recovery with the log unreadable: %v (journal %+v)", err, e.j.op)
	}
	log.listErr = nil
	if _, err := e.g.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	// (The command, failed here rather than killed, logged its failure under its own ID.)
	entries := len(log.ops)
	if got := log.ops[0]; got.ID != op.ID || got.Kind != "rollback" || got.UndoCheckpoint != op.BackupCheckpoint || !undoable(got) {
		t.Fatalf("logged %+v", got)
	}
	// Logged once: a recovery run again (the journal left, say) adds nothing.
	if err := e.ops.logRecovered(context.Background(), op); err != nil || len(log.ops) != entries {
		t.Fatalf("logged again: %v, %+v", err, log.ops)
	}
	// An operation without a safety checkpoint (a clone's) is not logged here.
	noBackup := op
	noBackup.ID, noBackup.BackupCheckpoint = "other", ""
	if err := e.ops.logRecovered(context.Background(), noBackup); err != nil || len(log.ops) != entries {
		t.Fatalf("an operation without a safety checkpoint was logged: %v", err)
	}
	if _, err := hs.Undo(context.Background(), UndoRequest{}); err != nil {
		t.Fatalf("undo of the recovered rollback: %v", err)
	}
}
