package application

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

var testSession = Session{Agent: "claude", ID: "s1"}

func callOf(id string) ToolCall {
	return ToolCall{Session: testSession, ID: id, Tool: "Bash", Summary: "Bash: make"}
}

func TestAgentSessionThroughTheService(t *testing.T) {
	e := newUseCaseEnv(t)
	svc := NewAgentService(e.ops)
	ctx := context.Background()
	tr, err := svc.Prompt(ctx, testSession, "build it")
	if err != nil || tr.Turn != 1 || tr.Checkpoint.Type() != checkpoint.TurnStart || tr.Checkpoint.Labels()[LabelTurn] != "1" {
		t.Fatalf("prompt: %+v %v", tr, err)
	}
	br, err := svc.BeforeTool(ctx, callOf("toolu_1"))
	if err != nil || br.Turn != 1 || br.Checkpoint.Type() != checkpoint.PreDecision || br.Repeated {
		t.Fatalf("before: %+v %v", br, err)
	}
	if lb := br.Checkpoint.Labels(); lb[LabelAgent] != "claude" || lb[LabelSession] != "s1" || lb[LabelTool] != "Bash" {
		t.Errorf("labels: %v", lb)
	}
	again, err := svc.BeforeTool(ctx, callOf("toolu_1"))
	if err != nil || !again.Repeated || again.Checkpoint.ID() != br.Checkpoint.ID() || again.Turn != 1 {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	e.setFile("out.bin", "1")
	ar, err := svc.AfterTool(ctx, callOf("toolu_1"), false)
	if err != nil || ar.Status != plan.Succeeded || len(ar.Changed) != 1 || ar.CallID != "toolu_1" || ar.Attempt.Status != plan.Succeeded {
		t.Fatalf("after: %+v %v", ar, err)
	}
	if _, err := svc.AfterTool(ctx, callOf("toolu_1"), false); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("after twice: %v", err)
	}
	if _, err := svc.BeforeTool(ctx, callOf("toolu_2")); err != nil {
		t.Fatal(err)
	}
	e.setFile("half.txt", "x")
	end, err := svc.EndTurn(ctx, testSession)
	if err != nil || end.Turn != 1 || end.Checkpoint.Type() != checkpoint.TurnEnd || len(end.Interrupted) != 1 {
		t.Fatalf("end: %+v %v", end, err)
	}
	if none, err := svc.EndTurn(ctx, testSession); err != nil || none.Checkpoint != nil {
		t.Fatalf("end with nothing open: %+v %v", none, err)
	}
	// A call after the turn ended opens turn 2; a failed call is recorded failed.
	if br, err := svc.BeforeTool(ctx, callOf("toolu_3")); err != nil || br.Turn != 2 {
		t.Fatalf("turn 2: %+v %v", br, err)
	}
	if ar, err := svc.AfterTool(ctx, callOf("toolu_3"), true); err != nil || ar.Status != plan.Failed {
		t.Fatalf("failed call: %+v %v", ar, err)
	}
	vs, err := svc.Sessions(ctx, "")
	if err != nil || len(vs) != 1 || len(vs[0].Turns) != 2 || vs[0].Turns[0].Prompt != "build it" || len(vs[0].Turns[0].Calls) != 2 {
		t.Fatalf("sessions: %+v %v", vs, err)
	}
	if vs[0].Turns[0].Calls[1].Status != plan.Interrupted || len(vs[0].Turns[0].Calls[1].Changed) != 1 {
		t.Errorf("interrupted call: %+v", vs[0].Turns[0].Calls[1])
	}
	id, _, err := svc.RewindTarget(ctx, "claude-s1", 0, "toolu_2")
	if a, _ := mustDecision(t, e, "claude-s1", "toolu_2").Latest(); err != nil || id != a.CheckpointID {
		t.Errorf("rewind target of a call: %s %v", id, err)
	}
	if id, _, err := svc.RewindTarget(ctx, "s1", 2, ""); err != nil || id == "" {
		t.Errorf("rewind target of turn 2: %s %v", id, err)
	}
	// The scoped names reach turns and calls.
	for _, name := range []string{"claude-s1#1^", "claude-s1#1", "claude-s1/toolu_1^", "claude-s1/toolu_1"} {
		if _, err := e.cps.Resolve(ctx, name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, kind := range map[string]error{
		"claude-s1#2": fault.ErrNotFound, "claude-s1#3^": fault.ErrNotFound, "claude-s1/toolu_9^": fault.ErrNotFound,
		"nope#1": fault.ErrNotFound,
	} {
		if _, err := e.cps.Resolve(ctx, name); !errors.Is(err, kind) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func mustDecision(t *testing.T, e *useCaseEnv, planName, id string) *plan.Decision {
	t.Helper()
	p, err := e.plans.ByName(context.Background(), planName)
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Decision(id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDerivedCallsAreNumberedApart(t *testing.T) {
	e := newUseCaseEnv(t)
	svc := NewAgentService(e.ops)
	ctx := context.Background()
	call := ToolCall{Session: Session{Agent: "gemini", ID: "g1"}, ID: "gabc", Tool: "write_file", Summary: "write_file: a", Derived: true}
	if _, err := svc.AfterTool(ctx, call, false); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("after of an unknown session: %v", err)
	}
	var ids []string
	for i := range derivedBatch + 3 { // past one read's batch
		if _, err := svc.BeforeTool(ctx, call); err != nil {
			t.Fatal(err)
		}
		e.setFile("a", strings.Repeat("x", i+1))
		ar, err := svc.AfterTool(ctx, call, false)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ar.CallID)
	}
	if ids[0] != "gabc" || ids[1] != "gabc-2" || ids[len(ids)-1] != "gabc-35" {
		t.Fatalf("ids: %v", ids)
	}
	// Before and after a repeat that is still running: the running one.
	if br, err := svc.BeforeTool(ctx, call); err != nil || br.Repeated {
		t.Fatal(err)
	}
	if br, err := svc.BeforeTool(ctx, call); err != nil || !br.Repeated {
		t.Fatalf("repeat while running: %+v %v", br, err)
	}
	if ar, err := svc.AfterTool(ctx, call, false); err != nil || ar.CallID != "gabc-36" {
		t.Fatalf("after: %+v %v", ar, err)
	}
}

func TestAgentServiceRefusals(t *testing.T) {
	e := newUseCaseEnv(t)
	svc := NewAgentService(e.ops)
	ctx := context.Background()
	for _, c := range []ToolCall{
		{Session: Session{Agent: "Claude", ID: "s"}, ID: "t", Tool: "Bash"},
		{Session: Session{Agent: "claude", ID: "a/b"}, ID: "t", Tool: "Bash"},
		{Session: testSession, ID: "t.1", Tool: "Bash"},
		{Session: testSession, ID: "t", Tool: " "},
	} {
		if _, err := svc.BeforeTool(ctx, c); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("before %+v: %v", c, err)
		}
		if _, err := svc.AfterTool(ctx, c, false); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("after %+v: %v", c, err)
		}
	}
	if _, err := svc.Prompt(ctx, Session{Agent: "x", ID: ""}, "p"); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("prompt: %v", err)
	}
	if _, err := svc.EndTurn(ctx, Session{Agent: "", ID: "s"}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("end: %v", err)
	}
	if _, err := svc.EndTurn(ctx, testSession); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("end of an unknown session: %v", err)
	}
	// A plan of that name that is not the session's record is not written to.
	if _, err := e.ps.Exec(ctx, ExecRequest{ID: "x", Plan: "claude-s1", Command: "true"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.BeforeTool(ctx, callOf("toolu_1")); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("before into a plan that is no session: %v", err)
	}
	if _, err := svc.AfterTool(ctx, callOf("toolu_1"), false); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("after of a call never recorded: %v", err)
	}
	for _, tc := range []struct {
		session string
		n       int
		id      string
		kind    error
	}{
		{"claude-s1", 0, "", fault.ErrInvalid}, {"claude-s1", 1, "x", fault.ErrInvalid}, {"claude-s1", -1, "", fault.ErrInvalid},
		{"nope", 1, "", fault.ErrNotFound},
	} {
		if _, _, err := svc.RewindTarget(ctx, tc.session, tc.n, tc.id); !errors.Is(err, tc.kind) {
			t.Errorf("rewind %+v: %v", tc, err)
		}
	}
	// Checkpoints that cannot be taken fail each event, and nothing is recorded.
	e.snap.err = errors.New("disk gone")
	if _, err := svc.BeforeTool(ctx, ToolCall{Session: Session{Agent: "codex", ID: "c"}, ID: "call_1", Tool: "Bash"}); err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Errorf("before: %v", err)
	}
	if _, err := svc.Prompt(ctx, Session{Agent: "codex", ID: "c"}, "p"); err == nil {
		t.Error("prompt without a checkpoint")
	}
	e.snap.err = nil
	if _, err := svc.BeforeTool(ctx, ToolCall{Session: Session{Agent: "codex", ID: "c"}, ID: "call_1", Tool: "Bash"}); err != nil {
		t.Fatal(err)
	}
	e.snap.err = errors.New("disk gone")
	if _, err := svc.AfterTool(ctx, ToolCall{Session: Session{Agent: "codex", ID: "c"}, ID: "call_1", Tool: "Bash"}, false); err == nil {
		t.Error("after without a snapshot")
	}
	if _, err := svc.EndTurn(ctx, Session{Agent: "codex", ID: "c"}); err == nil {
		t.Error("end without a checkpoint")
	}
	e.snap.err = nil
	e.plans.saveErr = errors.New("db gone")
	if _, err := svc.BeforeTool(ctx, ToolCall{Session: Session{Agent: "codex", ID: "d"}, ID: "call_1", Tool: "Bash"}); err == nil {
		t.Error("before without a database")
	}
	e.plans.saveErr = nil
	e.l.err = fault.Conflict("busy")
	if _, err := svc.Prompt(ctx, testSession, "p"); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("busy: %v", err)
	}
	if _, err := svc.BeforeTool(ctx, callOf("toolu_9")); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("busy: %v", err)
	}
	if _, err := svc.AfterTool(ctx, callOf("toolu_9"), false); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("busy: %v", err)
	}
	if _, err := svc.EndTurn(ctx, testSession); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("busy: %v", err)
	}
}

