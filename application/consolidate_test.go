package application

import (
	"context"
	"errors"
	"testing"

	"github.com/planhq/plan/application/internal/kernel"
	"github.com/planhq/plan/application/port"
)

// Consolidation is housekeeping: it runs only when the store says it is due, only with the lock
// free and nothing pending (a later command does it otherwise), releases the lock it took, and
// reports the store's failure as it is.
func TestConsolidateRunsOnlyWhenDueAndFree(t *testing.T) {
	ctx := context.Background()
	e := newUseCaseEnv(t)
	if _, err := e.ms.Consolidate(ctx); err != nil || e.health.consolidations != 0 || e.l.locks != 0 {
		t.Fatalf("not due: err %v, %d consolidations, %d locks", err, e.health.consolidations, e.l.locks)
	}
	e.health.consolidateDue = true
	e.health.consolidation = port.ConsolidationReport{PacksMerged: 16, PacksWritten: 1}
	rep, err := e.ms.Consolidate(ctx)
	if err != nil || rep.PacksMerged != 16 || e.health.consolidations != 1 {
		t.Fatalf("due: %+v, %v (%d consolidations)", rep, err, e.health.consolidations)
	}
	if e.l.held || e.l.locks != 1 || e.l.unlocks != 1 || e.l.purposes[0] != "consolidate" {
		t.Fatalf("lock: held %v, %d locks, %d unlocks, purposes %v", e.l.held, e.l.locks, e.l.unlocks, e.l.purposes)
	}

	e.l.busy = true
	if _, err := e.ms.Consolidate(ctx); err != nil || e.health.consolidations != 1 {
		t.Fatalf("lock taken: %v, %d consolidations", err, e.health.consolidations)
	}
	e.l.busy = false

	e.j.op = &port.Operation{ID: "op1", Kind: "rollback"}
	if _, err := e.ms.Consolidate(ctx); err != nil || e.health.consolidations != 1 || e.l.held {
		t.Fatalf("pending operation: %v, %d consolidations, held %v", err, e.health.consolidations, e.l.held)
	}
	e.j.op = nil
	e.j.pendingErr = errors.New("journal unreadable")
	if _, err := e.ms.Consolidate(ctx); err == nil || e.l.held {
		t.Fatalf("journal error: %v, held %v", err, e.l.held)
	}
	e.j.pendingErr = nil

	e.l.err = errors.New("lock file unreadable")
	if _, err := e.ms.Consolidate(ctx); err == nil || e.health.consolidations != 1 {
		t.Fatalf("lock error: %v", err)
	}
	e.l.err = nil

	e.health.consolidateErr = errors.New("pack damaged")
	if _, err := e.ms.Consolidate(ctx); err == nil || e.l.held {
		t.Fatalf("store error: %v, held %v", err, e.l.held)
	}

	// Inside a command that holds the lock, it consolidates under that lock.
	locked := kernel.TestLocked(ctx, "run")
	e.health.consolidateErr = nil
	locks := e.l.locks
	if _, err := e.ms.Consolidate(locked); err != nil || e.l.locks != locks {
		t.Fatalf("under the caller's lock: %v, %d -> %d locks", err, locks, e.l.locks)
	}
}
