package plan_test

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func def(id string) plan.Definition { return plan.Definition{ID: id, Run: "echo " + id} }

func code(n int) *int { return &n }

func newPlan(t *testing.T, ids ...string) *plan.Plan {
	t.Helper()
	p, err := plan.New("p1", "site", "plan.yaml", true, t0)
	if err != nil {
		t.Fatal(err)
	}
	defs := make([]plan.Definition, len(ids))
	for i, id := range ids {
		defs[i] = def(id)
	}
	if err := p.Define(defs); err != nil {
		t.Fatal(err)
	}
	return p
}

// latest is d's newest attempt; the test fails when d never ran.
func latest(t *testing.T, d *plan.Decision) plan.Attempt {
	t.Helper()
	a, ok := d.Latest()
	if !ok {
		t.Fatalf("decision %s never ran", d.ID())
	}
	return a
}

// The aggregate hands out copies: changing one changes nothing in the plan.
func TestAttemptsAreCopies(t *testing.T) {
	p := newPlan(t, "a")
	run(t, p, "a", plan.Failed, 0)
	a := latest(t, decision(t, p, "a"))
	*a.ExitCode = 99 // shared memory would show through the next copy
	got := latest(t, decision(t, p, "a"))
	got.Artifacts = append(got.Artifacts, artifact.Artifact{Path: "x"})
	if again := latest(t, decision(t, p, "a")); again.Status != plan.Failed || *again.ExitCode != 0 || len(again.Artifacts) != 0 {
		t.Fatalf("a copy changed the aggregate: %+v", again)
	}
	if d := decision(t, p, "a"); d.Status() != plan.Failed || d.Attempts()[0].Status != plan.Failed {
		t.Fatal("Attempts() exposed the attempt itself")
	}
}

// run starts and finishes one attempt of id with status st.
func run(t *testing.T, p *plan.Plan, id string, st plan.Status, start int) plan.Attempt {
	t.Helper()
	a, err := p.Start(id, checkpoint.ID("cp-"+id), "logs/"+id+".log", at(start))
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	if err := p.Finish(id, plan.Outcome{Status: st, ExitCode: code(0)}, at(start+1)); err != nil {
		t.Fatalf("finish %s: %v", id, err)
	}
	return a
}

func ids(ds []*plan.Decision) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID()
	}
	return out
}

