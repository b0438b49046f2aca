package application

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/plan/plantest"
	"github.com/planhq/plan/domain/tree"
)

func TestParseOnFailure(t *testing.T) {
	for _, s := range []string{"stop", "rollback", "continue"} {
		if got, err := ParseOnFailure(s); err != nil || string(got) != s {
			t.Errorf("ParseOnFailure(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "Stop", "ROLLBACK", "never", "stop "} {
		_, err := ParseOnFailure(s)
		if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "--on-failure must be stop, rollback or continue") {
			t.Errorf("ParseOnFailure(%q): %v", s, err)
		}
	}
}

func TestDecisionFailedErrorMessages(t *testing.T) {
	code := 3
	cases := []struct {
		err  DecisionFailedError
		want string
	}{
		{DecisionFailedError{DecisionID: "d", Status: plan.Failed, ExitCode: &code}, `decision "d" failed with exit code 3`},
		{DecisionFailedError{DecisionID: "d", Status: plan.Failed, ExitCode: &code, TimedOut: true}, `decision "d" timed out`},
		{DecisionFailedError{DecisionID: "d", Status: plan.Failed}, `decision "d" failed`},
		{DecisionFailedError{DecisionID: "d", Status: plan.Interrupted}, `decision "d" interrupted`},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.err, got, c.want)
		}
		// A decision that ran and failed carries no fault kind: it is not the user's input.
		if fault.Kind(&c.err) != nil {
			t.Errorf("%+v has a fault kind", c.err)
		}
	}
}

func TestRunAndResume(t *testing.T) {
	e := newUseCaseEnv(t)
	e.writes()
	var events []string
	req := RunRequest{Decisions: defs("a", "b"), Events: func(ev Event) { events = append(events, ev.Kind+" "+ev.DecisionID) }}
	res, err := e.runPlan(t, req)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Ran, []string{"a", "b"}) || len(res.Skipped) != 0 || res.Rollback != nil {
		t.Fatalf("first run: %+v", res)
	}
	for _, id := range []string{"a", "b"} {
		d, _ := res.Plan.Decision(id)
		a := latestOf(d)
		if d.Status() != plan.Succeeded || a.CheckpointID == "" || a.ResultTree.IsZero() || len(a.Artifacts) != 1 || a.Artifacts[0].Path != id+".txt" {
			t.Errorf("decision %s: status %s, attempt %+v", id, d.Status(), a)
		}
		cp, err := e.repo.Get(context.Background(), a.CheckpointID)
		if err != nil || cp.Type() != checkpoint.PreDecision || cp.DecisionID() != id {
			t.Errorf("pre_decision checkpoint of %s: %v %v", id, cp, err)
		}
	}
	if want := []string{"start a", "finish a", "start b", "finish b"}; !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
	if e.exec.calls[0].Token != AttemptToken(res.Plan, "a", 1) || e.exec.calls[1].LogPath != "logs/plans/p/b.1.log" {
		t.Errorf("commands %+v", e.exec.calls)
	}

	events = nil
	res, err = e.runPlan(t, req)
	if err != nil || len(res.Ran) != 0 || !slices.Equal(res.Skipped, []string{"a", "b"}) {
		t.Fatalf("second run: %+v %v", res, err)
	}
	if want := []string{"skip a", "skip b"}; !slices.Equal(events, want) {
		t.Errorf("events %q, want %q", events, want)
	}
	if len(e.exec.calls) != 2 {
		t.Errorf("the resumed run executed %d more commands", len(e.exec.calls)-2)
	}
}

func TestRunFailureStopsAndSkipsTheRest(t *testing.T) {
	e := newUseCaseEnv(t)
	e.writes()
	e.exec.results["b"] = port.ExecResult{ExitCode: 2}
	res, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b", "c")})
	var df *DecisionFailedError
	if !errors.As(err, &df) || df.DecisionID != "b" || *df.ExitCode != 2 || df.TimedOut {
		t.Fatalf("err = %v", err)
	}
	if !slices.Equal(res.Ran, []string{"a", "b"}) {
		t.Errorf("ran %q", res.Ran)
	}
	c, _ := res.Plan.Decision("c")
	if c.Status() != plan.Skipped {
		t.Errorf("c is %s, want skipped", c.Status())
	}
	// The failed attempt still records what it changed.
	b, _ := res.Plan.Decision("b")
	if b.Status() != plan.Failed || len(latestOf(b).Artifacts) != 1 {
		t.Errorf("b: %s %+v", b.Status(), latestOf(b))
	}
	if e.l.held {
		t.Error("the lock is still held")
	}
}

