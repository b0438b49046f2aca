package application

import (
	"context"
	"errors"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

type fakeHealer struct {
	locked bool // whether the lock was held when Heal ran
	l      *fakeLocker
	rep    port.HealReport
	err    error
}

func (h *fakeHealer) Heal(context.Context) (port.HealReport, error) {
	h.locked = h.l.held
	return h.rep, h.err
}

// verify --repair heals under the workspace lock, returns what the repair did and its failure, and
// is refused by services built without a repair, or when the lock cannot be taken.
func TestHealRunsTheRepairUnderTheLock(t *testing.T) {
	e := newUseCaseEnv(t)
	h := &fakeHealer{l: e.l, rep: port.HealReport{Healed: []tree.Hash{tree.Sum([]byte("x"))}, PacksRewritten: 1}}
	ms := NewMaintenanceService(MaintenanceParams{Ops: e.ops, Store: e.health, Settings: &e.settings, Healer: h})
	rep, err := ms.Heal(context.Background())
	if err != nil || !h.locked || len(rep.Healed) != 1 || rep.PacksRewritten != 1 || e.l.held {
		t.Fatalf("%+v, %v; healed under the lock %v, lock still held %v", rep, err, h.locked, e.l.held)
	}
	h.err = errors.New("disk gone")
	if _, err := ms.Heal(context.Background()); !errors.Is(err, h.err) {
		t.Errorf("the repair's failure: %v", err)
	}
	if _, err := e.ms.Heal(context.Background()); !errors.Is(err, fault.ErrUnavailable) {
		t.Errorf("without a repair: %v", err)
	}
	e.l.err = fault.Conflict("the workspace is busy")
	h.err, h.locked = nil, false
	if _, err := ms.Heal(context.Background()); !errors.Is(err, fault.ErrConflict) || h.locked {
		t.Errorf("with the lock refused: %v (repair ran: %v)", err, h.locked)
	}
}

// The recovery use cases are the guard's: an interrupted operation is reported, then recovered,
// and whoever listens hears of a recovery a use case performs as it takes the lock.
func TestRecoveryUseCases(t *testing.T) {
	e := newUseCaseEnv(t)
	if op, err := e.ms.Interrupted(); op != nil || err != nil {
		t.Fatalf("nothing interrupted: %+v, %v", op, err)
	}
	cp, _ := e.cps.Create(context.Background(), CreateRequest{})
	e.j.op = &port.Operation{ID: "0123456789abcdef01234567", Kind: kindRollback, Direction: port.Backward,
		Source: cp.Root(), Target: cp.Root(), TargetCheckpoint: cp.ID(), BackupCheckpoint: cp.ID()}
	if op, err := e.ms.Interrupted(); op == nil || err != nil {
		t.Fatalf("interrupted: %+v, %v", op, err)
	}
	if res, err := e.ms.RecoverIfIdle(context.Background()); err != nil || res.Pending == nil || res.Recovered {
		t.Fatalf("a read-only command's recovery acts on nothing: %+v, %v", res, err)
	}
	var heard []RecoverResult
	e.ms.OnRecover(func(r RecoverResult) { heard = append(heard, r) })
	if _, err := e.cps.Create(context.Background(), CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	if len(heard) != 1 || !heard[0].Recovered || heard[0].Outcome != "rolled_back" || e.j.op != nil {
		t.Fatalf("heard %+v; journal %+v", heard, e.j.op)
	}
	e.ms.OnRecover(nil)
	if res, err := e.ms.Recover(context.Background()); err != nil || res.Recovered {
		t.Errorf("nothing left to recover: %+v, %v", res, err)
	}
}
