package application

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

// plansFailingList is the plan repository whose listing of every plan fails (the current plan
// still reads): what the lock's recovery reads works, what the use case reads next does not.
type plansFailingList struct {
	*fakePlans
	err error
}

func (r plansFailingList) List(context.Context) ([]*plan.Plan, error) { return nil, r.err }

// historyFailingGet is the history whose reads fail: an operation is recorded but not read back.
type historyFailingGet struct {
	*fakeHistory
	err error
}

func (h historyFailingGet) Get(context.Context, string) (port.HistoryRecord, error) {
	return port.HistoryRecord{}, h.err
}

// preDecisionOf is the pre_decision checkpoint of decision id's latest attempt.
func preDecisionOf(t *testing.T, p *plan.Plan, id string) checkpoint.ID {
	t.Helper()
	d, err := p.Decision(id)
	if err != nil {
		t.Fatal(err)
	}
	return latestOf(d).CheckpointID
}

// A checkpoint interrupted between storing its snapshot and recording it is not recorded, and the
// failure is counted for `plan stats`.
func TestCreateInterruptedAfterTheSnapshotRecordsNothing(t *testing.T) {
	e := newUseCaseEnv(t)
	killed := errors.New("killed")
	e.g.Failpoint = func(name string) error {
		if name == "checkpoint.stored" {
			return killed
		}
		return nil
	}
	cp, err := e.cps.Create(context.Background(), CreateRequest{Note: "n"})
	if !errors.Is(err, killed) || cp != nil {
		t.Fatalf("Create = %v, %v", cp, err)
	}
	if len(e.repo.cps) != 0 || len(e.metrics.failures) != 1 || e.l.held {
		t.Errorf("%d checkpoints recorded, %d failures counted, lock held %v", len(e.repo.cps), len(e.metrics.failures), e.l.held)
	}
}

// Delete refuses a checkpoint it cannot tell is unprotected: when the plans cannot be read, the
// checkpoint stays, however unneeded it may be. --force, which does not ask, deletes it.
func TestDeleteRefusesWhenProtectionCannotBeChecked(t *testing.T) {
	e := newUseCaseEnv(t)
	cp, err := e.cps.Create(context.Background(), CreateRequest{Note: "unneeded"})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("database is locked")
	e.ops.plans = plansFailingList{fakePlans: e.plans, err: boom}
	e.rewire()
	if _, err := e.cps.Delete(context.Background(), string(cp.ID()), false); !errors.Is(err, boom) {
		t.Fatalf("Delete = %v, want the plans' error", err)
	}
	if _, ok := e.repo.cps[cp.ID()]; !ok {
		t.Fatal("the checkpoint was deleted although its protection could not be checked")
	}
	if _, err := e.cps.Delete(context.Background(), string(cp.ID()), true); err != nil {
		t.Fatalf("Delete --force: %v", err)
	}
	if _, ok := e.repo.cps[cp.ID()]; ok {
		t.Fatal("Delete --force left the checkpoint")
	}
}

// A per-path restore needs the checkpoint's tree: when the store lost it, the preview and the
// restore fail as an integrity problem, naming the checkpoint, and the workspace is not touched.
func TestRestorePathsFromACheckpointWhoseTreeIsLost(t *testing.T) {
	e := newUseCaseEnv(t)
	withTrees(e)
	e.setFile("a.txt", "one")
	cp, err := e.cps.Create(context.Background(), CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	e.setFile("a.txt", "two")
	delete(e.store.trees, cp.Root())
	for _, dry := range []bool{true, false} {
		_, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(cp.ID()), Paths: []string{"a.txt"}, DryRun: dry})
		if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), string(cp.ID())) {
			t.Fatalf("dry=%v: err = %v, want an integrity error naming %s", dry, err, cp.ID())
		}
	}
	if got := e.liveContent(t, "a.txt"); got != "two" || len(e.j.writes) != 0 {
		t.Errorf("a.txt %q, %d journal writes", got, len(e.j.writes))
	}
	if len(e.repo.cps) != 1 {
		t.Errorf("the refused restore left its safety checkpoint: %d checkpoints", len(e.repo.cps))
	}
}

// A per-path restore grafts the paths onto what its safety checkpoint recorded; when that record
// cannot be read back, the restore stops before the journal names it.
func TestRestorePathsStopsWhenTheSafetyCheckpointCannotBeRead(t *testing.T) {
	e := newUseCaseEnv(t)
	withTrees(e)
	e.setFile("a.txt", "one")
	cp, err := e.cps.Create(context.Background(), CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	e.setFile("a.txt", "two")
	lost := fault.Integrity("tree is missing")
	e.snap.onSnapshot = func() { e.store.err = lost }
	_, err = e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(cp.ID()), Paths: []string{"a.txt"}})
	e.store.err = nil
	if !errors.Is(err, lost) {
		t.Fatalf("err = %v", err)
	}
	if got := e.liveContent(t, "a.txt"); got != "two" || len(e.j.writes) != 0 {
		t.Errorf("a.txt %q, %d journal writes", got, len(e.j.writes))
	}
}