func TestRunTimeoutAndInterrupt(t *testing.T) {
	e := newUseCaseEnv(t)
	e.exec.results["a"] = port.ExecResult{ExitCode: -1, TimedOut: true}
	_, err := e.runPlan(t, RunRequest{Decisions: defs("a")})
	var df *DecisionFailedError
	if !errors.As(err, &df) || !df.TimedOut || err.Error() != `decision "a" timed out` {
		t.Fatalf("timeout: %v", err)
	}

	e = newUseCaseEnv(t)
	e.exec.results["a"] = port.ExecResult{Interrupted: true}
	res, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b")})
	if !errors.As(err, &df) || !errors.Is(err, context.Canceled) || df.Status != plan.Interrupted || df.ExitCode != nil {
		t.Fatalf("interrupt: %v", err)
	}
	a, _ := res.Plan.Decision("a")
	if a.Status() != plan.Interrupted || latestOf(a).ExitCode != nil {
		t.Errorf("a: %s, exit %v", a.Status(), latestOf(a).ExitCode)
	}
}

func TestRunRollbackOnFailure(t *testing.T) {
	e := newUseCaseEnv(t)
	e.writes()
	e.exec.results["b"] = port.ExecResult{ExitCode: 1}
	res, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b"), OnFailure: RollbackOnFailure})
	var df *DecisionFailedError
	if !errors.As(err, &df) || df.DecisionID != "b" {
		t.Fatalf("err = %v", err)
	}
	if res.Rollback == nil || res.Rollback.Counts.Deleted != 1 || !slices.Equal(res.Rollback.RevertedDecisions, []string{"b"}) {
		t.Fatalf("rollback %+v", res.Rollback)
	}
	if got := e.livePaths(); got != "a.txt" {
		t.Errorf("workspace after the rollback: %q, want only a.txt", got)
	}
	b, _ := res.Plan.Decision("b")
	if b.Status() != plan.Reverted {
		t.Errorf("b is %s, want reverted", b.Status())
	}

	// The failed decision's checkpoint disappeared while it ran: nothing to roll back to.
	e = newUseCaseEnv(t)
	e.exec.results["a"] = port.ExecResult{ExitCode: 1}
	e.exec.run = func(port.Command) {
		for id, cp := range e.repo.cps {
			if cp.Type() == checkpoint.PreDecision {
				delete(e.repo.cps, id)
			}
		}
	}
	_, err = e.runPlan(t, RunRequest{Decisions: defs("a"), OnFailure: RollbackOnFailure})
	if !errors.As(err, &df) || !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "roll back after the failure") {
		t.Fatalf("checkpoint gone: %v", err)
	}

	// A rollback that fails is reported together with the failure.
	e = newUseCaseEnv(t)
	e.writes()
	e.exec.results["a"] = port.ExecResult{ExitCode: 1}
	e.r.applyErr = errors.New("disk full")
	_, err = e.runPlan(t, RunRequest{Decisions: defs("a"), OnFailure: RollbackOnFailure})
	if !errors.As(err, &df) || !errors.Is(err, e.r.applyErr) || !strings.Contains(err.Error(), "roll back after the failure") {
		t.Fatalf("failed rollback: %v", err)
	}
}