func decision(t *testing.T, p *plan.Plan, id string) *plan.Decision {
	t.Helper()
	d, err := p.Decision(id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestNew(t *testing.T) {
	local := time.FixedZone("x", 3600)
	p, err := plan.New("id1", "site", "plan.yaml", true, t0.In(local))
	if err != nil {
		t.Fatal(err)
	}
	if p.ID() != "id1" || p.Name() != "site" || p.Source() != "plan.yaml" || !p.Checkpoints() {
		t.Fatalf("fields: %q %q %q %v", p.ID(), p.Name(), p.Source(), p.Checkpoints())
	}
	if !p.CreatedAt().Equal(t0) || p.CreatedAt().Location() != time.UTC {
		t.Fatalf("created at %v, want %v in UTC", p.CreatedAt(), t0)
	}
	if len(p.Decisions()) != 0 || p.Running() != nil {
		t.Fatal("a new plan has no decisions")
	}
	p.SetCheckpoints(false)
	if p.Checkpoints() {
		t.Fatal("SetCheckpoints(false) did not stick")
	}
	for _, name := range []string{"", "   ", "\t\n"} {
		_, err := plan.New("id1", name, "", false, t0)
		faulttest.Require(t, err, fault.ErrInvalid, "New with name "+strconv.Quote(name))
	}
}

func TestValidateDecisionID(t *testing.T) {
	for _, id := range []string{"a", "0", "scaffold", "a_b-c9", strings.Repeat("a", 64)} {
		if err := plan.ValidateRunID(id); err != nil {
			t.Errorf("%q: %v", id, err)
		}
	}
	for _, id := range []string{"", "A", "-a", "_a", "a b", "a/b", "a.b", "Ab", strings.Repeat("a", 65), "..", "é"} {
		faulttest.Require(t, plan.ValidateRunID(id), fault.ErrInvalid, "ID "+strconv.Quote(id))
	}
	// Any decision's name: an agent's tool-call IDs keep their capitals.
	for _, id := range []string{"a", "toolu_01AbCdEf", "call_X9", strings.Repeat("A", 128)} {
		if err := plan.ValidateDecisionID(id); err != nil {
			t.Errorf("%q: %v", id, err)
		}
	}
	for _, id := range []string{"", "-a", "_a", "a b", "a/b", "a.b", strings.Repeat("a", 129), "..", "é"} {
		faulttest.Require(t, plan.ValidateDecisionID(id), fault.ErrInvalid, "ID "+strconv.Quote(id))
	}
}

func TestDecisionNotFound(t *testing.T) {
	p := newPlan(t, "a")
	_, err := p.Decision("nope")
	faulttest.Require(t, err, fault.ErrNotFound, "Decision")
	_, err = p.Start("nope", "", "", t0)
	faulttest.Require(t, err, fault.ErrNotFound, "Start")
	faulttest.Require(t, p.Finish("nope", plan.Outcome{Status: plan.Succeeded}, t0), fault.ErrNotFound, "Finish")
	faulttest.Require(t, p.Redefine("nope", "true", "fix"), fault.ErrNotFound, "Redefine")
}

func TestDefinitionReturnsCopyOfEnv(t *testing.T) {
	p, _ := plan.New("p", "n", "", true, t0)
	d := plan.Definition{ID: "a", Name: "A", Run: "true", Timeout: time.Minute, Env: map[string]string{"K": "v"}}
	if err := p.Define([]plan.Definition{d}); err != nil {
		t.Fatal(err)
	}
	dec := decision(t, p, "a")
	got := dec.Definition()
	if got.ID != "a" || got.Name != "A" || got.Run != "true" || got.Timeout != time.Minute || got.Env["K"] != "v" {
		t.Fatalf("definition %+v", got)
	}
	got.Env["K"] = "changed"
	got.Env["NEW"] = "x"
	again := dec.Definition()
	if again.Env["K"] != "v" || len(again.Env) != 1 {
		t.Fatalf("mutating the returned Env changed the decision: %v", again.Env)
	}
}

func TestDefineAppendsInFileOrder(t *testing.T) {
	p := newPlan(t, "a", "b")
	if got := ids(p.Decisions()); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("decisions %v", got)
	}
	for _, d := range p.Decisions() {
		if _, ran := d.Latest(); d.Status() != plan.Pending || ran || len(d.Attempts()) != 0 {
			t.Fatalf("%s: new decision is %s with %d attempts", d.ID(), d.Status(), len(d.Attempts()))
		}
	}
	run(t, p, "a", plan.Succeeded, 0)
	// A later file with more decisions at the end.
	if err := p.Define([]plan.Definition{def("a"), def("b"), def("c"), def("d")}); err != nil {
		t.Fatal(err)
	}
	if got := ids(p.Decisions()); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Fatalf("decisions %v", got)
	}
	if decision(t, p, "a").Status() != plan.Succeeded {
		t.Fatal("re-defining lost a's history")
	}
}

// The doc comment of Define refuses only files that reorder decisions that already ran. A file
// that inserts a new decision between two decisions that never ran reorders nothing that ran.
func TestDefineInsertBetweenPendingDecisions(t *testing.T) {
	p := newPlan(t, "a", "b")
	if err := p.Define([]plan.Definition{def("a"), def("c"), def("b")}); err != nil {
		t.Fatalf("inserting between pending decisions: %v", err)
	}
	if got := ids(p.Decisions()); !slices.Equal(got, []string{"a", "c", "b"}) {
		t.Fatalf("decisions %v, want file order [a c b]", got)
	}
}

