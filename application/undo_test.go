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

// loggedABC runs a, b and c (the run logs each decision as its own entry, as every run does); it
// returns the decisions' entries in run order.
func loggedABC(t *testing.T, e *useCaseEnv, hs *HistoryService) []port.LoggedOperation {
	t.Helper()
	ranABC(t, e)
	logged, err := hs.List(context.Background(), 0, "")
	if err != nil {
		t.Fatal(err)
	}
	var out []port.LoggedOperation
	for _, id := range []string{"a", "b", "c"} {
		i := slices.IndexFunc(logged, func(op port.LoggedOperation) bool {
			return op.Kind == "decision" && slices.Equal(op.Args, []string{id})
		})
		if i < 0 {
			t.Fatalf("decision %s was not logged: %+v", id, logged)
		}
		out = append(out, logged[i])
	}
	return out
}

func wantStatuses(t *testing.T, e *useCaseEnv, want map[string]plan.Status) {
	t.Helper()
	for id, st := range want {
		if got := decisionStatus(t, e, id); got != st {
			t.Errorf("%s is %s, want %s", id, got, st)
		}
	}
}

func TestUndoToRestoresTheStateAfterAnEntry(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	ops := loggedABC(t, e, hs)

	preview, err := hs.Undo(context.Background(), UndoRequest{To: uniquePrefix(log.ops, ops[0].ID), DryRun: true})
	if err != nil || preview.Undone.ID != ops[1].ID || len(preview.All) != 2 || e.livePaths() != "a.txt b.txt c.txt" {
		t.Fatalf("preview: %+v, %v", preview, err)
	}
	res, err := hs.Undo(context.Background(), UndoRequest{To: ops[0].ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.livePaths(); got != "a.txt" {
		t.Errorf("workspace: %q", got)
	}
	wantStatuses(t, e, map[string]plan.Status{"a": plan.Succeeded, "b": plan.Reverted, "c": plan.Reverted})
	if !slices.Equal(res.Operation.Args, []string{"--to", ops[0].ID, ops[1].ID, ops[2].ID}) {
		t.Errorf("undo's args: %v", res.Operation.Args)
	}
	for _, op := range log.ops[1:3] {
		if op.UndoneBy != res.Operation.ID {
			t.Errorf("%s not marked undone: %+v", op.Args, op)
		}
	}
	// Nothing after a is left standing.
	if _, err := hs.Undo(context.Background(), UndoRequest{To: ops[0].ID}); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("again: %v", err)
	}
	// Redo brings b and c back.
	rr, err := hs.Redo(context.Background(), RedoRequest{Warn: e.warn})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.livePaths(); got != "a.txt b.txt c.txt" || len(rr.Redone) != 2 || !slices.Equal(rr.Restored, []string{"b", "c"}) {
		t.Errorf("after redo: %q, %+v", got, rr)
	}
	wantStatuses(t, e, map[string]plan.Status{"b": plan.Succeeded, "c": plan.Succeeded})
	for _, op := range log.ops {
		if op.Kind == "decision" && op.UndoneBy != "" {
			t.Errorf("%v still marked undone", op.Args)
		}
	}
	// The redone decisions stand: a plain undo takes c back again.
	if u, err := hs.Undo(context.Background(), UndoRequest{}); err != nil || u.Undone.ID != ops[2].ID || e.livePaths() != "a.txt b.txt" {
		t.Errorf("undo after redo: %v, %q", err, e.livePaths())
	}
}

func TestUndoStepsPastAPrunedSafetyCheckpoint(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	ops := loggedABC(t, e, hs)
	delete(e.repo.cps, ops[2].UndoCheckpoint)
	res, err := hs.Undo(context.Background(), UndoRequest{Warn: e.warn})
	if err != nil {
		t.Fatal(err)
	}
	if res.Undone.ID != ops[1].ID || len(res.Skipped) != 1 || e.livePaths() != "a.txt" {
		t.Errorf("undone %s, skipped %d, workspace %q", res.Undone.ID, len(res.Skipped), e.livePaths())
	}
	if len(e.warnings) == 0 || !strings.Contains(e.warnings[len(e.warnings)-1], "was deleted") {
		t.Errorf("warnings: %v", e.warnings)
	}
	if !slices.Equal(res.Operation.Args, []string{"decision", ops[1].ID, ops[2].ID}) {
		t.Errorf("args: %v", res.Operation.Args)
	}
	// Every safety checkpoint left gone: refused, nothing changed.
	delete(e.repo.cps, ops[0].UndoCheckpoint)
	if _, err := hs.Redo(context.Background(), RedoRequest{}); err != nil {
		t.Fatal(err)
	}
	delete(e.repo.cps, ops[1].UndoCheckpoint)
	before := e.livePaths()
	if _, err := hs.Undo(context.Background(), UndoRequest{}); !errors.Is(err, fault.ErrConflict) || e.livePaths() != before {
		t.Errorf("every checkpoint gone: %v", err)
	}
	// undo --to across it: the target's checkpoint must be left.
	if _, err := hs.Undo(context.Background(), UndoRequest{To: ops[0].ID}); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "was deleted") {
		t.Errorf("--to with its target gone: %v", err)
	}
}

