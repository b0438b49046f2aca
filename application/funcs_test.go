package application

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

// funcsRun makes the fake executor call a Go decision's function (as the real one does), each
// writing <decision>.txt, and shell decisions write theirs as e.writes does.
func (e *useCaseEnv) funcsRun() *[]string {
	var called []string
	e.exec.run = func(c port.Command) {
		if c.Func != nil {
			if err := c.Func.RunDecision(context.Background(), "/ws", port.DecisionCall{ID: c.DecisionID, Attempt: c.Attempt}); err != nil {
				panic(err)
			}
			return
		}
		e.setFile(c.DecisionID+".txt", c.Script)
	}
	return &called
}

func (e *useCaseEnv) goFunc(called *[]string, name string) port.Func {
	return func(_ context.Context, dir string, d port.DecisionCall) error {
		*called = append(*called, name+":"+d.ID+"@"+dir)
		e.setFile(d.ID+".txt", name)
		return nil
	}
}

func commandOf(t *testing.T, p *plan.Plan, id string) string {
	t.Helper()
	d, err := p.Decision(id)
	if err != nil {
		t.Fatal(err)
	}
	return d.Definition().Run
}

func TestExecRunsGoFunctions(t *testing.T) {
	e := newUseCaseEnv(t)
	called := e.funcsRun()
	ctx := context.Background()
	if e.ps.Host() != "go-host" {
		t.Errorf("default host %q", e.ps.Host())
	}
	// Passed directly: recorded under the decision's ID.
	res, err := e.ps.Exec(ctx, ExecRequest{ID: "notes", Func: e.goFunc(called, "direct")})
	if err != nil {
		t.Fatal(err)
	}
	if got := commandOf(t, res.Plan, "notes"); got != "go-func:notes@go-host" {
		t.Errorf("command %q", got)
	}
	// Registered by name, run by that name, with a generated ID.
	if err := e.ps.Register("tidy", e.goFunc(called, "registered")); err != nil {
		t.Fatal(err)
	}
	res, err = e.ps.Exec(ctx, ExecRequest{FuncName: "tidy"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ran[0] != "tidy-1" || commandOf(t, res.Plan, "tidy-1") != "go-func:tidy@go-host" {
		t.Errorf("ran %v, command %q", res.Ran, commandOf(t, res.Plan, "tidy-1"))
	}
	if strings.Join(*called, " ") != "direct:notes@/ws registered:tidy-1@/ws" || e.livePaths() != "notes.txt tidy-1.txt" {
		t.Errorf("called %v, workspace %q", *called, e.livePaths())
	}
	d, _ := res.Plan.Decision("tidy-1")
	if a := latestOf(d); a.Status != plan.Succeeded || a.CheckpointID == "" || len(a.Artifacts) != 1 {
		t.Errorf("attempt %+v", a)
	}
}

func TestExecRefusesWhatItCannotRun(t *testing.T) {
	e := newUseCaseEnv(t)
	called := e.funcsRun()
	ctx := context.Background()
	fn := e.goFunc(called, "f")
	for name, c := range map[string]struct {
		req  ExecRequest
		kind error
		msg  string
	}{
		"both":           {ExecRequest{ID: "x", Command: "true", Func: fn}, fault.ErrInvalid, "a command or a Go function, not both"},
		"bad id":         {ExecRequest{ID: "X!", Command: "true"}, fault.ErrInvalid, "must match"},
		"bad func name":  {ExecRequest{ID: "x", FuncName: "Bad Name", Func: fn}, fault.ErrInvalid, "Go function"},
		"not registered": {ExecRequest{ID: "x", FuncName: "missing"}, fault.ErrConflict, `the Go function "missing" of the host program go-host`},
	} {
		if _, err := e.ps.Exec(ctx, c.req); !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if len(*called) != 0 || len(e.repo.cps) != 0 || len(e.exec.calls) != 0 {
		t.Errorf("a refused exec ran something: %v, %d checkpoints", *called, len(e.repo.cps))
	}
	if _, err := e.plans.Current(ctx); err == nil {
		p, _ := e.plans.Current(ctx)
		if _, err := p.Decision("x"); err == nil {
			t.Error("a refused decision was saved")
		}
	}
}

func TestRegisterRefusesBadFunctions(t *testing.T) {
	e := newUseCaseEnv(t)
	fn := port.Func(func(context.Context, string, port.DecisionCall) error { return nil })
	if err := e.ps.Register("Bad", fn); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("bad name: %v", err)
	}
	if err := e.ps.Register("nil", nil); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("nil: %v", err)
	}
	if err := e.ps.Register("f", fn); err != nil {
		t.Fatal(err)
	}
	if err := e.ps.Register("f", fn); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("twice: %v", err)
	}
}