func TestSessionsLookup(t *testing.T) {
	e := newUseCaseEnv(t)
	svc := NewAgentService(e.ops)
	ctx := context.Background()
	for _, s := range []Session{{Agent: "claude", ID: "same"}, {Agent: "codex", ID: "same"}} {
		if _, err := svc.Prompt(ctx, s, "p"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Sessions(ctx, "same"); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("ambiguous: %v", err)
	}
	if vs, err := svc.Sessions(ctx, "codex-same"); err != nil || len(vs) != 1 {
		t.Errorf("by plan name: %v", err)
	}
	if _, _, err := svc.RewindTarget(ctx, "codex-same", 0, "nope"); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown call: %v", err)
	}
	if _, _, err := svc.RewindTarget(ctx, "codex-same", 3, ""); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown turn: %v", err)
	}
	e.plans.currentErr = errors.New("db gone")
	if _, err := svc.Sessions(ctx, ""); err == nil {
		t.Error("sessions without a database")
	}
	if _, _, ok := SessionOf(mustPlanNamed(t, "adhoc")); ok {
		t.Error("a plain plan is no session")
	}
}

func mustPlanNamed(t *testing.T, name string) *plan.Plan {
	t.Helper()
	p, err := plan.New("p", name, "plan.yaml", true, baseTime)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// After an agent's session, `plan exec` without --plan adds to the plan adhoc, not to the session.
func TestExecAfterASessionGoesToAdhoc(t *testing.T) {
	e := newUseCaseEnv(t)
	svc := NewAgentService(e.ops)
	ctx := context.Background()
	if _, err := svc.BeforeTool(ctx, callOf("toolu_1")); err != nil {
		t.Fatal(err)
	}
	res, err := e.ps.Exec(ctx, ExecRequest{ID: "mine", Command: "true"})
	if err != nil || res.Plan.Name() != AdhocPlan {
		t.Fatalf("exec: %v %v", res.Plan, err)
	}
	if _, err := svc.BeforeTool(ctx, callOf("toolu_2")); err != nil {
		t.Fatal(err)
	}
	if res, err := e.ps.Exec(ctx, ExecRequest{ID: "again", Command: "true"}); err != nil || res.Plan.Name() != AdhocPlan || len(res.Plan.Decisions()) != 2 {
		t.Fatalf("exec into the existing adhoc plan: %v", err)
	}
	if _, _, ok := sessionOf(nil, errors.New("x")); ok {
		t.Error("a failed lookup is no session")
	}
}

// A database that fails mid-way fails the event; nothing is half-recorded in the plan.
func TestAgentServiceDatabaseFailures(t *testing.T) {
	e := newUseCaseEnv(t)
	svc := NewAgentService(e.ops)
	ctx := context.Background()
	if _, err := svc.Prompt(ctx, testSession, "p"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.BeforeTool(ctx, callOf("toolu_1")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("db gone")
	e.plans.byNameErr = boom
	derived := ToolCall{Session: testSession, ID: "gx", Tool: "write_file", Derived: true}
	for name, err := range map[string]error{
		"before":         func() error { _, err := svc.BeforeTool(ctx, callOf("toolu_2")); return err }(),
		"before derived": func() error { _, err := svc.BeforeTool(ctx, derived); return err }(),
		"after":          func() error { _, err := svc.AfterTool(ctx, callOf("toolu_1"), false); return err }(),
		"after derived":  func() error { _, err := svc.AfterTool(ctx, derived, false); return err }(),
		"prompt":         func() error { _, err := svc.Prompt(ctx, testSession, "p"); return err }(),
		"end":            func() error { _, err := svc.EndTurn(ctx, testSession); return err }(),
		"name":           func() error { _, err := e.cps.Resolve(ctx, "claude-s1#1^"); return err }(),
	} {
		if !errors.Is(err, boom) {
			t.Errorf("%s: %v", name, err)
		}
	}
	e.plans.byNameErr = nil
	e.plans.saveErr = boom
	for name, err := range map[string]error{
		"after":  func() error { _, err := svc.AfterTool(ctx, callOf("toolu_1"), false); return err }(),
		"prompt": func() error { _, err := svc.Prompt(ctx, testSession, "p"); return err }(),
		"end":    func() error { _, err := svc.EndTurn(ctx, testSession); return err }(),
		"new":    func() error { _, err := svc.Prompt(ctx, Session{Agent: "codex", ID: "n"}, "p"); return err }(),
	} {
		if !errors.Is(err, boom) {
			t.Errorf("save %s: %v", name, err)
		}
	}
	e.plans.saveErr = nil
	// The pre_decision checkpoint of a running call deleted: its end cannot say what changed.
	if _, err := svc.BeforeTool(ctx, callOf("toolu_3")); err != nil {
		t.Fatal(err)
	}
	d := mustDecision(t, e, "claude-s1", "toolu_3")
	a, _ := d.Latest()
	delete(e.repo.cps, a.CheckpointID)
	if _, err := svc.AfterTool(ctx, callOf("toolu_3"), false); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("after without its checkpoint: %v", err)
	}
	if _, err := svc.BeforeTool(ctx, callOf("toolu_3")); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("repeat without its checkpoint: %v", err)
	}
	// The turn still closes; the call is interrupted, with no list of changes, and so is toolu_1,
	// whose end was never saved.
	if res, err := svc.EndTurn(ctx, testSession); err != nil || !slices.Equal(res.Interrupted, []string{"toolu_1", "toolu_3"}) {
		t.Errorf("end: %+v %v", res, err)
	}
}