func TestRunRefusals(t *testing.T) {
	e := newUseCaseEnv(t)
	_, err := e.runPlan(t, RunRequest{Decisions: defs("a"), NoCheckpoints: true, OnFailure: RollbackOnFailure})
	if !errors.Is(err, ErrRollbackNeedsCheckpoints) || e.l.locks != 0 {
		t.Errorf("rollback without checkpoints: %v (locks %d)", err, e.l.locks)
	}
	if _, err := e.ps.Run(context.Background(), RunRequest{Name: " ", Decisions: defs("a")}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("blank name: %v", err)
	}
	if _, err := e.runPlan(t, RunRequest{Decisions: defs("a", "a")}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("duplicate decision: %v", err)
	}
	boom := errors.New("db down")
	e.plans.byNameErr = boom
	if _, err := e.runPlan(t, RunRequest{Decisions: defs("a")}); !errors.Is(err, boom) {
		t.Errorf("lookup failing: %v", err)
	}
	e.plans.byNameErr = nil
	e.plans.saveErr = boom
	if _, err := e.runPlan(t, RunRequest{Decisions: defs("a")}); !errors.Is(err, boom) {
		t.Errorf("save failing: %v", err)
	}
	if len(e.exec.calls) != 0 || e.l.held {
		t.Errorf("refused runs executed %d commands; lock held %v", len(e.exec.calls), e.l.held)
	}
	e.plans.saveErr = nil
	e.l.err = fault.Conflict("busy")
	if _, err := e.runPlan(t, RunRequest{Decisions: defs("a")}); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("busy: %v", err)
	}
}

func TestRunSaveFailures(t *testing.T) {
	boom := errors.New("db down")
	// Save #1 defines the plan, #2 records the attempt as running, #3 its outcome.
	for at, what := range map[int]string{2: "start", 3: "finish"} {
		e := newUseCaseEnv(t)
		e.plans.saveErr, e.plans.failSaveAt = boom, at
		if _, err := e.runPlan(t, RunRequest{Decisions: defs("a")}); !errors.Is(err, boom) {
			t.Errorf("save failing at %s: %v", what, err)
		}
	}
	// Saving the skipped decisions after a failure.
	e := newUseCaseEnv(t)
	e.exec.results["a"] = port.ExecResult{ExitCode: 1}
	e.plans.saveErr, e.plans.failSaveAt = boom, 4
	if _, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b")}); !errors.Is(err, boom) {
		t.Errorf("save failing after the failure: %v", err)
	}
}

func TestRunCheckpointAndRecordFailures(t *testing.T) {
	e := newUseCaseEnv(t)
	e.snap.err = errors.New("disk full")
	_, err := e.runPlan(t, RunRequest{Decisions: defs("a")})
	if !errors.Is(err, e.snap.err) || !strings.Contains(err.Error(), `take the pre_decision checkpoint of "a" (the decision did not run)`) {
		t.Fatalf("checkpoint failing: %v", err)
	}
	if len(e.exec.calls) != 0 {
		t.Error("the decision ran without its checkpoint")
	}

	// The decision ran, but what it changed cannot be recorded: the attempt is still closed.
	e = newUseCaseEnv(t)
	boom := errors.New("scan failed")
	e.exec.run = func(port.Command) { e.snap.err = boom }
	res, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b")})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `record what decision "a" changed`) {
		t.Fatalf("record failing: %v", err)
	}
	a, _ := res.Plan.Decision("a")
	if a.Status() != plan.Succeeded || !latestOf(a).ResultTree.IsZero() {
		t.Errorf("a: %s, result %q", a.Status(), latestOf(a).ResultTree)
	}
	plantest.Same(t, e.stored(t, "p"), res.Plan) // the plan returned is the one stored
}

func TestRunWithoutCheckpoints(t *testing.T) {
	e := newUseCaseEnv(t)
	e.writes()
	res, err := e.runPlan(t, RunRequest{Decisions: defs("a"), NoCheckpoints: true})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := res.Plan.Decision("a")
	if res.Plan.Checkpoints() || latestOf(a).CheckpointID != "" || !latestOf(a).ResultTree.IsZero() || len(e.repo.cps) != 0 {
		t.Errorf("checkpoints were taken: %+v, %d in the repository", latestOf(a), len(e.repo.cps))
	}
}