func TestRunCallsGoFunctionsByName(t *testing.T) {
	e := newUseCaseEnv(t)
	called := e.funcsRun()
	e.ops.host = "agent"
	decisions := []plan.Definition{{ID: "a", Run: "make a"}, {ID: "b", Run: "go-func:gen"}, {ID: "c", Run: "go-func:gen@agent"}}
	// Without the function, nothing runs: the run is refused before its first decision.
	if _, err := e.runPlan(t, RunRequest{Decisions: decisions}); !errors.Is(err, fault.ErrConflict) ||
		!strings.Contains(err.Error(), `decision "b" is the Go function "gen" of the host program agent`) {
		t.Fatalf("err = %v", err)
	}
	if len(e.exec.calls) != 0 || len(e.repo.cps) != 0 {
		t.Fatal("a refused run ran something")
	}
	res, err := e.runPlan(t, RunRequest{Decisions: decisions, Funcs: map[string]port.DecisionFunc{"gen": e.goFunc(called, "gen")}})
	if err != nil {
		t.Fatal(err)
	}
	if commandOf(t, res.Plan, "b") != "go-func:gen@agent" || strings.Join(*called, " ") != "gen:b@/ws gen:c@/ws" || e.livePaths() != "a.txt b.txt c.txt" {
		t.Errorf("command %q, called %v, workspace %q", commandOf(t, res.Plan, "b"), *called, e.livePaths())
	}
}

func TestHostFuncsCompletesTheShortFormOnly(t *testing.T) {
	o := &Operations{host: "h"}
	in := []plan.Definition{{ID: "a", Run: "make"}}
	if got := o.hostFuncs(in); &got[0] != &in[0] {
		t.Error("definitions without the short form were copied")
	}
	in = []plan.Definition{{ID: "a", Run: "go-func:f"}, {ID: "b", Run: "go-func:g@other"}}
	got := o.hostFuncs(in)
	if got[0].Run != "go-func:f@h" || got[1].Run != "go-func:g@other" || in[0].Run != "go-func:f" {
		t.Errorf("got %+v, input now %+v", got, in)
	}
}

// A correction from a program without the Go functions it would re-execute (the CLI) is refused
// before anything changes, naming the host; replacing the decision or not re-executing works, and
// the host that has them re-executes them.
func TestCorrectingGoDecisions(t *testing.T) {
	e := newUseCaseEnv(t)
	called := e.funcsRun()
	ctx := context.Background()
	e.ops.host = "agent"
	for _, id := range []string{"one", "two"} {
		if _, err := e.ps.Exec(ctx, ExecRequest{ID: id, Func: e.goFunc(called, id)}); err != nil {
			t.Fatal(err)
		}
	}
	cps := len(e.repo.cps)
	_, err := e.cs.Correct(ctx, CorrectRequest{DecisionID: "one", Reason: "wrong"})
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), `decision "one" is the Go function "one" of the host program agent`) ||
		!strings.Contains(err.Error(), "only agent can run it") {
		t.Fatalf("err = %v", err)
	}
	// --run replaces "one", but "two" after it is still a Go function.
	if _, err := e.cs.Correct(ctx, CorrectRequest{DecisionID: "one", Reason: "wrong", Run: "make one"}); !errors.Is(err, fault.ErrConflict) ||
		!strings.Contains(err.Error(), `decision "two"`) {
		t.Fatalf("err = %v", err)
	}
	if len(e.repo.cps) != cps || e.livePaths() != "one.txt two.txt" {
		t.Fatal("a refused correction changed something")
	}
	// Replacing the last one with a shell command re-executes it.
	res, err := e.cs.Correct(ctx, CorrectRequest{DecisionID: "two", Reason: "wrong", Run: "make two"})
	if err != nil || strings.Join(res.Reexecuted, ",") != "two" {
		t.Fatalf("correct --run: %+v %v", res, err)
	}
	// The host that has the functions re-executes them.
	*called = nil
	res, err = e.cs.Correct(ctx, CorrectRequest{DecisionID: "one", Reason: "again", Funcs: map[string]port.DecisionFunc{"one": e.goFunc(called, "one")}})
	if err != nil || strings.Join(res.Reexecuted, ",") != "one,two" || strings.Join(*called, " ") != "one:one@/ws" {
		t.Fatalf("re-execution: %+v %v, called %v", res, err, *called)
	}
	// Reverting only is always possible; re-executing a reverted correction later is refused
	// without the function, and leaves it reverted.
	rv, err := e.cs.Correct(ctx, CorrectRequest{DecisionID: "one", Reason: "only revert", NoReexecute: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.cs.ApplyCorrection(ctx, rv.Correction.ID(), CorrectRequest{}); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("apply without the function: %v", err)
	}
	c, _ := e.cs.Show(ctx, rv.Correction.ID())
	if c.Status() != rv.Correction.Status() {
		t.Errorf("a refused re-execution moved the correction to %s", c.Status())
	}
}

