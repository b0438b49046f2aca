package application

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// unlistable is a store where one tree cannot be read whole (a damaged subtree), while a diff
// against it still works: a real store's diff skips the subtrees both sides share, unread.
type unlistable struct {
	*fakeStore
	bad tree.Hash
}

func (s unlistable) Flatten(root tree.Hash) ([]tree.Entry, error) {
	if root == s.bad {
		return nil, fault.Integrity("tree %s is damaged", root)
	}
	return s.fakeStore.Flatten(root)
}

// A surgical revert whose decision's pre_decision checkpoint cannot be read whole fails with the
// integrity error before it touches anything: the workspace, the decisions' statuses, the records
// of corrections and the archive stay as they were.
func TestRevertDecisionWithAnUnreadablePreDecisionCheckpoint(t *testing.T) {
	e := newUseCaseEnv(t)
	ranEditsAB(t, e)
	p, err := e.plans.Current(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d, _ := p.Decision("a")
	pre, err := e.repo.Get(context.Background(), latestOf(d).CheckpointID)
	if err != nil {
		t.Fatal(err)
	}
	e.ops.store = unlistable{fakeStore: e.store, bad: pre.Root()}
	live, content := e.livePaths(), e.liveContent(t, "f.txt")
	cps, _ := e.repo.List(context.Background())

	res, err := e.cs.RevertDecision(context.Background(), revertReq("a", nil))
	if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "is damaged") {
		t.Fatalf("want the integrity error, got %v", err)
	}
	if res.Correction != nil || res.Backup != nil {
		t.Errorf("a failed revert reports a correction or a safety checkpoint: %+v", res)
	}
	if e.livePaths() != live || e.liveContent(t, "f.txt") != content || len(e.r.applies) != 0 {
		t.Errorf("the workspace changed: %q, f.txt %q", e.livePaths(), e.liveContent(t, "f.txt"))
	}
	if st := decisionStatus(t, e, "a"); st != plan.Succeeded {
		t.Errorf("a is %s, want succeeded still", st)
	}
	if after, _ := e.repo.List(context.Background()); len(after) != len(cps) {
		t.Errorf("%d checkpoints, want %d: nothing new", len(after), len(cps))
	}
	if len(e.corrections.cs) != 0 || len(e.archiver.staged) != 0 {
		t.Errorf("records: %d corrections, %d staged archives", len(e.corrections.cs), len(e.archiver.staged))
	}
}