// A rollback whose database side fails puts the workspace back as it was and records nothing: the
// rollback's count, the decisions it reverts and its history go in one unit of work, and a
// failure in any of them (reading the plans, saving one) undoes the rollback.
func TestRollbackDatabaseFailuresPutTheWorkspaceBack(t *testing.T) {
	boom := errors.New("database is locked")
	for _, c := range []struct {
		name    string
		arrange func(e *useCaseEnv)
	}{
		{"reading the plans", func(e *useCaseEnv) { e.plans.currentErr = boom }},
		{"saving the plan", func(e *useCaseEnv) { e.plans.saveErr = boom }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newUseCaseEnv(t)
			p := ranABC(t, e)
			atStep(e, kindRollback+".applied", func() { c.arrange(e) })
			_, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(preDecisionOf(t, p, "b"))})
			if !errors.Is(err, boom) || !strings.Contains(err.Error(), "record rollback") {
				t.Fatalf("err = %v", err)
			}
			if got := e.livePaths(); got != "a.txt b.txt c.txt" {
				t.Errorf("workspace after a failed rollback: %q", got)
			}
			if len(e.history.recs) != 0 || e.j.op != nil {
				t.Errorf("history %v, journal %+v", e.history.recs, e.j.op)
			}
		})
	}
}

// A rollback that is recorded but cannot be read back says which one: the workspace was rolled
// back.
func TestRollbackRecordedButNotReadBack(t *testing.T) {
	e := newUseCaseEnv(t)
	p := ranABC(t, e)
	boom := errors.New("database is locked")
	e.ops.history = historyFailingGet{fakeHistory: e.history, err: boom}
	e.rewire()
	_, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(preDecisionOf(t, p, "b"))})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "read back rollback") {
		t.Fatalf("err = %v", err)
	}
	if got := e.livePaths(); got != "a.txt" || len(e.history.recs) != 1 {
		t.Errorf("the rollback does not stand: workspace %q, %d history records", got, len(e.history.recs))
	}
}

// rollback --mode state changes only decision states: when the plans cannot be read, it fails and
// records nothing.
func TestRollbackStateModeFailsWhenThePlansCannotBeRead(t *testing.T) {
	e := newUseCaseEnv(t)
	p := ranABC(t, e)
	boom := errors.New("database is locked")
	e.ops.plans = plansFailingList{fakePlans: e.plans, err: boom}
	e.rewire()
	_, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(preDecisionOf(t, p, "b")), Mode: RestoreState})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if len(e.history.recs) != 0 || decisionStatus(t, e, "b") != plan.Succeeded {
		t.Errorf("history %v, b %s", e.history.recs, decisionStatus(t, e, "b"))
	}
}

// A decision whose changes cannot be worked out after it ran (the store cannot diff its trees) is
// still recorded as finished, never left running; the error says what could not be recorded.
func TestDecisionWhoseChangesCannotBeReadIsStillFinished(t *testing.T) {
	e := newUseCaseEnv(t)
	lost := fault.Integrity("tree is missing")
	e.exec.run = func(c port.Command) {
		e.setFile(c.DecisionID+".txt", c.Script)
		e.store.err = lost
	}
	res, err := e.runPlan(t, RunRequest{Decisions: defs("a")})
	e.store.err = nil
	if !errors.Is(err, lost) || !strings.Contains(err.Error(), `record what decision "a" changed`) {
		t.Fatalf("err = %v", err)
	}
	a, _ := res.Plan.Decision("a")
	if st := latestOf(a).Status; st != plan.Succeeded {
		t.Errorf("a is %s, want its outcome recorded", st)
	}
}

// Undo restores the undone operation's decisions in the same unit of work as its log entry and its
// rollback's record: when they cannot be read, the undo fails whole (its rollback is put back) and
// the operation is not marked undone, so the log does not claim an undo whose decision states were
// never given back.
func TestUndoFailsWhenTheDecisionStatesCannotBeRestored(t *testing.T) {
	e := newUseCaseEnv(t)
	log := &fakeOpLog{}
	hs := NewHistoryService(e.ops, log)
	_, logged := rolledBackToB(t, e, hs)
	boom := errors.New("database is locked")
	// Once the undo's rollback changed the workspace: the failing read is in its commit.
	e.g.Failpoint = func(name string) error {
		if name == kindRollback+".applied" {
			e.plans.currentErr = boom
		}
		return nil
	}
	_, err := hs.Undo(context.Background(), UndoRequest{})
	e.plans.currentErr = nil
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if len(log.ops) != 1 || log.ops[0].ID != logged.ID || log.ops[0].UndoneBy != "" {
		t.Errorf("log after a failed undo: %+v", log.ops)
	}
}
