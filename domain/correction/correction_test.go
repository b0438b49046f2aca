package correction_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

const corrID = "0123456789abcdef01234567"

func newPlan(t *testing.T, ids ...string) *plan.Plan {
	t.Helper()
	p, err := plan.New("p1", "site", "", true, t0)
	if err != nil {
		t.Fatal(err)
	}
	var defs []plan.Definition
	for _, id := range ids {
		defs = append(defs, plan.Definition{ID: id, Run: "echo " + id})
	}
	if err := p.Define(defs); err != nil {
		t.Fatal(err)
	}
	return p
}

// exec runs one attempt of id from start to start+1 with a checkpoint named after it.
func exec(t *testing.T, p *plan.Plan, id string, st plan.Status, start int) {
	t.Helper()
	execCP(t, p, id, "cp-"+id, st, start)
}

func execCP(t *testing.T, p *plan.Plan, id, cp string, st plan.Status, start int) {
	t.Helper()
	if _, err := p.Start(id, checkpoint.ID(cp), "", at(start)); err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	arts := []artifact.Artifact{{Path: id + ".txt", Change: tree.Added, Size: 1, SHA256: "h-" + id}}
	o := plan.Outcome{Status: st, ResultTree: tree.Sum([]byte("tree-" + id)), Artifacts: arts}
	if err := p.Finish(id, o, at(start+1)); err != nil {
		t.Fatalf("finish %s: %v", id, err)
	}
}

func scopeIDs(items []correction.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.DecisionID
	}
	return out
}

func TestScopeRefusals(t *testing.T) {
	t.Run("not found", func(t *testing.T) {
		_, err := correction.Scope(newPlan(t, "a"), "zz")
		faulttest.Require(t, err, fault.ErrNotFound, "unknown decision")
	})
	t.Run("not executed", func(t *testing.T) {
		_, err := correction.Scope(newPlan(t, "a"), "a")
		faulttest.Require(t, err, fault.ErrConflict, "pending decision")
	})
	t.Run("reverted", func(t *testing.T) {
		p := newPlan(t, "a")
		exec(t, p, "a", plan.Succeeded, 0)
		p.RevertStartedSince(at(0), "rb1")
		_, err := correction.Scope(p, "a")
		faulttest.Require(t, err, fault.ErrConflict, "reverted decision")
		if !strings.Contains(err.Error(), "rb1") {
			t.Fatalf("message should name the reverting operation: %v", err)
		}
	})
	t.Run("running", func(t *testing.T) {
		p := newPlan(t, "a")
		if _, err := p.Start("a", "cp", "", at(0)); err != nil {
			t.Fatal(err)
		}
		_, err := correction.Scope(p, "a")
		faulttest.Require(t, err, fault.ErrConflict, "running decision")
	})
	t.Run("no checkpoint", func(t *testing.T) {
		p := newPlan(t, "a")
		execCP(t, p, "a", "", plan.Succeeded, 0)
		_, err := correction.Scope(p, "a")
		faulttest.Require(t, err, fault.ErrConflict, "no checkpoint")
		if !strings.Contains(err.Error(), "--no-checkpoints") {
			t.Fatalf("message should explain the missing checkpoint: %v", err)
		}
	})
}

func TestScopeTargetAndLater(t *testing.T) {
	p := newPlan(t, "a", "b", "c", "d", "e", "f")
	exec(t, p, "a", plan.Succeeded, 0)    // before the target: excluded
	exec(t, p, "b", plan.Failed, 10)      // target, first attempt (superseded)
	exec(t, p, "b", plan.Succeeded, 20)   // target's latest attempt
	exec(t, p, "e", plan.Succeeded, 30)   // later, run out of plan order
	exec(t, p, "c", plan.Interrupted, 40) // later, interrupted counts
	exec(t, p, "d", plan.Failed, 50)      // later, failed counts
	// f never ran: excluded.
	items, err := correction.Scope(p, "b")
	if err != nil {
		t.Fatal(err)
	}
	if got := scopeIDs(items); !slices.Equal(got, []string{"b", "e", "c", "d"}) {
		t.Fatalf("scope %v, want [b e c d] (start order)", got)
	}
	first := items[0]
	if first.Attempt != 2 || first.CheckpointID != "cp-b" || first.ResultTree != tree.Sum([]byte("tree-b")) ||
		!first.StartedAt.Equal(at(20)) || len(first.Artifacts) != 1 || first.Artifacts[0].Path != "b.txt" {
		t.Fatalf("target item %+v", first)
	}
}