func TestRedoOfARollbackUndoRevertsItsDecisionsAgain(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	rb, _ := rolledBackToB(t, e, hs)
	if _, err := hs.Undo(context.Background(), UndoRequest{}); err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, e, map[string]plan.Status{"b": plan.Succeeded, "c": plan.Succeeded})
	preview, err := hs.Redo(context.Background(), RedoRequest{DryRun: true})
	if err != nil || preview.Rollback.Counts.Deleted != 2 || e.livePaths() != "a.txt b.txt c.txt" {
		t.Fatalf("dry redo: %+v, %v", preview.Rollback.Counts, err)
	}
	res, err := hs.Redo(context.Background(), RedoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if e.livePaths() != "a.txt" || !slices.Equal(res.Reverted, []string{"b", "c"}) {
		t.Errorf("after redo: %q, reverted %v", e.livePaths(), res.Reverted)
	}
	p, _ := e.plans.Current(context.Background())
	for _, id := range []string{"b", "c"} {
		d, _ := p.Decision(id)
		if a := latestOf(d); a.Status != plan.Reverted || a.RevertedBy != rb.OperationID {
			t.Errorf("%s: %s by %s, want reverted by the rollback", id, a.Status, a.RevertedBy)
		}
	}
	if _, err := hs.Redo(context.Background(), RedoRequest{}); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("second redo: %v", err)
	}
}