func TestDefineUpdatesDefinitions(t *testing.T) {
	p := newPlan(t, "a", "b")
	run(t, p, "a", plan.Succeeded, 0)
	nd := plan.Definition{ID: "a", Name: "Alpha", Run: "make", Timeout: 5 * time.Second, Env: map[string]string{"X": "1"}}
	if err := p.Define([]plan.Definition{nd, def("b")}); err != nil {
		t.Fatal(err)
	}
	got := decision(t, p, "a").Definition()
	if got.Name != "Alpha" || got.Run != "make" || got.Timeout != 5*time.Second || got.Env["X"] != "1" {
		t.Fatalf("definition not updated: %+v", got)
	}
	if decision(t, p, "a").Status() != plan.Succeeded || len(decision(t, p, "a").Attempts()) != 1 {
		t.Fatal("updating a definition must keep the history")
	}
}

func TestDefineRefusesReordering(t *testing.T) {
	p := newPlan(t, "a", "b")
	run(t, p, "a", plan.Succeeded, 0)
	run(t, p, "b", plan.Succeeded, 2)
	err := p.Define([]plan.Definition{def("b"), def("a")})
	faulttest.Require(t, err, fault.ErrConflict, "reordered")
	if !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("message should name the moved decision: %v", err)
	}
	if got := ids(p.Decisions()); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("order changed after refusal: %v", got)
	}
	// A subset in the same order is fine.
	if err := p.Define([]plan.Definition{def("b")}); err != nil {
		t.Fatalf("subset: %v", err)
	}
	if err := p.Define([]plan.Definition{def("a")}); err != nil {
		t.Fatalf("subset: %v", err)
	}
}

func TestDefineAcceptsNewDecisionBeforeExisting(t *testing.T) {
	// A setup step added in front of a decision that failed: the file order wins, history stays.
	p := newPlan(t, "a")
	run(t, p, "a", plan.Failed, 0)
	if err := p.Define([]plan.Definition{def("new"), def("a")}); err != nil {
		t.Fatalf("new before existing: %v", err)
	}
	if got := ids(p.Decisions()); !slices.Equal(got, []string{"new", "a"}) {
		t.Fatalf("decisions %v, want [new a]", got)
	}
	if decision(t, p, "a").Status() != plan.Failed {
		t.Fatal("a lost its history")
	}
}

func TestDefineRefusesSwappingDecisionsThatRan(t *testing.T) {
	p := newPlan(t, "a", "b")
	run(t, p, "a", plan.Succeeded, 0)
	run(t, p, "b", plan.Failed, 1)
	err := p.Define([]plan.Definition{def("b"), def("a")})
	faulttest.Require(t, err, fault.ErrConflict, "swapping decisions that ran")
}

func TestDefineKeepsDroppedDecisionsAfterTheirNeighbour(t *testing.T) {
	p := newPlan(t, "a", "x", "b")
	run(t, p, "x", plan.Succeeded, 0)
	if err := p.Define([]plan.Definition{def("a"), def("b")}); err != nil {
		t.Fatal(err)
	}
	if got := ids(p.Decisions()); !slices.Equal(got, []string{"a", "x", "b"}) {
		t.Fatalf("decisions %v, want [a x b]", got)
	}
}

func TestDefineValidation(t *testing.T) {
	for name, defs := range map[string][]plan.Definition{
		"duplicate":        {def("a"), def("b"), def("a")},
		"invalid ID":       {def("a"), def("Bad ID")},
		"empty ID":         {{Run: "true"}},
		"missing run":      {{ID: "a"}},
		"blank run":        {{ID: "a", Run: "  \n\t"}},
		"negative timeout": {{ID: "a", Run: "true", Timeout: -time.Second}},
	} {
		t.Run(name, func(t *testing.T) {
			p := newPlan(t, "z")
			faulttest.Require(t, p.Define(defs), fault.ErrInvalid, name)
			if got := ids(p.Decisions()); !slices.Equal(got, []string{"z"}) {
				t.Fatalf("a refused Define changed the plan: %v", got)
			}
		})
	}
}

