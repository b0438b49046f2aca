package application

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/application/internal/kernel"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

var (
	srcTree = tree.Sum([]byte("source tree"))
	dstTree = tree.Sum([]byte("target tree"))
)

type guardEnv struct {
	l      *fakeLocker
	j      *fakeJournal
	r      *fakeRestorer
	g      *kernel.Guard
	fins   []port.Operation
	finErr error
	hits   []string
}

func newGuardEnv() *guardEnv {
	e := &guardEnv{l: &fakeLocker{}, j: &fakeJournal{}, r: &fakeRestorer{}}
	e.g = kernel.NewGuard(e.l, e.j, e.r)
	e.g.Register("rollback", func(_ context.Context, op port.Operation) error {
		e.fins = append(e.fins, op)
		return e.finErr
	})
	e.g.Failpoint = func(name string) error {
		e.hits = append(e.hits, name)
		return nil
	}
	return e
}

func pendingOp(dir port.Direction) *port.Operation {
	return &port.Operation{
		ID: "0123456789abcdef01234567", Kind: "rollback", Direction: dir,
		Source: srcTree, Target: dstTree, TargetCheckpoint: "t", BackupCheckpoint: "b",
	}
}

func TestEnterRecoversForward(t *testing.T) {
	e := newGuardEnv()
	e.j.op = pendingOp(port.Forward)
	ctx, release, err := e.g.Enter(context.Background(), "checkpoint create")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.r.reconciles, []tree.Hash{dstTree}) {
		t.Errorf("Reconcile calls %v, want one to the target", e.r.reconciles)
	}
	if len(e.r.applies) != 0 {
		t.Errorf("recovery used Apply: %v", e.r.applies)
	}
	if len(e.fins) != 1 || e.fins[0].ID != pendingOp(port.Forward).ID {
		t.Errorf("finisher calls %+v, want one for the pending operation", e.fins)
	}
	if e.j.op != nil || e.j.clears != 1 {
		t.Errorf("journal not cleared: %+v, %d clears", e.j.op, e.j.clears)
	}
	if e.l.locks != 1 || e.l.purposes[0] != "checkpoint create" || !e.l.held {
		t.Errorf("lock: %+v", e.l)
	}
	if !kernel.TestHoldsLock(ctx) {
		t.Error("returned context does not carry the lock")
	}
	release()
	if e.l.held || e.l.unlocks != 1 {
		t.Errorf("release did not unlock: %+v", e.l)
	}
}

func TestEnterRecoversBackward(t *testing.T) {
	e := newGuardEnv()
	e.j.op = pendingOp(port.Backward)
	_, release, err := e.g.Enter(context.Background(), "rollback")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if !slices.Equal(e.r.reconciles, []tree.Hash{srcTree}) {
		t.Errorf("Reconcile calls %v, want one to the source", e.r.reconciles)
	}
	if len(e.fins) != 0 {
		t.Errorf("an undone operation ran its finisher: %+v", e.fins)
	}
	if e.j.op != nil {
		t.Error("journal not cleared")
	}
}