func TestScopeExcludesRevertedAndRunningLaterDecisions(t *testing.T) {
	p := newPlan(t, "a", "b", "c")
	exec(t, p, "b", plan.Succeeded, 0)
	p.RevertStartedSince(at(0), "rb")
	exec(t, p, "a", plan.Succeeded, 10) // target
	exec(t, p, "b", plan.Failed, 20)    // b ran again after the target: its new attempt counts
	if _, err := p.Start("c", "cp", "", at(30)); err != nil {
		t.Fatal(err)
	}
	items, err := correction.Scope(p, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := scopeIDs(items); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("scope %v, want [a b]: the running c is excluded", got)
	}
	if items[1].Attempt != 2 {
		t.Fatalf("b's scope item is attempt %d, want its latest (2)", items[1].Attempt)
	}
}

func TestScopeExcludesLaterDecisionWhoseLatestAttemptIsReverted(t *testing.T) {
	p := newPlan(t, "a", "b")
	exec(t, p, "a", plan.Succeeded, 0)
	exec(t, p, "b", plan.Succeeded, 10)
	p.RevertStartedSince(at(10), "rb") // reverts b only
	items, err := correction.Scope(p, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := scopeIDs(items); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("scope %v, want [a]", got)
	}
}

func TestScopeSameStartTimeIncluded(t *testing.T) {
	p := newPlan(t, "a", "b")
	exec(t, p, "a", plan.Succeeded, 0)
	// b started at the very instant a did ("at or after").
	if _, err := p.Start("b", "cp-b", "", at(0)); err != nil {
		t.Fatal(err)
	}
	if err := p.Finish("b", plan.Outcome{Status: plan.Succeeded}, at(1)); err != nil {
		t.Fatal(err)
	}
	items, err := correction.Scope(p, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := scopeIDs(items); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("scope %v, want [a b]", got)
	}
}

func item(id string) correction.Item { return correction.Item{DecisionID: id, Attempt: 1} }

func validParams() correction.Params {
	return correction.Params{
		ID: corrID, DecisionID: "a", Reason: "wrong output",
		Scope:              []correction.Item{item("a"), item("b")},
		SafetyCheckpointID: "safe", RollbackCheckpointID: "rb", ArchiveDir: "/ws/.plan/archive/x",
		CreatedAt: t0,
	}
}

func TestNewValid(t *testing.T) {
	c, err := correction.New(validParams())
	if err != nil {
		t.Fatal(err)
	}
	if c.ID() != corrID || c.Status() != correction.Reverted || !c.FinishedAt().IsZero() || len(c.Reexecuted()) != 0 {
		t.Fatalf("new correction: %s %s", c.ID(), c.Status())
	}
	if got := c.Params(); got.Reason != "wrong output" || got.ArchiveDir != "/ws/.plan/archive/x" {
		t.Fatalf("params %+v", got)
	}
	if got := c.RevertedDecisions(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("reverted decisions %v", got)
	}
}