func TestAppend(t *testing.T) {
	p := newPlan(t)
	d, err := p.Append(def("x"))
	if err != nil {
		t.Fatal(err)
	}
	if d.ID() != "x" || d.Status() != plan.Pending {
		t.Fatalf("appended %s in %s", d.ID(), d.Status())
	}
	if _, err := p.Append(def("y")); err != nil {
		t.Fatal(err)
	}
	if got := ids(p.Decisions()); !slices.Equal(got, []string{"x", "y"}) {
		t.Fatalf("decisions %v", got)
	}
	_, err = p.Append(plan.Definition{ID: "BAD", Run: "true"})
	faulttest.Require(t, err, fault.ErrInvalid, "invalid ID")
	_, err = p.Append(plan.Definition{ID: "z"})
	faulttest.Require(t, err, fault.ErrInvalid, "no run")
	if len(p.Decisions()) != 2 {
		t.Fatal("a refused Append added a decision")
	}
}

func TestAppendExistingFailedTakesNewDefinition(t *testing.T) {
	p := newPlan(t, "x")
	run(t, p, "x", plan.Failed, 0)
	d, err := p.Append(plan.Definition{ID: "x", Name: "fixed", Run: "true"})
	if err != nil {
		t.Fatal(err)
	}
	if d != decision(t, p, "x") || len(p.Decisions()) != 1 {
		t.Fatal("Append of an existing decision must return it, not add another")
	}
	if got := d.Definition(); got.Run != "true" || got.Name != "fixed" {
		t.Fatalf("definition not replaced: %+v", got)
	}
	a, err := p.Start("x", "", "", at(5))
	if err != nil {
		t.Fatal(err)
	}
	if a.Command != "true" || a.Number != 2 {
		t.Fatalf("retry runs %q as attempt %d", a.Command, a.Number)
	}
}

func TestAppendExistingSucceededIsConflict(t *testing.T) {
	p := newPlan(t, "x")
	run(t, p, "x", plan.Succeeded, 0)
	_, err := p.Append(plan.Definition{ID: "x", Run: "other"})
	faulttest.Require(t, err, fault.ErrConflict, "append succeeded")
	if !strings.Contains(err.Error(), "plan correct --decision x") {
		t.Fatalf("message should point at plan correct: %v", err)
	}
	if decision(t, p, "x").Definition().Run != "echo x" {
		t.Fatal("a refused Append changed the definition")
	}
}

func TestStartFromEachStatus(t *testing.T) {
	cases := []struct {
		from plan.Status
		ok   bool
	}{
		{plan.Pending, true},
		{plan.Skipped, true},
		{plan.Failed, true},
		{plan.Interrupted, true},
		{plan.Reverted, true},
		{plan.Succeeded, false},
		{plan.Running, false},
	}
	for _, c := range cases {
		t.Run(string(c.from), func(t *testing.T) {
			p := newPlan(t, "a", "b")
			switch c.from {
			case plan.Pending:
			case plan.Skipped:
				run(t, p, "a", plan.Failed, 0)
				p.SkipPending("a")
			case plan.Running:
				if _, err := p.Start("b", "", "", at(0)); err != nil {
					t.Fatal(err)
				}
			case plan.Reverted:
				run(t, p, "b", plan.Succeeded, 0)
				if got := p.RevertStartedSince(at(0), "op1"); !slices.Equal(got, []string{"b"}) {
					t.Fatalf("reverted %v", got)
				}
			default:
				run(t, p, "b", c.from, 0)
			}
			b := decision(t, p, "b")
			if b.Status() != c.from {
				t.Fatalf("setup: b is %s, want %s", b.Status(), c.from)
			}
			before := len(b.Attempts())
			a, err := p.Start("b", "cp", "logs/b.log", at(10))
			if !c.ok {
				faulttest.Require(t, err, fault.ErrConflict, "start from "+string(c.from))
				if len(b.Attempts()) != before {
					t.Fatal("a refused Start added an attempt")
				}
				return
			}
			if err != nil {
				t.Fatalf("start from %s: %v", c.from, err)
			}
			if a.Number != before+1 || a.Status != plan.Running || a.Command != "echo b" ||
				a.CheckpointID != "cp" || a.LogPath != "logs/b.log" || !a.StartedAt.Equal(at(10)) {
				t.Fatalf("attempt %+v", a)
			}
			if got, _ := b.Latest(); b.Status() != plan.Running || !reflect.DeepEqual(got, a) || p.Running() != b {
				t.Fatalf("b is %s after Start", b.Status())
			}
		})
	}
}