func TestExec(t *testing.T) {
	e := newUseCaseEnv(t)
	e.writes()
	var live bytes.Buffer
	res, err := e.ps.Exec(context.Background(), ExecRequest{ID: "x", Command: "make x", Live: &live})
	if err != nil {
		t.Fatal(err)
	}
	if res.Plan.Name() != AdhocPlan || !slices.Equal(res.Ran, []string{"x"}) || live.String() != "output of x\n" {
		t.Errorf("exec: %+v, live %q", res, live.String())
	}
	d, _ := res.Plan.Decision("x")
	if d.Definition().Name != "x" || d.Status() != plan.Succeeded {
		t.Errorf("x: %+v %s", d.Definition(), d.Status())
	}

	// A decision that already succeeded is refused.
	if _, err := e.ps.Exec(context.Background(), ExecRequest{ID: "x", Command: "again"}); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("exec of a succeeded decision: %v", err)
	}
	if _, err := e.ps.Exec(context.Background(), ExecRequest{ID: "Bad ID", Command: "x"}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("malformed ID: %v", err)
	}

	// A command that cannot start fails the attempt, with a warning and no exit code.
	e.exec.startErr["y"] = errors.New("fork: resource temporarily unavailable")
	res, err = e.ps.Exec(context.Background(), ExecRequest{ID: "y", Name: "Why", Command: "make y", Warn: e.warn})
	var df *DecisionFailedError
	if !errors.As(err, &df) || err.Error() != `decision "y" failed` {
		t.Fatalf("start failure: %v", err)
	}
	y, _ := res.Plan.Decision("y")
	if y.Status() != plan.Failed || latestOf(y).ExitCode != nil || y.Definition().Name != "Why" {
		t.Errorf("y: %s exit %v", y.Status(), latestOf(y).ExitCode)
	}
	if len(e.warnings) != 1 || !strings.Contains(e.warnings[0], `decision "y" could not start: fork`) {
		t.Errorf("warnings %q", e.warnings)
	}

	e.exec.results["z"] = port.ExecResult{Interrupted: true}
	if _, err := e.ps.Exec(context.Background(), ExecRequest{ID: "z", Command: "make z"}); !errors.As(err, &df) || !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted exec: %v", err)
	}
	e.exec.results["t"] = port.ExecResult{ExitCode: -1, TimedOut: true}
	if _, err := e.ps.Exec(context.Background(), ExecRequest{ID: "t", Command: "make t"}); err == nil || err.Error() != `decision "t" timed out` {
		t.Errorf("timed out exec: %v", err)
	}

	// Exec adds to the ad-hoc plan, whichever plan ran last, and never to a plan file's plan.
	e2 := newUseCaseEnv(t)
	if _, err := e2.runPlan(t, RunRequest{Name: "site", Source: "site.yaml", Decisions: defs("a")}); err != nil {
		t.Fatal(err)
	}
	res, err = e2.ps.Exec(context.Background(), ExecRequest{ID: "b", Command: "make b"})
	if err != nil || res.Plan.Name() != AdhocPlan || len(res.Plan.Decisions()) != 1 || len(e2.stored(t, "site").Decisions()) != 1 {
		t.Errorf("exec after a plan file's run: %+v %v", res, err)
	}
	calls := len(e2.exec.calls)
	_, err = e2.ps.Exec(context.Background(), ExecRequest{ID: "c", Command: "make c", Plan: "site"})
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "runs from its plan file site.yaml") || len(e2.exec.calls) != calls {
		t.Errorf("exec into a plan file's plan: %v", err)
	}
	if res, err = e2.ps.Exec(context.Background(), ExecRequest{ID: "c", Command: "make c", Plan: "mine"}); err != nil || res.Plan.Name() != "mine" {
		t.Errorf("exec into an ad-hoc plan of its own: %+v %v", res, err)
	}
}

func TestExecErrors(t *testing.T) {
	boom := errors.New("db down")
	e := newUseCaseEnv(t)
	e.plans.byNameErr = boom
	if _, err := e.ps.Exec(underLock(), ExecRequest{ID: "x", Command: "x"}); !errors.Is(err, boom) {
		t.Errorf("plans failing: %v", err)
	}
	e.plans.byNameErr = nil
	e.plans.saveErr = boom
	if _, err := e.ps.Exec(context.Background(), ExecRequest{ID: "x", Command: "x"}); !errors.Is(err, boom) {
		t.Errorf("save failing: %v", err)
	}
	e.plans.saveErr = nil
	e.snap.err = errors.New("disk full")
	if _, err := e.ps.Exec(context.Background(), ExecRequest{ID: "x", Command: "x"}); !errors.Is(err, e.snap.err) {
		t.Errorf("checkpoint failing: %v", err)
	}
	e.l.err = fault.Conflict("busy")
	if _, err := e.ps.Exec(context.Background(), ExecRequest{ID: "x", Command: "x"}); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("busy: %v", err)
	}
	if len(e.exec.calls) != 0 {
		t.Errorf("%d commands ran", len(e.exec.calls))
	}
}

