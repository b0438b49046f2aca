package application

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

// fakeOpLog is an in-memory OperationLog: copies of its entries, in UTC, newest first by start,
// then ID, as the database adapter keeps them (application/oplogtest holds both to that).
type fakeOpLog struct {
	ops     []port.LoggedOperation
	listErr error
	addErr  error
	markErr error
}

func (l *fakeOpLog) Add(_ context.Context, op port.LoggedOperation) error {
	if l.addErr != nil {
		return l.addErr
	}
	if slices.ContainsFunc(l.ops, func(x port.LoggedOperation) bool { return x.ID == op.ID }) {
		return fault.Conflict("operation %s already exists", op.ID)
	}
	l.put(op)
	return nil
}

// put stores a copy of op in its place in the log.
func (l *fakeOpLog) put(op port.LoggedOperation) {
	op = copyOp(op)
	op.StartedAt, op.FinishedAt = op.StartedAt.UTC(), op.FinishedAt.UTC()
	i, _ := slices.BinarySearchFunc(l.ops, op, func(x, op port.LoggedOperation) int {
		if c := op.StartedAt.Compare(x.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(op.ID, x.ID)
	})
	l.ops = slices.Insert(l.ops, i, op)
}

func copyOp(op port.LoggedOperation) port.LoggedOperation {
	op.Args, op.Checkpoints = slices.Clone(op.Args), slices.Clone(op.Checkpoints)
	return op
}

func (l *fakeOpLog) List(_ context.Context, limit int, planName string) ([]port.LoggedOperation, error) {
	if l.listErr != nil {
		return nil, l.listErr
	}
	var out []port.LoggedOperation
	for _, op := range l.ops {
		if planName == "" || op.Plan == planName {
			out = append(out, copyOp(op))
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (l *fakeOpLog) MarkUndone(_ context.Context, id, by string) error {
	if l.markErr != nil {
		return l.markErr
	}
	for i := range l.ops {
		if l.ops[i].ID == id {
			l.ops[i].UndoneBy = by
			return nil
		}
	}
	return fault.NotFound("operation %s not found", id)
}

// rolledBackToB runs a, b and c and rolls back to b's pre_decision checkpoint, which the service
// logs (its ID is the rollback's operation ID, its undo point the pre_rollback checkpoint).
func rolledBackToB(t *testing.T, e *useCaseEnv, hs *HistoryService) (RollbackResult, port.LoggedOperation) {
	t.Helper()
	p := ranABC(t, e)
	b, _ := p.Decision("b")
	res, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(latestOf(b).CheckpointID)})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.livePaths(); got != "a.txt" {
		t.Fatalf("workspace after the rollback: %q", got)
	}
	// The service logged the rollback itself (after the run and its decisions): the tests count
	// entries from it, so only it is kept, as an entry of plan p (what the undo copies).
	l := hs.log.(*fakeOpLog)
	op := l.ops[0]
	if op.Kind != "rollback" || op.ID != res.OperationID || op.UndoCheckpoint != res.Backup.ID() || op.Outcome != "ok" ||
		!slices.Contains(op.Checkpoints, res.Target.ID()) {
		t.Fatalf("the rollback's log entry: %+v", op)
	}
	op.Plan = "p"
	l.ops = []port.LoggedOperation{op}
	return res, op
}

func decisionStatus(t *testing.T, e *useCaseEnv, id string) plan.Status {
	t.Helper()
	p, err := e.plans.Current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Decision(id)
	if err != nil {
		t.Fatal(err)
	}
	return d.Status()
}

func TestUndoTakesBackTheLastRollback(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	rb, logged := rolledBackToB(t, e, hs)
	if decisionStatus(t, e, "b") != plan.Reverted || decisionStatus(t, e, "c") != plan.Reverted {
		t.Fatal("the rollback did not revert b and c")
	}

	res, err := hs.Undo(context.Background(), UndoRequest{Warn: e.warn})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.livePaths(); got != "a.txt b.txt c.txt" {
		t.Errorf("workspace after undo: %q", got)
	}
	if res.Undone.ID != logged.ID || res.Rollback.Target.ID() != rb.Backup.ID() || res.Rollback.Mode != RestoreBoth {
		t.Errorf("undone %s to %s (%s)", res.Undone.ID, res.Rollback.Target.ID(), res.Rollback.Mode)
	}
	if !slices.Equal(res.Restored, []string{"b", "c"}) {
		t.Errorf("restored %v, want [b c]", res.Restored)
	}
	for _, id := range []string{"b", "c"} {
		if st := decisionStatus(t, e, id); st != plan.Succeeded {
			t.Errorf("%s after undo: %s, want succeeded", id, st)
		}
	}
	// The undo is logged, names the checkpoints it used, and marks what it undid.
	if len(log.ops) != 2 || log.ops[0].Kind != "undo" || log.ops[0].ID != res.Operation.ID ||
		!slices.Equal(log.ops[0].Args, []string{"rollback", logged.ID}) || log.ops[0].Plan != "p" {
		t.Fatalf("log: %+v", log.ops)
	}
	if !slices.Equal(log.ops[0].Checkpoints, []checkpoint.ID{rb.Backup.ID(), res.Rollback.Backup.ID()}) {
		t.Errorf("undo's checkpoints: %v", log.ops[0].Checkpoints)
	}
	if log.ops[1].UndoneBy != res.Operation.ID {
		t.Errorf("the rollback is not marked undone: %+v", log.ops[1])
	}
	if e.j.op != nil {
		t.Error("the journal was left behind")
	}
	if e.l.held {
		t.Error("the lock was left held")
	}

	// The undo itself is not undone, and the rollback is undone already: nothing is left.
	if _, err := hs.Undo(context.Background(), UndoRequest{}); !errors.Is(err, fault.ErrNotFound) ||
		!strings.Contains(err.Error(), "nothing to undo") {
		t.Errorf("second undo: %v", err)
	}
}

func TestUndoDryRunChangesNothing(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	rolledBackToB(t, e, hs)
	locks, cps := e.l.locks, len(e.repo.cps)

	res, err := hs.Undo(context.Background(), UndoRequest{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rollback.Mode != RestoreBoth || res.Rollback.Counts.Added != 2 || res.Operation.ID != "" {
		t.Errorf("preview: %+v", res)
	}
	if e.livePaths() != "a.txt" || e.l.locks != locks || len(e.repo.cps) != cps || len(log.ops) != 1 || log.ops[0].UndoneBy != "" {
		t.Error("a dry undo changed something")
	}
}

func TestUndoPicksTheNewestUndoableOperation(t *testing.T) {
	ok := port.LoggedOperation{ID: "x", Kind: "rollback", Outcome: "ok", UndoCheckpoint: "cp"}
	for _, c := range []struct {
		name string
		mod  func(*port.LoggedOperation)
		want bool
	}{
		{"rollback", func(*port.LoggedOperation) {}, true},
		{"correction", func(o *port.LoggedOperation) { o.Kind = "correct" }, true},
		{"surgical revert", func(o *port.LoggedOperation) { o.Kind = "revert" }, true},
		{"decision", func(o *port.LoggedOperation) { o.Kind = "decision" }, true},
		{"validation failed", func(o *port.LoggedOperation) { o.Outcome = "validation_failed" }, true},
		{"undo", func(o *port.LoggedOperation) { o.Kind = "undo" }, false},
		{"checkpoint", func(o *port.LoggedOperation) { o.Kind = "checkpoint" }, false},
		// Its safety checkpoint is logged only once the change went through, whatever failed after.
		{"failed after the change", func(o *port.LoggedOperation) { o.Outcome = "internal" }, true},
		{"failed decision", func(o *port.LoggedOperation) { o.Kind, o.Outcome = "decision", "failed" }, true},
		{"no safety checkpoint", func(o *port.LoggedOperation) { o.UndoCheckpoint = "" }, false},
		{"undone", func(o *port.LoggedOperation) { o.UndoneBy = "y" }, false},
	} {
		op := ok
		c.mod(&op)
		if got := undoable(op); got != c.want {
			t.Errorf("%s: undoable = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestUndoRefusesWhenItsSafetyCheckpointIsGone(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	rb, _ := rolledBackToB(t, e, hs)
	delete(e.repo.cps, rb.Backup.ID())
	cps := len(e.repo.cps)
	_, err := hs.Undo(context.Background(), UndoRequest{})
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "was deleted") {
		t.Errorf("err = %v, want a conflict naming the deleted checkpoint", err)
	}
	if e.livePaths() != "a.txt" || len(e.repo.cps) != cps || log.ops[0].UndoneBy != "" {
		t.Error("a refused undo changed something")
	}
}

func TestUndoPropagatesFailures(t *testing.T) {
	t.Run("log unreadable", func(t *testing.T) {
		e := newUseCaseEnv(t)
		log := &fakeOpLog{listErr: errors.New("db down")}
		if _, err := NewHistoryService(e.ops, log).Undo(context.Background(), UndoRequest{}); !errors.Is(err, log.listErr) {
			t.Errorf("err = %v", err)
		}
		if e.l.held {
			t.Error("the lock was left held")
		}
	})
	t.Run("checkpoint lookup fails", func(t *testing.T) {
		e := newUseCaseEnv(t)
		log := &fakeOpLog{}
		hs := NewHistoryService(e.ops, log)
		rolledBackToB(t, e, hs)
		e.repo.getErr = errors.New("db down")
		if _, err := hs.Undo(context.Background(), UndoRequest{}); !errors.Is(err, e.repo.getErr) || errors.Is(err, fault.ErrConflict) {
			t.Errorf("err = %v, want the lookup's error", err)
		}
	})
	t.Run("rollback fails", func(t *testing.T) {
		e := newUseCaseEnv(t)
		log := &fakeOpLog{}
		hs := NewHistoryService(e.ops, log)
		rolledBackToB(t, e, hs)
		e.snap.err = errors.New("disk gone")
		_, err := hs.Undo(context.Background(), UndoRequest{})
		if !errors.Is(err, e.snap.err) || !strings.HasPrefix(err.Error(), "undo rollback ") {
			t.Errorf("err = %v", err)
		}
		if log.ops[0].UndoneBy != "" || len(log.ops) != 1 {
			t.Error("a failed undo was logged as done")
		}
	})
	t.Run("workspace busy", func(t *testing.T) {
		e := newUseCaseEnv(t)
		log := &fakeOpLog{}
		hs := NewHistoryService(e.ops, log)
		rolledBackToB(t, e, hs)
		e.l.err = fault.Conflict("busy")
		if _, err := hs.Undo(context.Background(), UndoRequest{}); !errors.Is(err, fault.ErrConflict) || e.livePaths() != "a.txt" {
			t.Errorf("err = %v, workspace %q", err, e.livePaths())
		}
	})
	t.Run("undo entry not written", func(t *testing.T) {
		e := newUseCaseEnv(t)
		log := &fakeOpLog{}
		hs := NewHistoryService(e.ops, log)
		rolledBackToB(t, e, hs)
		log.addErr = errors.New("db down")
		if _, err := hs.Undo(context.Background(), UndoRequest{}); !errors.Is(err, log.addErr) || log.ops[0].UndoneBy != "" {
			t.Errorf("err = %v; the undone entry must not be marked without the undo's own", err)
		}
	})
	t.Run("log not written", func(t *testing.T) {
		e := newUseCaseEnv(t)
		log := &fakeOpLog{}
		hs := NewHistoryService(e.ops, log)
		rolledBackToB(t, e, hs)
		log.markErr = errors.New("db down")
		if _, err := hs.Undo(context.Background(), UndoRequest{}); !errors.Is(err, log.markErr) {
			t.Errorf("err = %v", err)
		}
	})
}

func TestHistoryRecordAndList(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	op, err := hs.Record(context.Background(), port.LoggedOperation{Kind: "checkpoint", Plan: "p", Outcome: "ok"})
	if err != nil || op.ID == "" || !op.FinishedAt.Equal(e.clock.t) {
		t.Fatalf("recorded %+v, %v: want an ID and the clock's time", op, err)
	}
	if _, err := hs.Record(context.Background(), port.LoggedOperation{ID: "given", Kind: "gc", Outcome: "ok", FinishedAt: baseTime}); err != nil {
		t.Fatal(err)
	}
	all, err := hs.List(context.Background(), 0, "")
	if err != nil || len(all) != 2 || all[0].ID != "given" || !all[0].FinishedAt.Equal(baseTime) {
		t.Errorf("list: %+v, %v", all, err)
	}
	if mine, err := hs.List(context.Background(), 1, "p"); err != nil || len(mine) != 1 || mine[0].ID != op.ID {
		t.Errorf("list of p: %+v, %v", mine, err)
	}
	if _, err := hs.List(context.Background(), -1, ""); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("negative limit: %v", err)
	}
	log.addErr = errors.New("db down")
	if _, err := hs.Record(context.Background(), port.LoggedOperation{Kind: "gc"}); !errors.Is(err, log.addErr) {
		t.Errorf("log failing: %v", err)
	}
}

func TestValidationFailedErrorSaysWhatFailedAndHowToUndo(t *testing.T) {
	code := 3
	cause := errors.New("no shell")
	for _, c := range []struct {
		err  *ValidationFailedError
		want string
	}{
		{&ValidationFailedError{Command: "make test", ExitCode: &code, Undo: "cp1", Log: "logs/v.log"},
			`validation "make test" failed with exit code 3; the change stands; ` +
				"`plan undo` takes it back, files and decision states (its safety checkpoint is cp1; output in .plan/logs/v.log)"},
		{&ValidationFailedError{Command: "make test", Err: cause, Undo: "cp1", Log: "logs/v.log"},
			`validation "make test" could not run: no shell; the change stands`},
		{&ValidationFailedError{Command: "make test", Undo: "cp1"}, `validation "make test" failed; the change stands`},
	} {
		if got := c.err.Error(); !strings.HasPrefix(got, c.want) {
			t.Errorf("got %q\nwant prefix %q", got, c.want)
		}
	}
	if err := error(&ValidationFailedError{Err: cause}); !errors.Is(err, cause) {
		t.Error("the cause does not unwrap")
	}
}

// A workspace without any plan (checkpoints only) can undo a rollback too: there are no decision
// states to give back.
func TestUndoWithoutAPlan(t *testing.T) {
	e := newUseCaseEnv(t)
	e.setFile("x.txt", "x")
	cp, err := e.cps.Create(context.Background(), CreateRequest{Type: checkpoint.Manual})
	if err != nil {
		t.Fatal(err)
	}
	e.setFile("y.txt", "y")
	rb, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(cp.ID())})
	if err != nil || e.livePaths() != "x.txt" {
		t.Fatalf("rollback: %v, workspace %q", err, e.livePaths())
	}
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	if _, err := hs.Record(context.Background(), port.LoggedOperation{ID: rb.OperationID, Kind: "rollback", Outcome: "ok", UndoCheckpoint: rb.Backup.ID()}); err != nil {
		t.Fatal(err)
	}
	res, err := hs.Undo(context.Background(), UndoRequest{})
	if err != nil || len(res.Restored) != 0 || e.livePaths() != "x.txt y.txt" || log.ops[1].UndoneBy == "" {
		t.Errorf("undo: %v, restored %v, workspace %q", err, res.Restored, e.livePaths())
	}
}