func TestStartCommandOverrideAndUTC(t *testing.T) {
	p := newPlan(t, "a")
	if err := p.Redefine("a", "custom cmd", "fix"); err != nil {
		t.Fatal(err)
	}
	a, err := p.Start("a", "", "", t0.In(time.FixedZone("y", -7200)))
	if err != nil {
		t.Fatal(err)
	}
	if a.Command != "custom cmd" {
		t.Fatalf("command %q", a.Command)
	}
	if a.StartedAt.Location() != time.UTC {
		t.Fatalf("StartedAt not UTC: %v", a.StartedAt)
	}
}

func TestStartWhileAnotherRunning(t *testing.T) {
	p := newPlan(t, "a", "b")
	if _, err := p.Start("a", "", "", at(0)); err != nil {
		t.Fatal(err)
	}
	_, err := p.Start("b", "", "", at(1))
	faulttest.Require(t, err, fault.ErrConflict, "second running")
	if !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("message should name the running decision: %v", err)
	}
	if decision(t, p, "b").Status() != plan.Pending {
		t.Fatal("b changed")
	}
	if err := p.Finish("a", plan.Outcome{Status: plan.Succeeded}, at(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Start("b", "", "", at(3)); err != nil {
		t.Fatalf("after a finished: %v", err)
	}
}

func TestFinish(t *testing.T) {
	p := newPlan(t, "a")
	if _, err := p.Start("a", "", "", at(0)); err != nil {
		t.Fatal(err)
	}
	arts := []artifact.Artifact{{Path: "f", Change: tree.Added, Size: 1, SHA256: "x"}}
	o := plan.Outcome{Status: plan.Failed, ExitCode: code(3), ResultTree: tree.Sum([]byte("tree1")), Artifacts: arts}
	if err := p.Finish("a", o, at(4).In(time.FixedZone("z", 3600))); err != nil {
		t.Fatal(err)
	}
	a := latest(t, decision(t, p, "a"))
	if a.Status != plan.Failed || a.ExitCode == nil || *a.ExitCode != 3 || a.ResultTree != tree.Sum([]byte("tree1")) ||
		len(a.Artifacts) != 1 || !a.FinishedAt.Equal(at(4)) || a.FinishedAt.Location() != time.UTC {
		t.Fatalf("attempt %+v", a)
	}
	if p.Running() != nil {
		t.Fatal("still running after Finish")
	}
}

func TestFinishWithoutRunningAttempt(t *testing.T) {
	p := newPlan(t, "a")
	faulttest.Require(t, p.Finish("a", plan.Outcome{Status: plan.Succeeded}, at(0)), fault.ErrConflict, "never started")
	run(t, p, "a", plan.Failed, 0)
	faulttest.Require(t, p.Finish("a", plan.Outcome{Status: plan.Succeeded}, at(5)), fault.ErrConflict, "already finished")
	if decision(t, p, "a").Status() != plan.Failed {
		t.Fatal("a refused Finish changed the status")
	}
}

func TestFinishIllegalStatus(t *testing.T) {
	for _, st := range []plan.Status{plan.Pending, plan.Running, plan.Reverted, plan.Skipped, "bogus", ""} {
		p := newPlan(t, "a")
		if _, err := p.Start("a", "", "", at(0)); err != nil {
			t.Fatal(err)
		}
		faulttest.Require(t, p.Finish("a", plan.Outcome{Status: st}, at(1)), fault.ErrInvalid, "finish as "+string(st))
		if decision(t, p, "a").Status() != plan.Running {
			t.Fatalf("finish as %q changed the attempt", st)
		}
	}
	for _, st := range []plan.Status{plan.Succeeded, plan.Failed, plan.Interrupted} {
		p := newPlan(t, "a")
		run(t, p, "a", st, 0)
		if decision(t, p, "a").Status() != st {
			t.Fatalf("finish as %s", st)
		}
	}
}

func TestSkipPending(t *testing.T) {
	p := newPlan(t, "a", "b", "c", "d")
	run(t, p, "a", plan.Succeeded, 0)
	run(t, p, "b", plan.Failed, 2)
	run(t, p, "d", plan.Failed, 4) // d ran out of order (plan exec): not pending
	p.SkipPending("b")
	want := map[string]plan.Status{"a": plan.Succeeded, "b": plan.Failed, "c": plan.Skipped, "d": plan.Failed}
	for id, st := range want {
		if got := decision(t, p, id).Status(); got != st {
			t.Errorf("%s: %s, want %s", id, got, st)
		}
	}
	// Starting a skipped decision clears the skip.
	a, err := p.Start("c", "", "", at(10))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Finish("c", plan.Outcome{Status: plan.Failed}, at(11)); err != nil {
		t.Fatal(err)
	}
	if a.Number != 1 || decision(t, p, "c").Status() != plan.Failed {
		t.Fatalf("c: %s", decision(t, p, "c").Status())
	}
}

func TestSkipPendingDoesNotSkipTargetOrEarlier(t *testing.T) {
	p := newPlan(t, "a", "b", "c")
	p.SkipPending("b")
	for id, st := range map[string]plan.Status{"a": plan.Pending, "b": plan.Pending, "c": plan.Skipped} {
		if got := decision(t, p, id).Status(); got != st {
			t.Errorf("%s: %s, want %s", id, got, st)
		}
	}
	q := newPlan(t, "a", "b")
	q.SkipPending("unknown")
	for _, d := range q.Decisions() {
		if d.Status() != plan.Pending {
			t.Errorf("SkipPending of an unknown ID skipped %s", d.ID())
		}
	}
}

func TestRevertStartedSince(t *testing.T) {
	p := newPlan(t, "a", "b", "c", "d")
	run(t, p, "a", plan.Succeeded, 0)
	run(t, p, "b", plan.Failed, 10)
	run(t, p, "b", plan.Succeeded, 20)
	run(t, p, "c", plan.Interrupted, 30)
	// d never ran.
	got := p.RevertStartedSince(at(10), "op42")
	if !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("reverted %v, want [b c]", got)
	}
	if s := decision(t, p, "a").Status(); s != plan.Succeeded {
		t.Fatalf("a started before t and is %s", s)
	}
	for _, a := range decision(t, p, "b").Attempts() {
		if a.Status != plan.Reverted || a.RevertedBy != "op42" {
			t.Fatalf("b attempt %d: %s by %q", a.Number, a.Status, a.RevertedBy)
		}
	}
	if c := latest(t, decision(t, p, "c")); c.Status != plan.Reverted || c.RevertedBy != "op42" {
		t.Fatalf("c: %+v", c)
	}
	if decision(t, p, "d").Status() != plan.Pending {
		t.Fatal("d changed")
	}
	// Already reverted attempts are left to the operation that reverted them.
	if again := p.RevertStartedSince(at(0), "op43"); !slices.Equal(again, []string{"a"}) {
		t.Fatalf("second revert %v, want [a]", again)
	}
	if by := latest(t, decision(t, p, "b")).RevertedBy; by != "op42" {
		t.Fatalf("b re-reverted by %q", by)
	}
}

