package application

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

// flaky makes decision id fail (exit 1, leaving junk.txt behind) on its first fails attempts and
// succeed after; other decisions write <id>.txt and succeed.
func (e *useCaseEnv) flaky(id string, fails int) {
	n := 0
	e.exec.run = func(c port.Command) {
		if c.DecisionID != id {
			e.setFile(c.DecisionID+".txt", c.Script)
			return
		}
		n++
		if n <= fails {
			e.setFile("junk.txt", "attempt junk")
			e.exec.results[id] = port.ExecResult{ExitCode: 1}
			return
		}
		e.setFile(id+".txt", c.Script)
		e.exec.results[id] = port.ExecResult{}
	}
}

func withDef(ds []plan.Definition, id string, mod func(*plan.Definition)) []plan.Definition {
	for i := range ds {
		if ds[i].ID == id {
			mod(&ds[i])
		}
	}
	return ds
}

func TestRunRetriesFromThePreDecisionCheckpoint(t *testing.T) {
	e := newUseCaseEnv(t)
	e.flaky("b", 1)
	var events []string
	res, err := e.runPlan(t, RunRequest{
		Decisions: withDef(defs("a", "b", "c"), "b", func(d *plan.Definition) { d.Retries = 2 }),
		Events:    func(ev Event) { events = append(events, ev.Kind+" "+ev.DecisionID) },
	})
	if err != nil {
		t.Fatal(err)
	}
	// The failed attempt's junk went with the rollback to b's checkpoint.
	if got := e.livePaths(); got != "a.txt b.txt c.txt" {
		t.Errorf("workspace: %q", got)
	}
	if res.Retried["b"] != 1 || !slices.Equal(res.Ran, []string{"a", "b", "c"}) || len(res.Failed) != 0 {
		t.Errorf("result: retried %v, ran %v, failed %v", res.Retried, res.Ran, res.Failed)
	}
	if !slices.Contains(events, "retry b") {
		t.Errorf("events %q: no retry", events)
	}
	b, _ := res.Plan.Decision("b")
	as := b.Attempts()
	if len(as) != 2 || as[0].Status != plan.Reverted || as[1].Status != plan.Succeeded {
		t.Fatalf("b's attempts: %+v", as)
	}
	// Both attempts start from the same state: the second one's checkpoint records no junk.
	cp, err := e.repo.Get(context.Background(), as[1].CheckpointID)
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := e.store.Flatten(cp.Root()); len(entries) != 1 || entries[0].Path != "a.txt" {
		t.Errorf("the retry's pre_decision checkpoint holds %v", entries)
	}
	if st := decisionStatus(t, e, "c"); st != plan.Succeeded {
		t.Errorf("c is %s", st)
	}
}

func TestRunRetriesExhausted(t *testing.T) {
	e := newUseCaseEnv(t)
	e.flaky("b", 99)
	res, err := e.runPlan(t, RunRequest{Decisions: withDef(defs("a", "b", "c"), "b", func(d *plan.Definition) { d.Retries = 2 })})
	var df *DecisionFailedError
	if !errors.As(err, &df) || df.DecisionID != "b" || *df.ExitCode != 1 {
		t.Fatalf("err = %v", err)
	}
	b, _ := res.Plan.Decision("b")
	if len(b.Attempts()) != 3 || res.Retried["b"] != 2 || b.Status() != plan.Failed {
		t.Errorf("b: %d attempts, retried %d, %s; want 3, 2, failed", len(b.Attempts()), res.Retried["b"], b.Status())
	}
	// stop: the failed attempt's state stays for inspection, and c is skipped.
	if got := e.livePaths(); got != "a.txt junk.txt" {
		t.Errorf("workspace: %q", got)
	}
	if c, _ := res.Plan.Decision("c"); c.Status() != plan.Skipped {
		t.Errorf("c is %s, want skipped", c.Status())
	}
}

func TestRunRetryWhoseRestoreFails(t *testing.T) {
	e := newUseCaseEnv(t)
	e.flaky("b", 1)
	e.r.applyErr = errors.New("disk full")
	_, err := e.runPlan(t, RunRequest{Decisions: withDef(defs("a", "b"), "b", func(d *plan.Definition) { d.Retries = 1 })})
	var df *DecisionFailedError
	if !errors.As(err, &df) || !errors.Is(err, e.r.applyErr) || !strings.Contains(err.Error(), `restore "b"'s pre_decision checkpoint to retry it`) {
		t.Fatalf("err = %v", err)
	}
	if e.j.op != nil || e.l.held {
		t.Error("journal or lock left behind")
	}
	if n := len(e.exec.calls); n != 2 {
		t.Errorf("%d commands ran, want a and b's first attempt", n)
	}
}

