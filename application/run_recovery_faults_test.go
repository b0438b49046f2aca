package application

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/plan"
)

// A retry starts from the decision's pre_decision checkpoint; when the plan cannot be read back
// after that rollback, the run stops with the error instead of retrying on a stale plan.
func TestRunStopsWhenThePlanCannotBeReadBeforeARetry(t *testing.T) {
	e := newUseCaseEnv(t)
	e.flaky("b", 1)
	boom := errors.New("database is locked")
	atStep(e, kindRollback+".recorded", func() { e.plans.byNameErr = boom })
	res, err := e.runPlan(t, RunRequest{Decisions: withDef(defs("a", "b", "c"), "b", func(d *plan.Definition) { d.Retries = 2 })})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if len(res.Retried) != 0 || strings.Contains(e.livePaths(), "c.txt") {
		t.Errorf("the run went on: retried %v, workspace %q", res.Retried, e.livePaths())
	}
}

// A retry whose pre_decision checkpoint cannot be taken does not run, and the run stops with that
// error: the decision is not retried unrecorded.
func TestRunStopsWhenARetryCannotTakeItsCheckpoint(t *testing.T) {
	e := newUseCaseEnv(t)
	e.flaky("b", 1)
	full := errors.New("no space left on device")
	atStep(e, kindRollback+".recorded", func() { e.snap.err = full })
	calls := 0
	res, err := e.runPlan(t, RunRequest{Decisions: withDef(defs("a", "b", "c"), "b", func(d *plan.Definition) { d.Retries = 2 })})
	for _, c := range e.exec.calls {
		if c.DecisionID == "b" {
			calls++
		}
	}
	if !errors.Is(err, full) || !strings.Contains(err.Error(), `take the pre_decision checkpoint of "b" (the decision did not run)`) {
		t.Fatalf("err = %v", err)
	}
	if calls != 1 || res.Retried["b"] != 1 {
		t.Errorf("b ran %d times, retried %v: the retry must not run without its checkpoint", calls, res.Retried)
	}
}

// on_failure rollback rolls the workspace back, then reports the plan as it now is; when that plan
// cannot be read, the error says so rather than returning the stale plan as the result.
func TestRunOnFailureRollbackWhenThePlanCannotBeReadBack(t *testing.T) {
	e := newUseCaseEnv(t)
	e.flaky("b", 5)
	boom := errors.New("database is locked")
	atStep(e, kindRollback+".recorded", func() { e.plans.byNameErr = boom })
	res, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b", "c"), OnFailure: RollbackOnFailure})
	e.plans.byNameErr = nil
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if res.Rollback == nil || e.livePaths() != "a.txt" {
		t.Errorf("the rollback did not happen: %+v, workspace %q", res.Rollback, e.livePaths())
	}
	if st := decisionStatus(t, e, "b"); st != plan.Reverted {
		t.Errorf("b is %s after the rollback", st)
	}
}

// Verify runs under the lock; a lock it cannot take is its error, with nothing read.
func TestVerifyNeedsTheLock(t *testing.T) {
	e := newUseCaseEnv(t)
	if _, err := e.cps.Create(context.Background(), CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	busy := errors.New("another plan holds the lock")
	e.l.err = busy
	if _, err := e.ms.Verify(context.Background(), "", true); !errors.Is(err, busy) {
		t.Fatalf("err = %v", err)
	}
	if len(e.health.checks) != 0 || e.health.scans != 0 {
		t.Errorf("verify read the store without the lock: %d checks, %d scans", len(e.health.checks), e.health.scans)
	}
}

// Stats reports a figure it cannot read as an error, never as zero.
func TestStatsFailsOnWhatItCannotRead(t *testing.T) {
	boom := errors.New("input/output error")
	for name, arrange := range map[string]func(e *useCaseEnv){
		"archive usage": func(e *useCaseEnv) { e.archiver.usageErr = boom },
		"store growth":  func(e *useCaseEnv) { e.health.writtenErr = boom },
	} {
		t.Run(name, func(t *testing.T) {
			e := newUseCaseEnv(t)
			arrange(e)
			st, err := e.ms.Stats(context.Background())
			if !errors.Is(err, boom) || st.Checkpoints != 0 || st.ArchiveBytes != 0 {
				t.Fatalf("Stats = %+v, %v", st, err)
			}
		})
	}
}