func TestRevertStartedSinceLeavesRunningAttempt(t *testing.T) {
	p := newPlan(t, "a")
	if _, err := p.Start("a", "", "", at(5)); err != nil {
		t.Fatal(err)
	}
	if got := p.RevertStartedSince(at(0), "op"); len(got) != 0 {
		t.Fatalf("reverted a running attempt: %v", got)
	}
	if decision(t, p, "a").Status() != plan.Running {
		t.Fatal("running attempt changed")
	}
}

func TestRedefine(t *testing.T) {
	p := newPlan(t, "a")
	run(t, p, "a", plan.Succeeded, 0)
	if _, _, ok := decision(t, p, "a").Corrected(); ok {
		t.Fatal("a decision no correction touched reads as corrected")
	}
	if err := p.Redefine("a", "new cmd", "fix"); err != nil {
		t.Fatal(err)
	}
	if got := decision(t, p, "a").Definition().Run; got != "new cmd" {
		t.Fatalf("run %q", got)
	}
	if latest(t, decision(t, p, "a")).Command != "echo a" {
		t.Fatal("Redefine rewrote history")
	}
	faulttest.Require(t, p.Redefine("a", "  ", "fix"), fault.ErrInvalid, "blank command")
	faulttest.Require(t, p.Redefine("a", "other", " "), fault.ErrInvalid, "no correction")
	if got := decision(t, p, "a").Definition().Run; got != "new cmd" {
		t.Fatalf("a refused Redefine changed run to %q", got)
	}
	// A second correction keeps the plan file's command the first one replaced.
	if err := p.Redefine("a", "newer cmd", "fix2"); err != nil {
		t.Fatal(err)
	}
	if by, file, ok := decision(t, p, "a").Corrected(); !ok || by != "fix2" || file != "echo a" {
		t.Fatalf("corrected by %q over %q (%v), want fix2 over echo a", by, file, ok)
	}
}