func TestNewValidation(t *testing.T) {
	for name, mod := range map[string]func(*correction.Params){
		"missing ID":        func(p *correction.Params) { p.ID = "" },
		"short ID":          func(p *correction.Params) { p.ID = "0123" },
		"non-hex ID":        func(p *correction.Params) { p.ID = "0123456789abcdef0123456z" },
		"upper-case ID":     func(p *correction.Params) { p.ID = "0123456789ABCDEF01234567" },
		"missing decision":  func(p *correction.Params) { p.DecisionID = "" },
		"invalid decision":  func(p *correction.Params) { p.DecisionID = "../a" },
		"missing reason":    func(p *correction.Params) { p.Reason = "" },
		"blank reason":      func(p *correction.Params) { p.Reason = " \n " },
		"long reason":       func(p *correction.Params) { p.Reason = strings.Repeat("r", correction.MaxReason+1) },
		"empty scope":       func(p *correction.Params) { p.Scope = nil },
		"scope not target":  func(p *correction.Params) { p.Scope = []correction.Item{item("b"), item("a")} },
		"missing safety":    func(p *correction.Params) { p.SafetyCheckpointID = "" },
		"missing rollback":  func(p *correction.Params) { p.RollbackCheckpointID = "" },
		"missing archive":   func(p *correction.Params) { p.ArchiveDir = "" },
		"decision mismatch": func(p *correction.Params) { p.DecisionID = "b" },
	} {
		t.Run(name, func(t *testing.T) {
			p := validParams()
			mod(&p)
			c, err := correction.New(p)
			faulttest.Require(t, err, fault.ErrInvalid, name)
			if c != nil {
				t.Fatal("New returned a correction with its error")
			}
		})
	}
}

func TestValidateReason(t *testing.T) {
	faulttest.Require(t, correction.ValidateReason(""), fault.ErrInvalid, "empty")
	faulttest.Require(t, correction.ValidateReason("   \t"), fault.ErrInvalid, "blank")
	err := correction.ValidateReason(strings.Repeat("x", correction.MaxReason+1))
	faulttest.Require(t, err, fault.ErrInvalid, "too long")
	if !strings.Contains(err.Error(), "4097") {
		t.Fatalf("message should give the length: %v", err)
	}
	if err := correction.ValidateReason(strings.Repeat("x", correction.MaxReason)); err != nil {
		t.Fatalf("exactly MaxReason bytes: %v", err)
	}
	if err := correction.ValidateReason("x"); err != nil {
		t.Fatal(err)
	}
}

func TestStateMachine(t *testing.T) {
	for _, ok := range []bool{true, false} {
		c, err := correction.New(validParams())
		if err != nil {
			t.Fatal(err)
		}
		faulttest.Require(t, c.Finish(ok, at(1)), fault.ErrConflict, "finish before re-execution")
		if c.Status() != correction.Reverted || !c.FinishedAt().IsZero() {
			t.Fatal("a refused Finish changed the correction")
		}
		if err := c.StartReexecution(); err != nil {
			t.Fatal(err)
		}
		if c.Status() != correction.Reexecuting {
			t.Fatalf("status %s", c.Status())
		}
		faulttest.Require(t, c.StartReexecution(), fault.ErrConflict, "start twice")
		c.RecordReexecuted("a")
		c.RecordReexecuted("b")
		if got := c.Reexecuted(); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("reexecuted %v", got)
		}
		if err := c.Finish(ok, at(9).In(time.FixedZone("z", 7200))); err != nil {
			t.Fatal(err)
		}
		want := correction.Failed
		if ok {
			want = correction.Succeeded
		}
		if c.Status() != want {
			t.Fatalf("Finish(%v): status %s, want %s", ok, c.Status(), want)
		}
		if !c.FinishedAt().Equal(at(9)) || c.FinishedAt().Location() != time.UTC {
			t.Fatalf("finished at %v", c.FinishedAt())
		}
		faulttest.Require(t, c.Finish(true, at(10)), fault.ErrConflict, "finish twice")
		faulttest.Require(t, c.StartReexecution(), fault.ErrConflict, "restart a finished correction")
		if c.Status() != want {
			t.Fatal("a refused transition changed a finished correction")
		}
	}
}

func TestRehydrate(t *testing.T) {
	p := validParams()
	c := correction.Rehydrate(p, correction.Reexecuting, []string{"a"}, time.Time{})
	if c.Status() != correction.Reexecuting || !slices.Equal(c.Reexecuted(), []string{"a"}) {
		t.Fatalf("rehydrated %s %v", c.Status(), c.Reexecuted())
	}
	if err := c.Finish(true, at(3)); err != nil {
		t.Fatalf("a rehydrated re-executing correction must finish: %v", err)
	}
	if got := correction.Rehydrate(p, correction.Succeeded, nil, at(3)).RevertedDecisions(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("reverted %v", got)
	}
}
