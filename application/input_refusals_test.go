package application

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
)

// Bad input is refused as invalid input before the use case waits for the workspace lock or reads
// the workspace, so a typo never blocks behind (or recovers) another command.
func TestBadInputIsRefusedBeforeTheLock(t *testing.T) {
	e := newUseCaseEnv(t)
	cp := e.checkpointAt(t, baseTime, e.store.put(nil), checkpoint.Stats{})
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"label key": func() error {
			_, err := e.cps.Create(ctx, CreateRequest{Type: checkpoint.Manual, Labels: map[string]string{"Bad Key": "v"}})
			return err
		},
		"label value": func() error {
			_, err := e.cps.Create(ctx, CreateRequest{Type: checkpoint.Manual, Labels: map[string]string{"k": "a\nb"}})
			return err
		},
		"restore mode": func() error {
			_, err := e.cps.Rollback(ctx, RollbackRequest{Ref: string(cp.ID()), Mode: "everything"})
			return err
		},
		"archive keep": func() error {
			_, err := e.ms.PruneArchives(ctx, PruneRequest{Keep: -1})
			return err
		},
		"archive age": func() error {
			_, err := e.ms.PruneArchives(ctx, PruneRequest{OlderThan: -time.Hour})
			return err
		},
	} {
		locks := e.l.locks
		if err := call(); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%s: err = %v, want invalid input", name, err)
		}
		if e.l.locks != locks {
			t.Errorf("%s: refused input took the lock", name)
		}
	}
	if len(e.snap.live) != 0 || e.snap.snaps != 0 || len(e.exec.calls) != 0 {
		t.Error("refused input read the workspace or ran something")
	}
}

// plan exec into a plan that does not exist yet starts it; a blank name cannot start one.
func TestExecRefusesABlankPlanName(t *testing.T) {
	e := newUseCaseEnv(t)
	if _, err := e.ps.Exec(context.Background(), ExecRequest{ID: "x", Plan: " ", Command: "true"}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("err = %v", err)
	}
	if len(e.exec.calls) != 0 || e.plans.saves != 0 || e.l.held {
		t.Error("a refused exec ran, saved or kept the lock")
	}
}

func TestDiffAgainstAnUnknownCheckpoint(t *testing.T) {
	e := newUseCaseEnv(t)
	cp := e.checkpointAt(t, baseTime, e.store.put(nil), checkpoint.Stats{})
	if _, err := e.cps.Diff(context.Background(), string(cp.ID()), "ffffffffff", nil); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("err = %v", err)
	}
}

func TestPruneArchivesPropagatesFailures(t *testing.T) {
	e := newUseCaseEnv(t)
	e.l.err = fault.Conflict("busy")
	if _, err := e.ms.PruneArchives(context.Background(), PruneRequest{Keep: 1}); !errors.Is(err, fault.ErrConflict) {
		t.Errorf("busy: %v", err)
	}
	e.l.err = nil
	e.corrections.listErr = errors.New("db down")
	if _, err := e.ms.PruneArchives(underLock(), PruneRequest{Keep: 1}); !errors.Is(err, e.corrections.listErr) {
		t.Errorf("corrections unreadable: %v", err)
	}
	if len(e.archiver.removed) != 0 {
		t.Error("archives removed after a failure")
	}
}