// A corrected command stands until the plan file changes the decision: a file that still says what
// it said when the correction was made keeps it; one that says something else supersedes it.
func TestDefineKeepsACorrectionUntilTheFileChanges(t *testing.T) {
	p := newPlan(t, "a", "b")
	run(t, p, "a", plan.Succeeded, 0)
	if err := p.Redefine("a", "fixed a", "fix"); err != nil {
		t.Fatal(err)
	}
	file := []plan.Definition{{ID: "a", Run: "echo a", Name: "renamed"}, {ID: "b", Run: "echo b"}}
	if err := p.Define(file); err != nil {
		t.Fatal(err)
	}
	a := decision(t, p, "a")
	if got := a.Definition(); got.Run != "fixed a" || got.Name != "renamed" {
		t.Fatalf("the unchanged file gave a %+v, want the corrected command and the file's name", got)
	}
	if by, fileRun, ok := a.Corrected(); !ok || by != "fix" || fileRun != "echo a" {
		t.Fatalf("corrected by %q over %q (%v)", by, fileRun, ok)
	}
	file[0].Run = "echo A"
	if err := p.Define(file); err != nil {
		t.Fatal(err)
	}
	if got := decision(t, p, "a").Definition().Run; got != "echo A" {
		t.Fatalf("the changed file gave a %q, want its own command", got)
	}
	if _, _, ok := decision(t, p, "a").Corrected(); ok {
		t.Fatal("the file's new command left the correction standing")
	}
}

func TestUncorrect(t *testing.T) {
	p := newPlan(t, "a", "b")
	if err := p.Redefine("b", "fixed b", "fix"); err != nil {
		t.Fatal(err)
	}
	p.Saved()
	if got := p.Uncorrect(""); got != nil {
		t.Fatalf("Uncorrect of no correction changed %v", got)
	}
	if got := p.Uncorrect("other"); got != nil {
		t.Fatalf("Uncorrect of another correction changed %v", got)
	}
	if got := p.Uncorrect("fix"); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("Uncorrect changed %v, want b", got)
	}
	b := decision(t, p, "b")
	if _, _, ok := b.Corrected(); ok || b.Definition().Run != "echo b" {
		t.Fatalf("after Uncorrect b runs %q (corrected %v), want the file's echo b", b.Definition().Run, ok)
	}
	if _, ids := p.Changes(); !slices.Contains(ids, "b") {
		t.Fatalf("Uncorrect did not mark b changed: %v", ids)
	}
}

func TestRehydrate(t *testing.T) {
	a1 := &plan.Attempt{Number: 1, Status: plan.Succeeded, StartedAt: t0}
	p := plan.Rehydrate("id", "n", "src", false, t0.In(time.FixedZone("q", 60)), []plan.DecisionState{
		{Def: def("a"), Attempts: []*plan.Attempt{a1}},
		{Def: def("b"), Skipped: true},
		{Def: def("c")},
	})
	if p.ID() != "id" || p.Name() != "n" || p.Source() != "src" || p.Checkpoints() || p.CreatedAt().Location() != time.UTC {
		t.Fatal("fields")
	}
	want := []plan.Status{plan.Succeeded, plan.Skipped, plan.Pending}
	for i, d := range p.Decisions() {
		if d.Status() != want[i] {
			t.Errorf("%s: %s, want %s", d.ID(), d.Status(), want[i])
		}
	}
	if got := latest(t, decision(t, p, "a")); !reflect.DeepEqual(got, *a1) {
		t.Fatal("attempt not kept")
	}
}