func readAll(t *testing.T, rc io.ReadCloser) string {
	t.Helper()
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStatusAndLog(t *testing.T) {
	e := newUseCaseEnv(t)
	ctx := context.Background()
	if _, err := e.ps.Status(ctx); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "plan run FILE") {
		t.Errorf("status without a plan: %v", err)
	}
	if _, _, err := e.ps.Log(ctx, "a", 0); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("log without a plan: %v", err)
	}

	e.exec.results["a"] = port.ExecResult{ExitCode: 1}
	_, _ = e.runPlan(t, RunRequest{Decisions: defs("a", "b")})
	delete(e.exec.results, "a")
	if _, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b")}); err != nil {
		t.Fatal(err)
	}
	e.exec.logs["logs/plans/p/a.1.log"] = "first try\n"
	e.exec.logs["logs/plans/p/a.2.log"] = "second try\n"

	rc, a, err := e.ps.Log(ctx, "a", 0)
	if err != nil || a.Number != 2 || readAll(t, rc) != "second try\n" {
		t.Errorf("latest log: %+v %v", a, err)
	}
	rc, a, err = e.ps.Log(ctx, "a", 1)
	if err != nil || a.Number != 1 || a.Status != plan.Failed || readAll(t, rc) != "first try\n" {
		t.Errorf("attempt 1: %+v %v", a, err)
	}
	if _, _, err := e.ps.Log(ctx, "a", 3); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), `decision "a" has 2 attempts, not 3`) {
		t.Errorf("attempt 3 of 2: %v", err)
	}
	if _, _, err := e.ps.Log(ctx, "nope", 0); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown decision: %v", err)
	}
	e.exec.openErr = errors.New("permission denied")
	if _, _, err := e.ps.Log(ctx, "a", 0); !errors.Is(err, e.exec.openErr) {
		t.Errorf("log unreadable: %v", err)
	}

	// A decision that never ran, and an attempt recorded without a log.
	p := plan.Rehydrate("p2", "q", "", true, baseTime, []plan.DecisionState{
		{Def: plan.Definition{ID: "idle", Run: "x"}},
		{Def: plan.Definition{ID: "old", Run: "x"}, Attempts: []*plan.Attempt{{Number: 1, Status: plan.Succeeded, LogPath: " "}}},
	})
	if err := e.plans.Save(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.ps.Log(ctx, "idle", 0); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "has not run yet") {
		t.Errorf("a decision that never ran: %v", err)
	}
	if _, a, err := e.ps.Log(ctx, "old", 0); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "has no log") || a.Number == 0 {
		t.Errorf("an attempt without a log: %v", err)
	}
	e.plans.currentErr = errors.New("db down")
	if _, err := e.ps.Status(ctx); !errors.Is(err, e.plans.currentErr) {
		t.Errorf("status with the database failing: %v", err)
	}
}

