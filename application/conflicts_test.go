package application

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
)

// surgicalWith adds a finished surgical correction of decision d that left conflicts.
func (e *useCaseEnv) surgicalWith(t *testing.T, id, d string, conflicts ...correction.Conflict) {
	t.Helper()
	c, err := correction.NewSurgical(correction.Params{
		ID: id, DecisionID: d, Reason: "r", Scope: []correction.Item{{DecisionID: d, Attempt: 1, CheckpointID: "cp", StartedAt: baseTime}},
		SafetyCheckpointID: "s", RollbackCheckpointID: "r", ArchiveDir: "archive/" + id, CreatedAt: baseTime, Conflicts: conflicts,
	}, baseTime)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.corrections.Add(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

const corrA, corrB = "0195517866c0f84fd9822e2c", "0195517866c0f84fd9822e2d"

func TestConflictsAndResolve(t *testing.T) {
	e := newUseCaseEnv(t)
	e.surgicalWith(t, corrA, "b",
		correction.Conflict{Path: "cfg.txt", Why: "changed since", Written: "cfg.txt"},
		correction.Conflict{Path: "gone.txt", Why: "deleted since", Written: "gone.txt.reverted"})
	e.surgicalWith(t, corrB, "c", correction.Conflict{Path: "big.txt", Why: "changed since", Written: "big.txt"})
	e.snap.content["cfg.txt"] = []byte("a\n<<<<<<< live\nx\n=======\ny\n>>>>>>> reverted\n")
	e.snap.content["big.txt"] = []byte(strings.Repeat("z", 70_000) + "<<<<<<< not at a line start\n")
	open, err := e.cs.Conflicts(context.Background())
	if err != nil || len(open) != 3 {
		t.Fatalf("%+v, %v", open, err)
	}
	// Markers left: refused, nothing marked.
	_, err = e.cs.Resolve(context.Background(), ResolveRequest{Paths: []string{"gone.txt", "cfg.txt"}})
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "cfg.txt still holds conflict markers (line 2)") {
		t.Fatalf("markers left: %v", err)
	}
	if c, _ := e.corrections.Get(context.Background(), corrA); len(c.Unresolved()) != 2 {
		t.Fatal("a refused resolve marked something")
	}
	// A long line without markers at its start, and a conflict whose file is beside it: resolved.
	got, err := e.cs.Resolve(context.Background(), ResolveRequest{Paths: []string{"gone.txt", "big.txt"}})
	if err != nil || len(got) != 2 || got[0].Conflict.ResolvedAt.IsZero() {
		t.Fatalf("%+v, %v", got, err)
	}
	if c, _ := e.corrections.Get(context.Background(), corrB); c.NeedsAttention() || c.ShownStatus() != "succeeded" {
		t.Error("c's correction still needs attention")
	}
	// --force marks it as it is.
	if _, err := e.cs.Resolve(context.Background(), ResolveRequest{Paths: []string{"cfg.txt"}, Force: true}); err != nil {
		t.Fatal(err)
	}
	if open, _ := e.cs.Conflicts(context.Background()); len(open) != 0 {
		t.Errorf("left: %+v", open)
	}
	if e.l.held {
		t.Error("the lock was left held")
	}
}

func TestResolveRefusals(t *testing.T) {
	e := newUseCaseEnv(t)
	e.surgicalWith(t, corrA, "b", correction.Conflict{Path: "cfg.txt", Why: "w", Written: "cfg.txt"})
	for _, c := range []struct {
		req  ResolveRequest
		kind error
		msg  string
	}{
		{ResolveRequest{}, fault.ErrInvalid, "name the paths"},
		{ResolveRequest{Paths: []string{"../x"}}, fault.ErrInvalid, ""},
		{ResolveRequest{Paths: []string{"other.txt"}}, fault.ErrNotFound, "no unresolved conflict at other.txt"},
	} {
		if _, err := e.cs.Resolve(context.Background(), c.req); !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: %v", c.req, err)
		}
	}
	// The file is gone (or no longer a regular file): the user resolved it so.
	if _, err := e.cs.Resolve(context.Background(), ResolveRequest{Paths: []string{"cfg.txt"}}); err == nil {
		t.Error("a file the fake cannot open: want its error")
	}
	e2 := newUseCaseEnv(t)
	e2.surgicalWith(t, corrA, "b", correction.Conflict{Path: "cfg.txt", Why: "w", Written: "cfg.txt"})
	e2.snap.openErr = errors.Join(fault.Invalid("not a regular file"))
	if _, err := e2.cs.Resolve(context.Background(), ResolveRequest{Paths: []string{"cfg.txt"}}); err != nil {
		t.Errorf("a file that is no longer regular: %v", err)
	}
	e3 := newUseCaseEnv(t)
	e3.surgicalWith(t, corrA, "b", correction.Conflict{Path: "cfg.txt", Why: "w", Written: "cfg.txt"})
	e3.snap.content["cfg.txt"] = []byte("fine\n")
	e3.corrections.updateErr = errors.New("db down")
	if _, err := e3.cs.Resolve(context.Background(), ResolveRequest{Paths: []string{"cfg.txt"}}); !errors.Is(err, e3.corrections.updateErr) {
		t.Errorf("update fails: %v", err)
	}
	e3.corrections.listErr = errors.New("db down")
	if _, err := e3.cs.Resolve(context.Background(), ResolveRequest{Paths: []string{"cfg.txt"}}); !errors.Is(err, e3.corrections.listErr) {
		t.Errorf("list fails: %v", err)
	}
	e3.l.err = fault.Conflict("busy")
	if _, err := e3.cs.Resolve(context.Background(), ResolveRequest{Paths: []string{"cfg.txt"}}); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("busy: %v", err)
	}
}

func TestConflictsListFailsAndMarkerReadFails(t *testing.T) {
	e := newUseCaseEnv(t)
	e.corrections.listErr = errors.New("db down")
	if _, err := e.cs.Conflicts(context.Background()); !errors.Is(err, e.corrections.listErr) {
		t.Errorf("list: %v", err)
	}
	e2 := newUseCaseEnv(t)
	e2.surgicalWith(t, corrA, "b", correction.Conflict{Path: "cfg.txt", Why: "w", Written: "cfg.txt"})
	e2.snap.openErr = errors.New("permission denied")
	if _, err := e2.cs.Resolve(context.Background(), ResolveRequest{Paths: []string{"cfg.txt"}}); !errors.Is(err, e2.snap.openErr) || !strings.Contains(err.Error(), "read cfg.txt for conflict markers") {
		t.Errorf("open fails: %v", err)
	}
	if c, _ := e2.corrections.Get(context.Background(), corrA); !c.NeedsAttention() {
		t.Error("a failed resolve marked the conflict")
	}
}