// A correction re-executes the corrected decision and every later one that has not succeeded.
func TestReexecution(t *testing.T) {
	p := newPlan(t, "a", "b", "c", "d")
	run(t, p, "a", plan.Succeeded, 0)
	run(t, p, "b", plan.Succeeded, 2)
	run(t, p, "c", plan.Failed, 4)
	ids, err := p.Reexecution("b")
	if err != nil || !slices.Equal(ids, []string{"c", "d"}) {
		t.Fatalf("Reexecution(b) = %v, %v: b succeeded and stays; c failed and d is pending", ids, err)
	}
	p.RevertStartedSince(at(2), "op")
	if ids, _ := p.Reexecution("b"); !slices.Equal(ids, []string{"b", "c", "d"}) {
		t.Fatalf("after the revert: %v", ids)
	}
	if _, err := p.Reexecution("zz"); err == nil {
		t.Fatal("an unknown decision is an error")
	}
}

// A decision's retries, failure policy and labels are checked when the plan is defined.
func TestDefinitionPolicyValidation(t *testing.T) {
	for _, d := range []plan.Definition{
		{ID: "a", Run: "x", Retries: -1},
		{ID: "a", Run: "x", Retries: plan.MaxRetries + 1},
		{ID: "a", Run: "x", OnFailure: "sometimes"},
		{ID: "a", Run: "x", Labels: map[string]string{"Bad": "x"}},
	} {
		p, _ := plan.New("0123456789abcdef01234567", "p", "", true, time.Now())
		if err := p.Define([]plan.Definition{d}); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%+v: %v", d, err)
		}
	}
	p, _ := plan.New("0123456789abcdef01234567", "p", "", true, time.Now())
	ok := plan.Definition{ID: "a", Run: "x", Retries: plan.MaxRetries, OnFailure: "continue", Validate: "true", Labels: map[string]string{"phase": "b"}}
	if err := p.Define([]plan.Definition{ok}); err != nil {
		t.Fatal(err)
	}
	if d, _ := p.Decision("a"); d.Definition().Retries != plan.MaxRetries || d.Definition().Labels["phase"] != "b" {
		t.Fatalf("%+v", d.Definition())
	}
}

// Unrevert gives back exactly what one operation reverted, and nothing another one did.
func TestUnrevert(t *testing.T) {
	p, _ := plan.New("0123456789abcdef01234567", "p", "", true, time.Now())
	if err := p.Define([]plan.Definition{{ID: "a", Run: "x"}, {ID: "b", Run: "y"}}); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"a", "b"} {
		if _, err := p.Start(id, "", "", t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
		code := i // a succeeds, b fails
		st := plan.Succeeded
		if i == 1 {
			st = plan.Failed
		}
		if err := p.Finish(id, plan.Outcome{Status: st, ExitCode: &code}, t0.Add(time.Duration(i)*time.Minute+time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if got := p.RevertStartedSince(t0.Add(30*time.Second), "op1"); len(got) != 1 || got[0] != "b" {
		t.Fatalf("reverted %v", got)
	}
	if got := p.RevertStartedSince(t0, "op2"); len(got) != 1 || got[0] != "a" {
		t.Fatalf("reverted %v", got)
	}
	if got := p.Unrevert("nobody"); len(got) != 0 {
		t.Fatalf("unreverted %v", got)
	}
	if got := p.Unrevert("op1"); len(got) != 1 || got[0] != "b" {
		t.Fatalf("unreverted %v", got)
	}
	a, _ := p.Decision("a")
	b, _ := p.Decision("b")
	if b.Status() != plan.Failed || a.Status() != plan.Reverted {
		t.Fatalf("a %s, b %s", a.Status(), b.Status())
	}
	if la, _ := b.Latest(); la.RevertedBy != "" || la.RevertedFrom != "" {
		t.Fatalf("b's attempt still names its revert: %+v", la)
	}
}
