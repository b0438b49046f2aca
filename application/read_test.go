package application

import (
	"context"
	"errors"
	"testing"

	"github.com/planhq/plan/domain/fault"
)

// ReadService.Decision compares an attempt's pre_decision checkpoint with the tree it left, and
// says plainly when there is nothing to compare.
func TestReadServiceDecisionChanges(t *testing.T) {
	e := newUseCaseEnv(t)
	e.writes()
	if _, err := e.runPlan(t, RunRequest{Decisions: defs("a", "b")}); err != nil {
		t.Fatal(err)
	}
	rs := NewReadService(e.ops, nil)
	ctx := context.Background()
	got, err := rs.Decision(ctx, "", "b", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Changes) != 1 || got.Changes[0].Path != "b.txt" || got.Attempt.Number != 1 || got.Plan.Name() != "p" {
		t.Fatalf("changes of b: %+v", got)
	}
	for name, c := range map[string]struct {
		plan, id string
		attempt  int
	}{
		"unknown decision": {"", "zz", 0},
		"unknown attempt":  {"", "a", 4},
		"unknown plan":     {"nope", "a", 0},
	} {
		if _, err := rs.Decision(ctx, c.plan, c.id, c.attempt); !errors.Is(err, fault.ErrNotFound) {
			t.Errorf("%s: %v, want not found", name, err)
		}
	}

	// A damaged store, then a deleted checkpoint: integrity, then not found.
	e.store.err = fault.Integrity("disk on fire")
	if _, err := rs.Decision(ctx, "", "b", 0); !errors.Is(err, fault.ErrIntegrity) {
		t.Errorf("a damaged store: %v, want an integrity error", err)
	}
	e.store.err = nil
	if err := e.repo.Delete(ctx, got.Before.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Decision(ctx, "", "b", 0); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("a deleted checkpoint: %v, want not found", err)
	}

	// An attempt still running has left no state yet.
	p, err := e.plans.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Append(defs("c")[0]); err != nil {
		t.Fatal(err)
	}
	b, _ := p.Decision("b")
	if _, err := p.Start("c", b.Attempts()[0].CheckpointID, "", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Decision(ctx, "", "c", 0); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("a running attempt: %v, want not found", err)
	}

	// A run without checkpoints has nothing before its decisions.
	e2 := newUseCaseEnv(t)
	e2.writes()
	if _, err := e2.runPlan(t, RunRequest{Decisions: defs("a"), NoCheckpoints: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewReadService(e2.ops, nil).Decision(ctx, "", "a", 0); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("an attempt without a checkpoint: %v, want not found", err)
	}
}