func TestRunDoesNotRetryAnInterruption(t *testing.T) {
	e := newUseCaseEnv(t)
	e.exec.results["a"] = port.ExecResult{Interrupted: true}
	res, err := e.runPlan(t, RunRequest{Decisions: withDef(defs("a"), "a", func(d *plan.Definition) { d.Retries = 3 })})
	if !errors.Is(err, context.Canceled) || len(e.exec.calls) != 1 || res.Retried["a"] != 0 {
		t.Errorf("err = %v, %d calls, retried %d", err, len(e.exec.calls), res.Retried["a"])
	}
}

func TestRunRefusesRetriesWithoutCheckpoints(t *testing.T) {
	e := newUseCaseEnv(t)
	for _, mod := range []func(*plan.Definition){
		func(d *plan.Definition) { d.Retries = 1 },
		func(d *plan.Definition) { d.OnFailure = string(RollbackOnFailure) },
	} {
		_, err := e.runPlan(t, RunRequest{Decisions: withDef(defs("a", "b"), "b", mod), NoCheckpoints: true})
		if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), `decision "b"`) {
			t.Errorf("err = %v", err)
		}
	}
	if e.l.locks != 0 || len(e.exec.calls) != 0 {
		t.Error("a refused run locked or ran")
	}
}

// validating makes every decision's command succeed and its validation end with vres (or fail to
// start with verr).
func (e *useCaseEnv) validating(vres port.ExecResult, verr error) {
	e.exec.run = func(c port.Command) {
		if c.Append { // the validation: same decision, appended to its log
			e.exec.results[c.DecisionID] = vres
			return
		}
		e.setFile(c.DecisionID+".txt", c.Script)
		e.exec.results[c.DecisionID] = port.ExecResult{}
		e.exec.startErr[c.DecisionID] = verr // checked before the next call, the validation, runs
	}
}