func TestRecoverReportsOutcome(t *testing.T) {
	for _, c := range []struct {
		dir     port.Direction
		outcome string
	}{{port.Forward, "completed"}, {port.Backward, "rolled_back"}} {
		e := newGuardEnv()
		e.j.op = pendingOp(c.dir)
		if p, err := e.g.Pending(); err != nil || p == nil || p.Direction != c.dir {
			t.Fatalf("Pending = %+v, %v", p, err)
		}
		res, err := e.g.Recover(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !res.Recovered || res.Outcome != c.outcome || res.Operation == nil || res.Operation.ID != pendingOp(c.dir).ID {
			t.Errorf("%s: %+v", c.dir, res)
		}
		if e.l.held || e.l.locks != 1 || e.l.purposes[0] != "recover" {
			t.Errorf("%s: Recover lock use %+v", c.dir, e.l)
		}
		// Nothing left: a second Recover is a no-op.
		if p, err := e.g.Pending(); err != nil || p != nil {
			t.Errorf("Pending after recovery = %+v, %v", p, err)
		}
		res, err = e.g.Recover(context.Background())
		if err != nil || res.Recovered {
			t.Errorf("%s: second Recover = %+v, %v", c.dir, res, err)
		}
	}
}

func TestEnterFailsWhenJournalUnreadable(t *testing.T) {
	e := newGuardEnv()
	e.j.pendingErr = fault.Integrity("journal damaged")
	_, release, err := e.g.Enter(context.Background(), "rollback")
	if !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("Enter = %v, want the journal's integrity error", err)
	}
	if release != nil {
		t.Error("Enter returned a release function with an error")
	}
	if e.l.held || e.l.unlocks != 1 {
		t.Errorf("lock not released after failed recovery: %+v", e.l)
	}
	if len(e.r.reconciles) != 0 {
		t.Error("reconciled despite an unreadable journal")
	}
}

func TestEnterLockError(t *testing.T) {
	e := newGuardEnv()
	e.l.err = fault.Conflict("busy: pid 1")
	e.j.op = pendingOp(port.Forward)
	if _, _, err := e.g.Enter(context.Background(), "rollback"); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("Enter = %v, want ErrConflict", err)
	}
	if len(e.r.reconciles) != 0 || e.j.op == nil {
		t.Error("recovered without holding the lock")
	}
	if _, err := e.g.Recover(context.Background()); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("Recover = %v, want ErrConflict", err)
	}
}

func TestNestedEnterDoesNotRelock(t *testing.T) {
	e := newGuardEnv()
	ctx, release, err := e.g.Enter(context.Background(), "outer")
	if err != nil {
		t.Fatal(err)
	}
	// A journal appearing now belongs to the outer operation: the nested Enter must not recover it.
	e.j.op = pendingOp(port.Forward)
	ctx2, release2, err := e.g.Enter(ctx, "inner")
	if err != nil {
		t.Fatal(err)
	}
	if e.l.locks != 1 {
		t.Errorf("nested Enter locked again: %d locks", e.l.locks)
	}
	if len(e.r.reconciles) != 0 {
		t.Error("nested Enter ran recovery")
	}
	if ctx2 != ctx {
		t.Error("nested Enter changed the context")
	}
	release2()
	if !e.l.held {
		t.Error("nested release unlocked the outer lock")
	}
	release()
	if e.l.held {
		t.Error("outer release did not unlock")
	}
	// Recover within the held lock does not lock either, and does recover.
	ctx, release, _ = e.g.Enter(context.Background(), "outer2")
	defer release()
	e.j.op = pendingOp(port.Backward)
	res, err := e.g.Recover(ctx)
	if err != nil || !res.Recovered || e.l.locks != 2 {
		t.Errorf("Recover inside Enter: %+v, %v, locks %d", res, err, e.l.locks)
	}
}

func TestRecoverFailuresKeepJournal(t *testing.T) {
	cases := map[string]func(e *guardEnv){
		"reconcile fails":  func(e *guardEnv) { e.r.reconcileErr = errors.New("disk full") },
		"finisher fails":   func(e *guardEnv) { e.finErr = errors.New("database locked") },
		"no finisher":      func(e *guardEnv) { e.j.op.Kind = "unknown-kind" },
		"bad direction":    func(e *guardEnv) { e.j.op.Direction = "sideways" },
		"undo fails":       func(e *guardEnv) { e.j.op.Direction = port.Backward; e.r.reconcileErr = errors.New("EPERM") },
		"clear fails":      func(e *guardEnv) { e.j.clearErr = errors.New("EIO") },
		"journal pending?": func(e *guardEnv) { e.j.pendingErr = errors.New("EIO") },
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			e := newGuardEnv()
			e.j.op = pendingOp(port.Forward)
			setup(e)
			if _, _, err := e.g.Enter(context.Background(), "x"); err == nil {
				t.Fatal("Enter succeeded")
			}
			if e.j.op == nil {
				t.Error("journal cleared although recovery did not finish")
			}
			if e.l.held {
				t.Error("lock still held after a failed Enter")
			}
		})
	}
}