// runningPlan saves a plan whose decision "a" is running (a killed run), with its pre_decision
// checkpoint of the workspace before it, and changes the workspace as the decision did.
func runningPlan(t *testing.T, e *useCaseEnv) (*plan.Plan, *checkpoint.Checkpoint) {
	t.Helper()
	ctx := context.Background()
	e.setFile("before.txt", "before")
	pre, err := e.cps.Create(ctx, CreateRequest{Type: checkpoint.PreDecision, DecisionID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New("p1", "p", "", true, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Define(defs("a", "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Start("a", pre.ID(), "logs/a.1.log", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := e.plans.Save(ctx, p); err != nil {
		t.Fatal(err)
	}
	e.setFile("half.txt", "written by the killed decision")
	return p, pre
}

func TestCloseStaleAttempts(t *testing.T) {
	e := newUseCaseEnv(t)
	p, _ := runningPlan(t, e)
	cleans := e.archiver.cleans
	res, err := e.g.Recover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Recovered {
		t.Error("no journal, yet recovery says it recovered")
	}
	if !slices.Equal(e.exec.reaped, []string{AttemptToken(p, "a", 1)}) {
		t.Errorf("reaped %q", e.exec.reaped)
	}
	a, _ := e.stored(t, p.Name()).Decision("a")
	at := latestOf(a)
	if at.Status != plan.Interrupted || at.ExitCode != nil || at.ResultTree.IsZero() || len(at.Artifacts) != 1 || at.Artifacts[0].Path != "half.txt" {
		t.Errorf("closed attempt %+v", at)
	}
	if e.archiver.cleans != cleans+1 {
		t.Errorf("staged archives cleaned %d times during recovery", e.archiver.cleans-cleans)
	}
	// Nothing running any more: the next recovery changes nothing.
	saves := e.plans.saves
	if _, err := e.g.Recover(context.Background()); err != nil || e.plans.saves != saves || len(e.exec.reaped) != 1 {
		t.Errorf("second recovery: %v, %d saves, reaped %q", err, e.plans.saves-saves, e.exec.reaped)
	}
}

func TestCloseStaleAttemptErrors(t *testing.T) {
	// Processes that cannot be stopped: the attempt stays running for the next try.
	e := newUseCaseEnv(t)
	p, _ := runningPlan(t, e)
	e.exec.reapErr = errors.New("operation not permitted")
	if _, err := e.g.Recover(context.Background()); !errors.Is(err, e.exec.reapErr) || !strings.Contains(err.Error(), `stop what interrupted decision "a" left running`) {
		t.Errorf("reap failing: %v", err)
	}
	if p.Running() == nil {
		t.Error("the attempt was closed although its processes may still run")
	}

	// The workspace cannot be scanned.
	e = newUseCaseEnv(t)
	runningPlan(t, e)
	e.snap.err = errors.New("EIO")
	if _, err := e.g.Recover(context.Background()); !errors.Is(err, e.snap.err) || !strings.Contains(err.Error(), `record what interrupted decision "a" changed`) {
		t.Errorf("scan failing: %v", err)
	}

	// The pre_decision checkpoint was deleted: closed, without artifacts.
	e = newUseCaseEnv(t)
	p, pre := runningPlan(t, e)
	delete(e.repo.cps, pre.ID())
	if _, err := e.g.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	a, _ := e.stored(t, p.Name()).Decision("a")
	if a.Status() != plan.Interrupted || !latestOf(a).ResultTree.IsZero() || len(latestOf(a).Artifacts) != 0 {
		t.Errorf("closed without its checkpoint: %+v", latestOf(a))
	}

	// The plan cannot be read.
	e = newUseCaseEnv(t)
	e.plans.currentErr = errors.New("db down")
	if _, err := e.g.Recover(context.Background()); !errors.Is(err, e.plans.currentErr) {
		t.Errorf("plans failing: %v", err)
	}
}

func TestRevertAfter(t *testing.T) {
	e := newUseCaseEnv(t)
	cp := e.checkpointAt(t, baseTime, someRoot, checkpoint.Stats{})
	if ids, err := e.ops.revertAfter(context.Background(), cp, "op", ""); err != nil || ids != nil {
		t.Errorf("no plan: %v %v", ids, err)
	}
	e.plans.currentErr = errors.New("db down")
	if _, err := e.ops.revertAfter(context.Background(), cp, "op", ""); !errors.Is(err, e.plans.currentErr) {
		t.Errorf("plans failing: %v", err)
	}
	e.plans.currentErr = nil
	if _, err := e.runPlan(t, RunRequest{Decisions: defs("a")}); err != nil {
		t.Fatal(err)
	}
	later := e.checkpointAt(t, e.clock.Now().Add(1), someRoot, checkpoint.Stats{})
	saves := e.plans.saves
	if ids, err := e.ops.revertAfter(context.Background(), later, "op", ""); err != nil || ids != nil || e.plans.saves != saves {
		t.Errorf("nothing after the checkpoint: %v %v (%d saves)", ids, err, e.plans.saves-saves)
	}
	if ids, err := e.ops.revertAfter(context.Background(), cp, "op", ""); err != nil || !slices.Equal(ids, []string{"a"}) {
		t.Errorf("revert after the first checkpoint: %v %v", ids, err)
	}
}

func TestCheckpointServiceErrors(t *testing.T) {
	e := newUseCaseEnv(t)
	e.setFile("a", "1")
	cp, err := e.cps.Create(context.Background(), CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("db down")
	e.repo.latestErr = boom
	if _, err := e.cps.Create(context.Background(), CreateRequest{}); !errors.Is(err, boom) {
		t.Errorf("latest failing: %v", err)
	}
	e.repo.latestErr = nil
	e.ops.checkpoints = failingRepo{fakeRepo: e.repo, deleteErr: boom}
	e.rewire()
	if _, err := e.cps.Delete(context.Background(), string(cp.ID()), false); !errors.Is(err, boom) {
		t.Errorf("delete failing: %v", err)
	}
	e.ops.checkpoints = e.repo
	e.rewire()
	e.l.err = fault.Conflict("busy")
	if _, err := e.cps.Create(context.Background(), CreateRequest{}); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("create while busy: %v", err)
	}
	if _, err := e.cps.Delete(context.Background(), string(cp.ID()), false); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("delete while busy: %v", err)
	}
	if _, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(cp.ID())}); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("rollback while busy: %v", err)
	}
	if _, err := e.repo.Get(context.Background(), cp.ID()); err != nil {
		t.Errorf("the checkpoint is gone: %v", err)
	}
}