func TestRedoRefusesAfterANewOperation(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	loggedABC(t, e, hs)
	if _, err := hs.Undo(context.Background(), UndoRequest{}); err != nil {
		t.Fatal(err)
	}
	// A checkpoint changes nothing, a run whose decisions were all skipped logged none: redo may
	// cross them; a decision may not.
	for _, kind := range []string{"checkpoint", "run"} {
		if _, err := hs.Record(context.Background(), port.LoggedOperation{Kind: kind, Outcome: "ok", StartedAt: e.clock.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := hs.Redo(context.Background(), RedoRequest{DryRun: true}); err != nil {
		t.Fatalf("redo across a checkpoint and an empty run: %v", err)
	}
	if _, err := hs.Record(context.Background(), port.LoggedOperation{ID: "zzz", Kind: "decision", Outcome: "ok", UndoCheckpoint: "x", StartedAt: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	before := e.livePaths()
	_, err := hs.Redo(context.Background(), RedoRequest{})
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "decision zzz ran after it") || e.livePaths() != before {
		t.Errorf("redo after a new decision: %v", err)
	}
	if e.l.held {
		t.Error("the lock was left held")
	}
}

func TestRedoRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		undo port.LoggedOperation
		want string
	}{
		{"no checkpoints", port.LoggedOperation{ID: "u1", Kind: "undo", Args: []string{"decision", "d"}}, "does not name the checkpoint"},
		{"older plan", port.LoggedOperation{ID: "u1", Kind: "undo", Args: []string{"decision", "d"}, Checkpoints: []checkpoint.ID{"a", "b"}}, "older plan"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newUseCaseEnv(t)
			log := &fakeOpLog{ops: []port.LoggedOperation{c.undo}}
			if _, err := NewHistoryService(e.ops, log).Redo(context.Background(), RedoRequest{}); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
	t.Run("its checkpoint pruned", func(t *testing.T) {
		e := newUseCaseEnv(t)
		log := &fakeOpLog{}
		hs := NewHistoryService(e.ops, log)
		loggedABC(t, e, hs)
		u, err := hs.Undo(context.Background(), UndoRequest{})
		if err != nil {
			t.Fatal(err)
		}
		delete(e.repo.cps, u.Rollback.Backup.ID())
		if _, err := hs.Redo(context.Background(), RedoRequest{}); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "was deleted") || e.livePaths() != "a.txt b.txt" {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("failures", func(t *testing.T) {
		e := newUseCaseEnv(t)
		log := &fakeOpLog{}
		hs := NewHistoryService(e.ops, log)
		loggedABC(t, e, hs)
		if _, err := hs.Undo(context.Background(), UndoRequest{}); err != nil {
			t.Fatal(err)
		}
		e.l.err = fault.Conflict("busy")
		if _, err := hs.Redo(context.Background(), RedoRequest{}); !errors.Is(err, fault.ErrConflict) {
			t.Errorf("busy: %v", err)
		}
		e.l.err = nil
		log.listErr = errors.New("db down")
		if _, err := hs.Redo(context.Background(), RedoRequest{}); !errors.Is(err, log.listErr) {
			t.Errorf("log unreadable: %v", err)
		}
		log.listErr = nil
		e.repo.getErr = errors.New("db down")
		if _, err := hs.Redo(context.Background(), RedoRequest{}); !errors.Is(err, e.repo.getErr) {
			t.Errorf("checkpoint lookup: %v", err)
		}
		e.repo.getErr = nil
		e.snap.err = errors.New("disk gone")
		if _, err := hs.Redo(context.Background(), RedoRequest{}); !errors.Is(err, e.snap.err) || !strings.HasPrefix(err.Error(), "redo undo ") {
			t.Errorf("rollback fails: %v", err)
		}
		e.snap.err = nil
		log.markErr = errors.New("db down")
		if _, err := hs.Redo(context.Background(), RedoRequest{}); !errors.Is(err, log.markErr) {
			t.Errorf("mark fails: %v", err)
		}
	})
}

func TestUndoToRefusals(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	ops := loggedABC(t, e, hs)
	if _, err := hs.Undo(context.Background(), UndoRequest{To: "nope"}); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown entry: %v", err)
	}
	// Every ID shares its first characters (time-ordered): a short prefix is ambiguous.
	if _, err := hs.Undo(context.Background(), UndoRequest{To: ops[0].ID[:4]}); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if _, err := hs.Undo(context.Background(), UndoRequest{To: ops[2].ID}); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("nothing after the newest: %v", err)
	}
	// An undo after b took back c, which came after b: fine. One after c that took back a: refused.
	if _, err := hs.Undo(context.Background(), UndoRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := hs.Record(context.Background(), port.LoggedOperation{Kind: "undo", Args: []string{"decision", ops[0].ID}, Outcome: "ok", StartedAt: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := hs.Undo(context.Background(), UndoRequest{To: ops[1].ID}); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "came before it") {
		t.Errorf("undo across an undo of an earlier entry: %v", err)
	}
	log.ops = log.ops[1:]
	if _, err := hs.Record(context.Background(), port.LoggedOperation{Kind: "redo", Args: []string{"undo", "unknown"}, Outcome: "ok", StartedAt: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := hs.Undo(context.Background(), UndoRequest{To: ops[1].ID}); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("a redo whose undo undid nothing known, c undone: %v", err)
	}
	e.repo.getErr = errors.New("db down")
	if _, err := hs.Undo(context.Background(), UndoRequest{To: ops[0].ID}); !errors.Is(err, e.repo.getErr) {
		t.Errorf("checkpoint lookup: %v", err)
	}
	if _, err := hs.Undo(context.Background(), UndoRequest{}); !errors.Is(err, e.repo.getErr) {
		t.Errorf("checkpoint lookup, plain undo: %v", err)
	}
}

func TestUndidAndAfter(t *testing.T) {
	if got := undid(port.LoggedOperation{Args: []string{"x"}}); got != nil {
		t.Errorf("undid of a malformed entry: %v", got)
	}
	a := port.LoggedOperation{ID: "a", FinishedAt: baseTime}
	b := port.LoggedOperation{ID: "b", FinishedAt: baseTime}
	if !after(b, a) || after(a, b) {
		t.Error("ties go by ID")
	}
}

// undo --to across a rollback that reverted decisions from before the target: the rollback's
// reverts are given back, then what started after the target is reverted again by the undo.
func TestUndoToAcrossARollbackOfEarlierDecisions(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	ops := loggedABC(t, e, hs)
	base, err := e.cps.Create(context.Background(), CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_ = base
	p, _ := e.plans.Current(context.Background())
	a, _ := p.Decision("a")
	rb, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(latestOf(a).CheckpointID)})
	if err != nil {
		t.Fatal(err)
	}
	// The rollback logged itself, its safety checkpoint as its undo point.
	if l, err := log.List(context.Background(), 1, ""); err != nil || len(l) != 1 || l[0].ID != rb.OperationID || l[0].UndoCheckpoint != rb.Backup.ID() {
		t.Fatalf("the rollback's entry: %+v, %v", l, err)
	}
	wantStatuses(t, e, map[string]plan.Status{"a": plan.Reverted, "b": plan.Reverted, "c": plan.Reverted})
	res, err := hs.Undo(context.Background(), UndoRequest{To: ops[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.livePaths(); got != "a.txt b.txt" {
		t.Errorf("workspace: %q", got)
	}
	wantStatuses(t, e, map[string]plan.Status{"a": plan.Succeeded, "b": plan.Succeeded, "c": plan.Reverted})
	if !slices.Equal(res.Restored, []string{"a", "b"}) || !slices.Contains(res.Rollback.RevertedDecisions, "c") {
		t.Errorf("restored %v, reverted %v", res.Restored, res.Rollback.RevertedDecisions)
	}
	// Redo: the rollback's reverts come back (a, b and c reverted by it), the workspace as it left it.
	rr, err := hs.Redo(context.Background(), RedoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.livePaths(); got != "" {
		t.Errorf("workspace after redo: %q", got)
	}
	wantStatuses(t, e, map[string]plan.Status{"a": plan.Reverted, "b": plan.Reverted, "c": plan.Reverted})
	if !slices.Contains(rr.Reverted, "a") {
		t.Errorf("re-reverted %v", rr.Reverted)
	}
}

// A redo re-reverts another plan's decisions by their plan/decision name, and fails cleanly when the
// history or the plans cannot be read.
func TestRerevert(t *testing.T) {
	e := newUseCaseEnv(t)
	NewHistoryService(e.ops, &fakeOpLog{})
	ranABC(t, e) // plan p, current
	e.writes()
	if _, err := e.runPlan(t, RunRequest{Name: "q", Decisions: defs("x")}); err != nil {
		t.Fatal(err)
	}
	// q is current now; the record names p's decisions bare (its own plan) and q's qualified.
	e.history.recs["op1"] = port.HistoryRecord{ID: "op1", StartedAt: e.clock.Now(), Reverted: []string{"a", "q/x", "gone/y"}}
	got, err := e.ops.rerevert(context.Background(), stepEntry{ID: "op1", Plan: "p"})
	if err != nil || !slices.Contains(got, "a") || !slices.Contains(got, "q/x") {
		t.Fatalf("%v, %v", got, err)
	}
	// The operation's plan unnamed: the current plan's decisions are the bare ones.
	e.history.recs["op2"] = port.HistoryRecord{ID: "op2", StartedAt: e.clock.Now(), Reverted: []string{"b"}}
	if got, err := e.ops.rerevert(context.Background(), stepEntry{ID: "op2"}); err != nil || len(got) != 0 {
		t.Errorf("b is not q's: %v, %v", got, err)
	}
	// Nothing recorded as reverted, no record at all: nothing to do.
	e.history.recs["op3"] = port.HistoryRecord{ID: "op3"}
	if got, err := e.ops.rerevert(context.Background(), stepEntry{ID: "op3"}); err != nil || got != nil {
		t.Errorf("%v, %v", got, err)
	}
	if got, err := e.ops.rerevert(context.Background(), stepEntry{ID: "none"}); err != nil || got != nil {
		t.Errorf("%v, %v", got, err)
	}
	e.plans.currentErr = errors.New("db down")
	if _, err := e.ops.rerevert(context.Background(), stepEntry{ID: "op1"}); !errors.Is(err, e.plans.currentErr) {
		t.Errorf("plans unreadable: %v", err)
	}
	e2 := newUseCaseEnv(t)
	e2.history.recs["op1"] = port.HistoryRecord{ID: "op1", Reverted: []string{"a"}}
	if got, err := e2.ops.rerevert(context.Background(), stepEntry{ID: "op1"}); err != nil || got != nil {
		t.Errorf("no plan: %v, %v", got, err)
	}
}

func TestUndoAndRedoRecordFailures(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(e *useCaseEnv, log *fakeOpLog) error
	}{
		{"plans unreadable", func(e *useCaseEnv, _ *fakeOpLog) error {
			e.plans.currentErr = errors.New("db down")
			return e.plans.currentErr
		}},
		{"log not written", func(_ *useCaseEnv, log *fakeOpLog) error { log.addErr = errors.New("db down"); return log.addErr }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newUseCaseEnv(t)
			log := &fakeOpLog{}
			hs := NewHistoryService(e.ops, log)
			loggedABC(t, e, hs)
			if _, err := hs.Undo(context.Background(), UndoRequest{}); err != nil {
				t.Fatal(err)
			}
			want := c.set(e, log)
			if _, err := hs.Redo(context.Background(), RedoRequest{}); !errors.Is(err, want) {
				t.Errorf("redo: %v", err)
			}
		})
	}
	t.Run("undo's unrevert fails", func(t *testing.T) {
		e := newUseCaseEnv(t)
		log := &fakeOpLog{}
		hs := NewHistoryService(e.ops, log)
		rolledBackToB(t, e, hs)
		e.plans.saveErr, e.plans.failSaveAt = errors.New("db down"), e.plans.saves+1
		if _, err := hs.Undo(context.Background(), UndoRequest{}); !errors.Is(err, e.plans.saveErr) {
			t.Errorf("undo: %v", err)
		}
	})
	t.Run("redo's re-revert fails", func(t *testing.T) {
		e := newUseCaseEnv(t)
		log := &fakeOpLog{}
		hs := NewHistoryService(e.ops, log)
		rolledBackToB(t, e, hs)
		if _, err := hs.Undo(context.Background(), UndoRequest{}); err != nil {
			t.Fatal(err)
		}
		e.plans.saveErr, e.plans.failSaveAt = errors.New("db down"), e.plans.saves+1
		if _, err := hs.Redo(context.Background(), RedoRequest{}); !errors.Is(err, e.plans.saveErr) {
			t.Errorf("redo: %v", err)
		}
	})
}

// uniquePrefix is the shortest prefix of id no other entry shares.
func uniquePrefix(ops []port.LoggedOperation, id string) string {
	for n := 1; n < len(id); n++ {
		shared := false
		for _, op := range ops {
			if op.ID != id && strings.HasPrefix(op.ID, id[:n]) {
				shared = true
			}
		}
		if !shared {
			return id[:n]
		}
	}
	return id
}

// Found by the hostile suite: after a rollback of decision states only (rewind --state), which
// keeps no safety checkpoint, plan undo went past it and undid the operation before it, files and
// all, while the state rollback stayed. It refuses instead, changing nothing; undo --to, which
// names what to go back to, is unchanged.
func TestUndoRefusesToGoPastAStateOnlyRollback(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	p := ranABC(t, e)
	b, _ := p.Decision("b")
	live := e.livePaths()
	entries := len(log.ops)
	if _, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(latestOf(b).CheckpointID), Mode: RestoreState}); err != nil {
		t.Fatal(err)
	}
	if len(log.ops) != entries+1 || !stateOnly(log.ops[0]) {
		t.Fatalf("the state rollback's log entry: %+v", log.ops[0])
	}
	_, err := hs.Undo(context.Background(), UndoRequest{})
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "decision states only") {
		t.Fatalf("undo past a state rollback: %v", err)
	}
	if e.livePaths() != live || decisionStatus(t, e, "c") != plan.Reverted {
		t.Fatalf("the refused undo changed something: %q, c %s", e.livePaths(), decisionStatus(t, e, "c"))
	}
}
