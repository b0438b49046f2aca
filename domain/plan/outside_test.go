package plan_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/plan"
)

func outsideDef(id string) plan.Definition {
	return plan.Definition{ID: id, Name: "Bash", Run: "Bash: rm -rf build", Labels: map[string]string{"agent": "claude"}}
}

func TestOutsideDecisions(t *testing.T) {
	p, err := plan.New("p1", "claude-s", "agent claude session s", true, t0)
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.RecordOutside(outsideDef("toolu_01A"), "cp1", t0)
	if err != nil || a.Status != plan.Running || a.Number != 1 || a.CheckpointID != "cp1" {
		t.Fatalf("record: %+v %v", a, err)
	}
	// Several at once, and beside a decision plan runs.
	if _, err := p.RecordOutside(outsideDef("toolu_01B"), "cp2", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(plan.Definition{ID: "build", Run: "make"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Start("build", "cp3", "", t0); err != nil {
		t.Fatalf("an executed decision starts beside running tool calls: %v", err)
	}
	if r := p.Running(); r == nil || r.ID() != "build" {
		t.Fatalf("Running: %v", r)
	}
	if got := p.RunningOutside(); len(got) != 2 || got[0].Kind() != plan.Outside {
		t.Fatalf("RunningOutside: %v", got)
	}
	// Delivered twice: the running attempt, unchanged.
	again, err := p.RecordOutside(outsideDef("toolu_01A"), "cpX", t0.Add(time.Second))
	if err != nil || again.CheckpointID != "cp1" {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	arts := []artifact.Artifact{{Path: "build/a.o", Change: "deleted"}}
	if err := p.FinishOutside("toolu_01A", plan.Outcome{Status: plan.Succeeded, Artifacts: arts}, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	d, _ := p.Decision("toolu_01A")
	if l, _ := d.Latest(); l.Status != plan.Succeeded || len(l.Artifacts) != 1 || !l.FinishedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("finished: %+v", l)
	}
	// What plan refuses of them.
	faulttest.Require(t, p.FinishOutside("toolu_01A", plan.Outcome{Status: plan.Succeeded}, t0), fault.ErrConflict, "finish twice")
	faulttest.Require(t, p.FinishOutside("toolu_01B", plan.Outcome{Status: plan.Running}, t0), fault.ErrInvalid, "finish as running")
	faulttest.Require(t, p.FinishOutside("build", plan.Outcome{Status: plan.Succeeded}, t0), fault.ErrConflict, "finish an executed one")
	faulttest.Require(t, p.FinishOutside("nope", plan.Outcome{Status: plan.Succeeded}, t0), fault.ErrNotFound, "finish an unknown one")
	_, err = p.RecordOutside(outsideDef("toolu_01A"), "cp9", t0)
	faulttest.Require(t, err, fault.ErrConflict, "record a finished call again")
	_, err = p.RecordOutside(outsideDef("build"), "cp9", t0)
	faulttest.Require(t, err, fault.ErrConflict, "record over an executed decision")
	_, err = p.Start("toolu_01A", "cp", "", t0)
	faulttest.Require(t, err, fault.ErrConflict, "start a tool call")
	faulttest.Require(t, p.Redefine("toolu_01A", "x", "fix"), fault.ErrConflict, "redefine a tool call")
	_, err = p.Append(plan.Definition{ID: "toolu_01A", Run: "x"})
	faulttest.Require(t, err, fault.ErrInvalid, "append over a tool call (an invalid run ID)")
	_, err = p.Append(plan.Definition{ID: "toolu_01x", Kind: plan.Outside, Run: "x"})
	faulttest.Require(t, err, fault.ErrInvalid, "append an outside decision")
	if _, err := p.Reexecution("toolu_01A"); err == nil || !strings.Contains(err.Error(), "cannot run it again") {
		t.Errorf("reexecution over tool calls: %v", err)
	}
}

func TestAppendOverAToolCallIsRefused(t *testing.T) {
	p, _ := plan.New("p1", "n", "", true, t0)
	if _, err := p.RecordOutside(outsideDef("call1"), "cp", t0); err != nil {
		t.Fatal(err)
	}
	_, err := p.Append(plan.Definition{ID: "call1", Run: "x"})
	faulttest.Require(t, err, fault.ErrConflict, "append over a tool call")
}

func TestOutsideDefinitionRules(t *testing.T) {
	p, _ := plan.New("p1", "n", "", true, t0)
	for _, def := range []plan.Definition{
		{ID: "-x", Run: "r"},
		{ID: "x", Run: " "},
		{ID: "x", Run: strings.Repeat("r", 513)},
		{ID: "x", Run: "r", Labels: map[string]string{"Bad Key": "v"}},
		{ID: "x", Run: "r", Retries: 1},
		{ID: "x", Run: "r", Env: map[string]string{"A": "b"}},
	} {
		_, err := p.RecordOutside(def, "cp", t0)
		faulttest.Require(t, err, fault.ErrInvalid, "definition "+def.ID+" "+def.Run[:1])
	}
	faulttest.Require(t, p.Define([]plan.Definition{{ID: "a", Run: "x", Kind: "weird"}}), fault.ErrInvalid, "unknown kind")
}

func TestTurns(t *testing.T) {
	p, _ := plan.New("p1", "n", "", true, t0)
	if _, ok := p.CurrentTurn(); ok || p.CloseTurn("x", t0) {
		t.Fatal("a new plan has a turn")
	}
	long := strings.Repeat("é", 150) + "\n  tail"
	t1 := p.OpenTurn(long, "s1", t0)
	if t1.Number != 1 || len(t1.Prompt) > plan.MaxPromptExcerpt || !strings.HasSuffix(t1.Prompt, "…") || strings.Contains(t1.Prompt, "\n") {
		t.Fatalf("turn 1: %+v (%d bytes)", t1, len(t1.Prompt))
	}
	// A new prompt closes the open turn at its own start.
	t2 := p.OpenTurn("again", "s2", t0.Add(time.Minute))
	if got, _ := p.Turn(1); got.End != "s2" || t2.Number != 2 {
		t.Fatalf("turns: %+v", p.Turns())
	}
	if !p.CloseTurn("e2", t0.Add(2*time.Minute)) || p.CloseTurn("e3", t0) {
		t.Fatal("close")
	}
	if cur, _ := p.CurrentTurn(); cur.End != "e2" || !cur.EndedAt.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("current: %+v", cur)
	}
	_, err := p.Turn(3)
	faulttest.Require(t, err, fault.ErrNotFound, "turn 3")
	_, err = p.Turn(0)
	faulttest.Require(t, err, fault.ErrNotFound, "turn 0")
	if plan.Excerpt("a  b", 10) != "a b" {
		t.Error("excerpt")
	}
}

func TestChangesAndPartialPlans(t *testing.T) {
	p, _ := plan.New("p1", "n", "", true, t0)
	if whole, _ := p.Changes(); !whole {
		t.Error("a new plan is saved whole")
	}
	p.Saved()
	if _, err := p.RecordOutside(outsideDef("b"), "cp", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RecordOutside(outsideDef("a"), "cp", t0); err != nil {
		t.Fatal(err)
	}
	if whole, ids := p.Changes(); whole || !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("changes: %v %v", whole, ids)
	}
	for _, id := range []string{"a", "b"} {
		if err := p.FinishOutside(id, plan.Outcome{Status: plan.Succeeded}, t0); err != nil {
			t.Fatal(err)
		}
	}
	p.Saved()
	if ids := p.StartedSince(t0); len(ids) != 2 {
		t.Fatalf("started since: %v", ids)
	}
	p.Saved()
	p.SkipPending("zzz")
	p.RevertOne("a", "op")
	p.Unrevert("op")
	p.RevertStartedSince(t0, "op2")
	if _, ids := p.Changes(); !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("changes after reverts: %v", ids)
	}
	// A redo's re-revert is a change to save too (it was not reported, so a repository that saves
	// only the changes kept the decisions as the undo had left them).
	p.Unrevert("op2")
	p.Saved()
	if got := p.Rerevert([]string{"b"}, t0.Add(time.Second), "op3"); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("rerevert: %v", got)
	}
	if whole, ids := p.Changes(); whole || !slices.Equal(ids, []string{"b"}) {
		t.Fatalf("changes after a rerevert: %v %v", whole, ids)
	}
	d, _ := p.Decision("a")
	q := plan.RehydratePartial("p1", "n", "", true, t0, []plan.DecisionState{{Def: d.Definition(), Attempts: nil}},
		[]plan.Turn{{Number: 1, Start: "s"}})
	if !q.Partial() || len(q.Turns()) != 1 {
		t.Fatal("partial")
	}
	if q.SetTurns(nil); len(q.Turns()) != 0 {
		t.Fatal("partial")
	}
	faulttest.Require(t, q.Define(nil), fault.ErrConflict, "redefine a partial plan")
	_, err := q.Append(plan.Definition{ID: "x", Run: "y"})
	faulttest.Require(t, err, fault.ErrConflict, "append to a partial plan")
	if whole, _ := plan.Rehydrate("p", "n", "", true, t0, nil).Changes(); !whole {
		t.Error("a plan rebuilt from elsewhere is saved whole")
	}
}