func TestRunValidation(t *testing.T) {
	validated := func(ds []plan.Definition) []plan.Definition {
		return withDef(ds, "a", func(d *plan.Definition) { d.Validate = "make check" })
	}
	t.Run("passes", func(t *testing.T) {
		e := newUseCaseEnv(t)
		e.validating(port.ExecResult{}, nil)
		if _, err := e.runPlan(t, RunRequest{Decisions: validated(defs("a"))}); err != nil {
			t.Fatal(err)
		}
		v := e.exec.calls[len(e.exec.calls)-1]
		if v.Script != "make check" || !v.Append || v.Banner != "validate: make check" || v.LogPath != e.exec.calls[0].LogPath {
			t.Errorf("validation ran as %+v", v)
		}
	})
	t.Run("fails", func(t *testing.T) {
		e := newUseCaseEnv(t)
		e.validating(port.ExecResult{ExitCode: 3}, nil)
		res, err := e.runPlan(t, RunRequest{Decisions: validated(defs("a", "b"))})
		var df *DecisionFailedError
		if !errors.As(err, &df) || !df.Validation || err.Error() != `decision "a" failed its validation (exit code 3)` {
			t.Fatalf("err = %v", err)
		}
		a, _ := res.Plan.Decision("a")
		if a.Status() != plan.Failed || *latestOf(a).ExitCode != 3 {
			t.Errorf("a: %s, exit %v", a.Status(), latestOf(a).ExitCode)
		}
		if b, _ := res.Plan.Decision("b"); b.Status() != plan.Skipped {
			t.Errorf("b after a's failed validation: %s", b.Status())
		}
	})
	t.Run("times out", func(t *testing.T) {
		e := newUseCaseEnv(t)
		e.validating(port.ExecResult{ExitCode: -1, TimedOut: true}, nil)
		_, err := e.runPlan(t, RunRequest{Decisions: validated(defs("a"))})
		if err == nil || err.Error() != `decision "a" failed its validation (timed out)` {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("cannot start", func(t *testing.T) {
		e := newUseCaseEnv(t)
		e.validating(port.ExecResult{}, errors.New("no shell"))
		_, err := e.runPlan(t, RunRequest{Decisions: validated(defs("a"))})
		if err == nil || err.Error() != `decision "a" failed its validation` {
			t.Errorf("err = %v", err)
		}
		if a, _ := e.plans.byName["p"].Decision("a"); latestOf(a).ExitCode != nil {
			t.Errorf("a failed its validation, which never ran, with exit code %d", *latestOf(a).ExitCode)
		}
		if len(e.warnings) != 1 || !strings.Contains(e.warnings[0], "the validation of decision \"a\" could not start: no shell") {
			t.Errorf("warnings %q", e.warnings)
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		e := newUseCaseEnv(t)
		e.validating(port.ExecResult{Interrupted: true}, nil)
		res, err := e.runPlan(t, RunRequest{Decisions: validated(defs("a"))})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v", err)
		}
		if a, _ := res.Plan.Decision("a"); a.Status() != plan.Interrupted || latestOf(a).ExitCode != nil {
			t.Errorf("a: %s, exit %v", a.Status(), latestOf(a).ExitCode)
		}
	})
	t.Run("not run after a failure", func(t *testing.T) {
		e := newUseCaseEnv(t)
		e.exec.results["a"] = port.ExecResult{ExitCode: 2}
		_, err := e.runPlan(t, RunRequest{Decisions: validated(defs("a"))})
		if err == nil || err.Error() != `decision "a" failed with exit code 2` || len(e.exec.calls) != 1 {
			t.Errorf("err = %v, %d calls", err, len(e.exec.calls))
		}
	})
}

func TestRunContinuesPastAFailureWhenToldTo(t *testing.T) {
	e := newUseCaseEnv(t)
	e.writes()
	e.exec.results["b"] = port.ExecResult{ExitCode: 1}
	res, err := e.runPlan(t, RunRequest{Decisions: withDef(defs("a", "b", "c"), "b", func(d *plan.Definition) { d.OnFailure = string(ContinueOnFailure) })})
	var df *DecisionFailedError
	if !errors.As(err, &df) || df.DecisionID != "b" || !strings.Contains(err.Error(), "1 decision(s) failed and the run went on past them") {
		t.Fatalf("err = %v", err)
	}
	if !slices.Equal(res.Failed, []string{"b"}) || !slices.Equal(res.Ran, []string{"a", "b", "c"}) {
		t.Errorf("failed %v, ran %v", res.Failed, res.Ran)
	}
	if st := decisionStatus(t, e, "c"); st != plan.Succeeded {
		t.Errorf("c is %s: the run should have gone on", st)
	}
	if len(e.warnings) != 1 || !strings.Contains(e.warnings[0], "on_failure continue") {
		t.Errorf("warnings %q", e.warnings)
	}

	// An interruption stops the run whatever the policy says.
	e = newUseCaseEnv(t)
	e.exec.results["a"] = port.ExecResult{Interrupted: true}
	res, err = e.runPlan(t, RunRequest{Decisions: defs("a", "b"), OnFailure: ContinueOnFailure})
	if !errors.Is(err, context.Canceled) || len(res.Failed) != 0 || len(e.exec.calls) != 1 {
		t.Errorf("interrupted with continue: %v, failed %v, %d calls", err, res.Failed, len(e.exec.calls))
	}
}

// A decision's own on_failure wins over the run's.
func TestRunDecisionPolicyOverridesTheRun(t *testing.T) {
	e := newUseCaseEnv(t)
	e.writes()
	e.exec.results["b"] = port.ExecResult{ExitCode: 1}
	res, err := e.runPlan(t, RunRequest{
		Decisions: withDef(defs("a", "b"), "b", func(d *plan.Definition) { d.OnFailure = string(RollbackOnFailure) }),
		OnFailure: StopOnFailure,
	})
	var df *DecisionFailedError
	if !errors.As(err, &df) || res.Rollback == nil || e.livePaths() != "a.txt" {
		t.Errorf("err = %v, rollback %v, workspace %q", err, res.Rollback, e.livePaths())
	}
}

func TestPlansSummaries(t *testing.T) {
	e := newUseCaseEnv(t)
	if ps, err := e.ps.Plans(context.Background()); err != nil || len(ps) != 0 {
		t.Errorf("no plans: %v, %v", ps, err)
	}
	e.writes()
	e.exec.results["b"] = port.ExecResult{ExitCode: 1}
	if _, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b", "c")}); err == nil {
		t.Fatal("b should fail")
	}
	e.clock.t = e.clock.t.Add(3600e9)
	if _, err := e.runPlan(t, RunRequest{Name: "q", Decisions: defs("x")}); err != nil {
		t.Fatal(err)
	}
	ps, err := e.ps.Plans(context.Background())
	if err != nil || len(ps) != 2 {
		t.Fatalf("plans %v, %v", ps, err)
	}
	q, p := ps[0], ps[1]
	if q.Plan.Name() != "q" || !q.Current || q.Decisions[plan.Succeeded] != 1 || q.LastRunAt.IsZero() {
		t.Errorf("q: %+v", q)
	}
	if p.Plan.Name() != "p" || p.Current || p.Decisions[plan.Succeeded] != 1 || p.Decisions[plan.Failed] != 1 || p.Decisions[plan.Skipped] != 1 ||
		!p.LastRunAt.Before(q.LastRunAt) {
		t.Errorf("p: %+v", p)
	}
	e.plans.currentErr = errors.New("db down")
	if _, err := e.ps.Plans(context.Background()); !errors.Is(err, e.plans.currentErr) {
		t.Errorf("list failing: %v", err)
	}
}