// execute refuses a Go decision it has no function for before its checkpoint.
func TestExecuteRefusesAMissingFunctionBeforeItsCheckpoint(t *testing.T) {
	e := newUseCaseEnv(t)
	p, err := plan.New("p1", "p", "", true, baseTime)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(plan.Definition{ID: "f", Run: "go-func:f@elsewhere"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ops.execute(context.Background(), p, "f", nil, nil, nil, nil); !errors.Is(err, fault.ErrConflict) || len(e.repo.cps) != 0 {
		t.Errorf("err = %v, %d checkpoints", err, len(e.repo.cps))
	}
	if _, err := e.ops.execute(context.Background(), p, "nope", nil, nil, nil, nil); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown decision: %v", err)
	}
	if err := e.ops.funcsReady(p, []string{"nope"}, nil); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("funcsReady of an unknown decision: %v", err)
	}
}

func TestGenerateDecisionID(t *testing.T) {
	p, err := plan.New("p1", "p", "", true, baseTime)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"make-1", "make-3"} {
		if _, err := p.Append(plan.Definition{ID: id, Run: "make"}); err != nil {
			t.Fatal(err)
		}
	}
	for run, want := range map[string]string{
		"make test":                              "make-2",
		"./scripts/gen.sh --all":                 "gen-sh-1",
		"FOO=1 BAR=2 go test ./...":              "go-1",
		"'/usr/bin/Python3' x.py":                "python3-1",
		"":                                       "exec-1",
		"!!! ???":                                "exec-1",
		"go-func:notes@host":                     "notes-1",
		"averyveryverylongprogramnamethatgoeson": "averyveryverylongprogram-1",
		"a--b__c":                                "a-b-c-1",
	} {
		got := GenerateDecisionID(p, run)
		if got != want {
			t.Errorf("%q: %q, want %q", run, got, want)
		}
		if err := plan.ValidateDecisionID(got); err != nil {
			t.Errorf("%q: %v", run, err)
		}
	}
}

func TestCorrectionReportsAPlanItCannotRead(t *testing.T) {
	e := newUseCaseEnv(t)
	ranABC(t, e)
	boom := errors.New("plans unreadable")
	e.plans.byNameErr = boom
	if _, err := e.cs.Correct(context.Background(), CorrectRequest{DecisionID: "a", Reason: "r", Plan: "p"}); !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
}

// A function passed without an ID or a name is named after the ID generated for it, so two such
// functions never share a name.
func TestAnonymousGoFunctionsGetTheirOwnNames(t *testing.T) {
	e := newUseCaseEnv(t)
	called := e.funcsRun()
	for range 2 {
		if _, err := e.ps.Exec(context.Background(), ExecRequest{Func: e.goFunc(called, "anon")}); err != nil {
			t.Fatal(err)
		}
	}
	p, err := e.plans.Current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if commandOf(t, p, "func-1") != "go-func:func-1@go-host" || commandOf(t, p, "func-2") != "go-func:func-2@go-host" {
		t.Errorf("commands %q %q", commandOf(t, p, "func-1"), commandOf(t, p, "func-2"))
	}
}