func TestRecoverIgnoresCancellation(t *testing.T) {
	e := newGuardEnv()
	e.j.op = pendingOp(port.Forward)
	var finCtxErr error
	e.g.Register("rollback", func(ctx context.Context, _ port.Operation) error {
		finCtxErr = ctx.Err()
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	ctx = kernel.TestLocked(ctx, "held")
	cancel()
	if _, err := e.g.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if finCtxErr != nil {
		t.Errorf("finisher saw a cancelled context: %v", finCtxErr)
	}
}

func TestRecoverIfIdle(t *testing.T) {
	e := newGuardEnv()
	repairs := 0
	e.g.AddRepair(func(context.Context) error { repairs++; return nil })
	e.j.op = pendingOp(port.Forward)
	// A read-only command never acts on a journal, free lock or not: it reports it.
	for _, busy := range []bool{true, false} {
		e.l.busy = busy
		res, err := e.g.RecoverIfIdle(context.Background())
		if err != nil || res.Recovered || res.Pending == nil || e.j.op == nil || len(e.r.reconciles) != 0 || repairs != 0 {
			t.Fatalf("busy=%v: %+v, %v; journal %+v; %d repairs", busy, res, err, e.j.op, repairs)
		}
	}
	if e.l.held {
		t.Fatal("lock left held")
	}
	// Without a journal and with a free lock, the repairs run.
	e.j.op = nil
	res, err := e.g.RecoverIfIdle(context.Background())
	if err != nil || res.Recovered || res.Pending != nil || repairs != 1 || e.l.held {
		t.Fatalf("free lock: %+v, %v; %d repairs; lock %+v", res, err, repairs, e.l)
	}
	e.l.err = errors.New("EBADF")
	if _, err := e.g.RecoverIfIdle(context.Background()); err == nil {
		t.Error("TryLock error ignored")
	}
	e.l.err = nil
	e.j.pendingErr = errors.New("journal unreadable")
	if _, err := e.g.RecoverIfIdle(context.Background()); err == nil {
		t.Error("journal error ignored")
	}
}

// Recovery never destroys work done after the crash: what neither tree holds is recorded as a
// pre_recover checkpoint before the workspace is touched, and the caller hears of it.
func TestRecoveryRecordsWorkDoneAfterTheCrash(t *testing.T) {
	for _, dir := range []port.Direction{port.Forward, port.Backward} {
		e := newGuardEnv()
		e.j.op = pendingOp(dir)
		e.r.unrecorded = []string{"new-work.txt", "a.txt"}
		var events []string
		e.g.RegisterRecorder(func(_ context.Context, note string) (string, error) {
			events = append(events, "record")
			if len(e.r.reconciles) != 0 {
				t.Error("recorded after the workspace was changed")
			}
			if !strings.Contains(note, pendingOp(dir).ID) {
				t.Errorf("note %q does not name the operation", note)
			}
			return "cp-recover", nil
		})
		var heard []RecoverResult
		e.g.OnRecover = func(r RecoverResult) { heard = append(heard, r) }
		_, release, err := e.g.Enter(context.Background(), "gc")
		if err != nil {
			t.Fatal(err)
		}
		release()
		if len(events) != 1 || len(e.r.reconciles) != 1 || e.j.op != nil {
			t.Fatalf("%s: events %v, reconciles %v, journal %+v", dir, events, e.r.reconciles, e.j.op)
		}
		if len(heard) != 1 || heard[0].Recorded != "cp-recover" || len(heard[0].Unrecorded) != 2 {
			t.Fatalf("%s: OnRecover heard %+v", dir, heard)
		}
	}
}

// When the work cannot be recorded, recovery changes nothing and keeps the journal.
func TestRecoveryRefusesWhatItCannotRecord(t *testing.T) {
	cases := map[string]func(e *guardEnv){
		"no recorder": func(e *guardEnv) {},
		"recorder fails": func(e *guardEnv) {
			e.g.RegisterRecorder(func(context.Context, string) (string, error) { return "", errors.New("disk full") })
		},
		"compare fails": func(e *guardEnv) {
			e.r.unrecordedErr = fault.Integrity("tree damaged")
			e.g.RegisterRecorder(func(context.Context, string) (string, error) { return "x", nil })
		},
	}
	for name, arrange := range cases {
		e := newGuardEnv()
		e.j.op = pendingOp(port.Forward)
		e.r.unrecorded = []string{"a", "b", "c", "d"}
		arrange(e)
		_, err := e.g.Recover(context.Background())
		if err == nil || len(e.r.reconciles) != 0 || e.j.op == nil || len(e.fins) != 0 {
			t.Fatalf("%s: err %v, reconciles %v, journal %+v, finishes %d", name, err, e.r.reconciles, e.j.op, len(e.fins))
		}
		if name == "no recorder" && (!errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "a, b, c and 1 more")) {
			t.Fatalf("no recorder: %v", err)
		}
	}
}

func TestRepairsRunAfterRecovery(t *testing.T) {
	e := newGuardEnv()
	e.j.op = pendingOp(port.Forward)
	var order []string
	e.g.Register("rollback", func(context.Context, port.Operation) error {
		order = append(order, "finish")
		return nil
	})
	e.g.AddRepair(func(context.Context) error {
		order = append(order, "repair")
		return nil
	})
	if _, release, err := e.g.Enter(context.Background(), "x"); err != nil {
		t.Fatal(err)
	} else {
		release()
	}
	if !slices.Equal(order, []string{"finish", "repair"}) {
		t.Errorf("order %v", order)
	}
	e.g.AddRepair(func(context.Context) error { return errors.New("repair failed") })
	if _, _, err := e.g.Enter(context.Background(), "x"); err == nil || !strings.Contains(err.Error(), "repair failed") {
		t.Errorf("a failing repair: %v", err)
	}
	if e.l.held {
		t.Error("lock held after failed repair")
	}
}

func runOp() port.Operation {
	op := *pendingOp("")
	op.Counts = port.ChangeCounts{Added: 1}
	return op
}

func TestRunSuccess(t *testing.T) {
	e := newGuardEnv()
	stats, err := e.g.Change(context.Background(), runOp(), nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Written != 1 {
		t.Errorf("stats %+v", stats)
	}
	if len(e.j.writes) != 1 || e.j.writes[0].Direction != port.Forward || e.j.writes[0].Target != dstTree {
		t.Errorf("journal writes %+v, want one Forward", e.j.writes)
	}
	if !slices.Equal(e.r.applies, [][2]tree.Hash{{srcTree, dstTree}}) {
		t.Errorf("applies %v", e.r.applies)
	}
	if len(e.fins) != 1 || e.fins[0].Direction != port.Forward {
		t.Errorf("finisher %+v", e.fins)
	}
	if e.j.op != nil {
		t.Error("journal left behind after success")
	}
	if !slices.Equal(e.hits, []string{"rollback.applied", "rollback.recorded"}) {
		t.Errorf("failpoints %v", e.hits)
	}
}

func TestRunIncompleteUndoTurnsJournalBackward(t *testing.T) {
	e := newGuardEnv()
	e.r.applyErr = &port.IncompleteUndoError{Cause: errors.New("EPERM"), Undo: errors.New("ENOSPC")}
	_, err := e.g.Change(context.Background(), runOp(), nil, nil, false)
	var ie *port.IncompleteUndoError
	if !errors.As(err, &ie) {
		t.Fatalf("run = %v, want the IncompleteUndoError", err)
	}
	if e.j.op == nil || e.j.op.Direction != port.Backward {
		t.Fatalf("journal %+v, want Backward", e.j.op)
	}
	if len(e.j.writes) != 2 || e.j.writes[0].Direction != port.Forward {
		t.Errorf("writes %+v, want Forward then Backward", e.j.writes)
	}
	if len(e.fins) != 0 {
		t.Error("finisher ran after a failed apply")
	}
	if !strings.Contains(err.Error(), "plan recover") || !errors.Is(err, ie.Cause) || !errors.Is(err, ie.Undo) {
		t.Errorf("message or causes lost: %v", err)
	}
	// The next command undoes it.
	if _, release, err := e.g.Enter(context.Background(), "next"); err != nil {
		t.Fatal(err)
	} else {
		release()
	}
	if !slices.Equal(e.r.reconciles, []tree.Hash{srcTree}) || e.j.op != nil {
		t.Errorf("recovery: reconciles %v, journal %+v", e.r.reconciles, e.j.op)
	}
	// A journal that cannot be turned Backward reports both failures.
	e = newGuardEnv()
	e.r.applyErr = &port.IncompleteUndoError{Cause: errors.New("EPERM"), Undo: errors.New("ENOSPC")}
	e.j.writeErr = func(n int, _ port.Operation) error {
		if n == 2 {
			return errors.New("journal EIO")
		}
		return nil
	}
	if _, err := e.g.Change(context.Background(), runOp(), nil, nil, false); err == nil || !strings.Contains(err.Error(), "journal EIO") || !errors.As(err, &ie) {
		t.Errorf("run = %v", err)
	}
}

func TestRunPlainApplyErrorClearsJournal(t *testing.T) {
	e := newGuardEnv()
	boom := errors.New("permission denied")
	e.r.applyErr = boom
	if _, err := e.g.Change(context.Background(), runOp(), nil, nil, false); !errors.Is(err, boom) {
		t.Fatalf("run = %v", err)
	}
	if e.j.op != nil || e.j.clears != 1 {
		t.Errorf("journal %+v, %d clears: want cleared", e.j.op, e.j.clears)
	}
	if len(e.fins) != 0 || len(e.hits) != 0 {
		t.Errorf("finisher %v or failpoints %v after a failed apply", e.fins, e.hits)
	}
	e.j.clearErr = errors.New("EIO")
	if _, err := e.g.Change(context.Background(), runOp(), nil, nil, false); !errors.Is(err, boom) || !strings.Contains(err.Error(), "EIO") {
		t.Errorf("run with failing Clear = %v", err)
	}
}

// The finisher's transaction is the commit point: a failure before it (the finisher itself, or the
// ".applied" failpoint) puts the source back under a Backward journal and reports the error.
func TestRunFailureBeforeCommitUndoes(t *testing.T) {
	for name, setup := range map[string]func(e *guardEnv){
		"finisher fails": func(e *guardEnv) { e.finErr = errors.New("database is locked") },
		"failpoint rollback.applied": func(e *guardEnv) {
			e.g.Failpoint = func(n string) error {
				if n == "rollback.applied" {
					return errors.New("injected")
				}
				return nil
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := newGuardEnv()
			setup(e)
			_, err := e.g.Change(context.Background(), runOp(), nil, nil, false)
			if err == nil {
				t.Fatal("run succeeded")
			}
			var ie *port.IncompleteUndoError
			if errors.As(err, &ie) {
				t.Fatalf("undo reported incomplete: %v", err)
			}
			if len(e.j.writes) != 2 || e.j.writes[0].Direction != port.Forward || e.j.writes[1].Direction != port.Backward {
				t.Errorf("journal writes %+v, want Forward then Backward", e.j.writes)
			}
			if !slices.Equal(e.r.reconciles, []tree.Hash{srcTree}) {
				t.Errorf("undo reconciles %v, want the source", e.r.reconciles)
			}
			if e.j.op != nil {
				t.Errorf("journal %+v left after a completed undo", e.j.op)
			}
		})
	}
	// The undo itself fails: the Backward journal stays for the next command.
	e := newGuardEnv()
	e.finErr = errors.New("database is locked")
	e.r.reconcileErr = errors.New("EPERM")
	_, err := e.g.Change(context.Background(), runOp(), nil, nil, false)
	var ie *port.IncompleteUndoError
	if !errors.As(err, &ie) || !errors.Is(err, e.finErr) {
		t.Fatalf("run = %v, want an IncompleteUndoError carrying the finisher's error", err)
	}
	if e.j.op == nil || e.j.op.Direction != port.Backward {
		t.Fatalf("journal %+v, want Backward", e.j.op)
	}
	e.r.reconcileErr = nil
	if _, release, err := e.g.Enter(context.Background(), "next"); err != nil {
		t.Fatal(err)
	} else {
		release()
	}
	if e.j.op != nil || len(e.fins) != 1 {
		t.Errorf("recovery: journal %+v, finisher calls %d (an undone operation is not finished)", e.j.op, len(e.fins))
	}
	// Turning the journal Backward fails: both errors are reported and nothing is reconciled.
	e = newGuardEnv()
	e.finErr = errors.New("database is locked")
	e.j.writeErr = func(n int, _ port.Operation) error {
		if n == 2 {
			return errors.New("journal EIO")
		}
		return nil
	}
	if _, err := e.g.Change(context.Background(), runOp(), nil, nil, false); !errors.Is(err, e.finErr) || !strings.Contains(err.Error(), "journal EIO") {
		t.Errorf("run = %v", err)
	}
	if len(e.r.reconciles) != 0 {
		t.Error("undid without a Backward journal")
	}
}

// Past the commit point the operation has succeeded: a failure to clear the journal (or the
// ".recorded" failpoint) is harmless, and the next command's recovery finishes idempotently.
func TestRunPastCommitPointSucceeds(t *testing.T) {
	e := newGuardEnv()
	e.g.Failpoint = func(n string) error {
		if n == "rollback.recorded" {
			return errors.New("injected")
		}
		return nil
	}
	if _, err := e.g.Change(context.Background(), runOp(), nil, nil, false); err != nil {
		t.Fatalf("run = %v, want success past the commit point", err)
	}
	if len(e.fins) != 1 || e.j.op == nil || e.j.op.Direction != port.Forward {
		t.Fatalf("finisher calls %d, journal %+v", len(e.fins), e.j.op)
	}
	if _, release, err := e.g.Enter(context.Background(), "next"); err != nil {
		t.Fatal(err)
	} else {
		release()
	}
	if !slices.Equal(e.r.reconciles, []tree.Hash{dstTree}) || e.j.op != nil || len(e.fins) != 2 {
		t.Errorf("recovery: reconciles %v, journal %+v, finisher calls %d", e.r.reconciles, e.j.op, len(e.fins))
	}
	e = newGuardEnv()
	e.j.clearErr = errors.New("EIO")
	if _, err := e.g.Change(context.Background(), runOp(), nil, nil, false); err != nil {
		t.Errorf("a journal that cannot be cleared after the commit point failed the operation: %v", err)
	}
	e = newGuardEnv()
	op := runOp()
	op.Kind = "unregistered"
	if _, err := e.g.Change(context.Background(), op, nil, nil, false); err == nil || !strings.Contains(err.Error(), "no finisher") {
		t.Errorf("unregistered kind: %v", err)
	}
	if e.j.op != nil || !slices.Equal(e.r.reconciles, []tree.Hash{srcTree}) {
		t.Errorf("unregistered kind: journal %+v, reconciles %v; want undone", e.j.op, e.r.reconciles)
	}
}

func TestRunRefusesBadInput(t *testing.T) {
	e := newGuardEnv()
	e.j.writeErr = func(int, port.Operation) error { return errors.New("ENOSPC") }
	if _, err := e.g.Change(context.Background(), runOp(), nil, nil, false); err == nil || !strings.Contains(err.Error(), "ENOSPC") {
		t.Errorf("journal write failure: %v", err)
	}
	if len(e.r.applies) != 0 {
		t.Error("applied without a durable journal")
	}
}
