package application

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/tree"
)

// The head after a rollback is its target, not the safety checkpoint the rollback took: the
// workspace reads clean, `@` is the target, a checkpoint taken next branches from it, and @~N walks
// parents across the rollback.
func TestHeadFollowsRollbacks(t *testing.T) {
	e := newUseCaseEnv(t)
	ctx := context.Background()
	read := NewReadService(e.ops, nil)
	take := func(content string) *checkpoint.Checkpoint {
		t.Helper()
		e.setFile("f", content)
		cp, err := e.cps.Create(ctx, CreateRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return cp
	}
	a, b := take("a"), take("b")
	e.setFile("f", "dirty")
	if _, err := e.cps.Rollback(ctx, RollbackRequest{Ref: string(a.ID())}); err != nil {
		t.Fatal(err)
	}
	if latest, _ := e.repo.Latest(ctx); latest.Type() != checkpoint.PreRollback {
		t.Fatalf("the newest checkpoint is %s, want the rollback's pre_rollback", latest.Type())
	}
	for _, name := range []string{"@", "latest"} {
		if cp, err := e.cps.Resolve(ctx, name); err != nil || cp.ID() != a.ID() {
			t.Fatalf("%s after the rollback: %v, %v; want %s", name, cp, err, a.ID())
		}
	}
	if h, err := e.cps.Head(ctx); err != nil || h.ID() != a.ID() {
		t.Fatalf("Head: %v, %v", h, err)
	}
	if p, err := read.Pending(ctx, nil); err != nil || len(p.Changes) != 0 || p.Latest.ID() != a.ID() {
		t.Fatalf("status right after the rollback: %+v, %v", p, err)
	}
	c := take("c")
	if c.ParentID() != a.ID() {
		t.Fatalf("a checkpoint after the rollback has parent %s, want its target %s", c.ParentID(), a.ID())
	}
	if cp, err := e.cps.Resolve(ctx, "@~1"); err != nil || cp.ID() != a.ID() {
		t.Fatalf("@~1: %v, %v; want %s", cp, err, a.ID())
	}
	if _, err := e.cps.Resolve(ctx, "@~2"); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "ends 1 parent back") {
		t.Fatalf("@~2 past the first checkpoint: %v", err)
	}
	_ = b
}

// A parent recorded before heads were (the newest checkpoint then, a safety one) is passed over by
// @~N; a deleted parent ends the walk with a message; the repositories' failures are the error.
func TestHeadWalkAndFailures(t *testing.T) {
	e := newUseCaseEnv(t)
	ctx := context.Background()
	if _, err := e.cps.Resolve(ctx, "@~1"); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "no checkpoint yet") {
		t.Fatalf("@~1 of an empty workspace: %v", err)
	}
	a := e.checkpointAt(t, baseTime, tree.Sum([]byte("a")), checkpoint.Stats{})
	s := e.add(t, checkpoint.PreRollback, a.ID())
	c := e.add(t, checkpoint.Manual, s.ID()) // as recorded before heads: the newest, a safety one
	if cp, err := e.cps.Resolve(ctx, "@~1"); err != nil || cp.ID() != a.ID() {
		t.Fatalf("@~1 over an old safety parent: %v, %v; want %s", cp, err, a.ID())
	}
	gone := e.add(t, checkpoint.Manual, "0123456789abcdef01234567")
	if _, err := e.cps.Resolve(ctx, "@~1"); !errors.Is(err, fault.ErrNotFound) || !strings.Contains(err.Error(), "was deleted") {
		t.Fatalf("@~1 to a deleted parent: %v", err)
	}
	_ = c
	_ = gone
	e.repo.getErr = errors.New("db gone")
	if _, err := e.cps.Resolve(ctx, "@~1"); !errors.Is(err, e.repo.getErr) {
		t.Fatalf("@~1 when the database fails: %v", err)
	}
	e.repo.getErr = nil
	e.repo.latestErr = errors.New("db gone")
	if _, err := e.cps.Head(ctx); !errors.Is(err, e.repo.latestErr) {
		t.Fatalf("Head when the database fails: %v", err)
	}
	e.repo.latestErr = nil
	// The newest is a safety checkpoint: the history decides, and its failures are the error.
	e.add(t, checkpoint.PreRecover, gone.ID())
	if h, err := e.cps.Head(ctx); err != nil || h.ID() != gone.ID() {
		t.Fatalf("Head past an unnamed safety checkpoint: %v, %v", h, err)
	}
	e.history.listErr = errors.New("history gone")
	if _, err := e.cps.Head(ctx); !errors.Is(err, e.history.listErr) {
		t.Fatalf("Head when the history fails: %v", err)
	}
	e.history.listErr = nil
	e.repo.sinceErr = errors.New("list gone")
	if _, err := e.cps.Head(ctx); !errors.Is(err, e.repo.sinceErr) {
		t.Fatalf("Head when the list fails: %v", err)
	}
	if _, err := e.cps.Create(ctx, CreateRequest{}); !errors.Is(err, e.repo.sinceErr) {
		t.Fatalf("Create when the head cannot be read: %v", err)
	}
	if _, err := NewReadService(e.ops, nil).Pending(ctx, nil); !errors.Is(err, e.repo.sinceErr) {
		t.Fatalf("Pending when the head cannot be read: %v", err)
	}
	e.repo.sinceErr = nil
}

// Only safety checkpoints: no head (a rollback to a pre_recover of an empty workspace).
func TestNoHeadAmongSafetyCheckpoints(t *testing.T) {
	e := newUseCaseEnv(t)
	e.add(t, checkpoint.PreRecover, "")
	if h, err := e.cps.Head(context.Background()); err != nil || h != nil {
		t.Fatalf("Head among safety checkpoints only: %v, %v", h, err)
	}
}

// add records a checkpoint of typ with parent, a millisecond after every other (the shared clock).
func (e *useCaseEnv) add(t *testing.T, typ checkpoint.Type, parent checkpoint.ID) *checkpoint.Checkpoint {
	t.Helper()
	at := e.clock.Now()
	cp, err := checkpoint.New(checkpoint.Params{ID: ident.New(at), Type: typ, CreatedAt: at, ParentID: parent, Root: tree.Sum([]byte(at.String()))})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.repo.Add(context.Background(), cp); err != nil {
		t.Fatal(err)
	}
	return cp
}