func TestOpenContentAndEntriesErrors(t *testing.T) {
	e := newUseCaseEnv(t)
	if _, err := e.cps.OpenContent(tree.Entry{Path: "d", Kind: tree.KindDir}, false); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("open a directory: %v", err)
	}
	cp := e.checkpointAt(t, baseTime, tree.Sum([]byte("not stored")), checkpoint.Stats{})
	if _, err := e.cps.Entries(context.Background(), cp); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "read checkpoint "+string(cp.ID())) {
		t.Errorf("entries of a missing tree: %v", err)
	}
	if _, err := e.cps.Diff(context.Background(), string(cp.ID()), "", nil); !errors.Is(err, fault.ErrIntegrity) {
		t.Errorf("diff from a missing tree: %v", err)
	}
	if _, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: string(cp.ID()), DryRun: true}); !errors.Is(err, fault.ErrIntegrity) {
		t.Errorf("rollback preview to a missing tree: %v", err)
	}
}

// Each plan's decisions log under a directory of the plan's own, its name encoded as one safe file
// name, distinct for distinct names. Fix: every plan wrote logs/<decision>.<attempt>.log, so plans
// with a decision of the same ID overwrote each other's output.
func TestAttemptLogIsThePlans(t *testing.T) {
	long := strings.Repeat("x", 200)
	for name, want := range map[string]string{
		"alpha":     "logs/plans/alpha/build.1.log",
		"my_plan-2": "logs/plans/my_plan-2/build.1.log",
		"..":        "logs/plans/%2E%2E/build.1.log",
		"a/b c~":    "logs/plans/a%2Fb%20c%7E/build.1.log",
		".hidden":   "logs/plans/%2Ehidden/build.1.log",
		"été":       "logs/plans/%C3%A9t%C3%A9/build.1.log",
	} {
		if got := attemptLog(name, "build", 1); got != want {
			t.Errorf("attemptLog(%q) = %q, want %q", name, got, want)
		}
	}
	a, b := attemptLog(long, "build", 1), attemptLog(long+"y", "build", 1)
	if a == b || len(strings.Split(a, "/")[2]) != logNameMax || !strings.Contains(a, "~") {
		t.Errorf("long names: %q and %q", a, b)
	}
	if attemptLog("a", "b", 1) == attemptLog("b", "b", 1) {
		t.Error("two plans share a log")
	}
}

// An attempt recorded before logs had a directory per plan keeps its log where it was written:
// plan log reads the path the attempt recorded.
func TestLogOfAnAttemptOfTheOldLayout(t *testing.T) {
	e := newUseCaseEnv(t)
	ctx := context.Background()
	p, err := plan.New("p1", "p", "", false, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Define(defs("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Start("a", "", "logs/a.1.log", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if err := e.plans.Save(ctx, p); err != nil {
		t.Fatal(err)
	}
	e.exec.logs["logs/a.1.log"] = "old layout\n"
	rc, a, err := e.ps.LogOf(ctx, "p", "a", 0)
	if err != nil || a.LogPath != "logs/a.1.log" || readAll(t, rc) != "old layout\n" {
		t.Fatalf("log of the old layout: %+v %v", a, err)
	}
}
