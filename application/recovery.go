package application

import (
	"context"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
)

// Recover finishes or undoes the operation a crash left behind (`plan recover`), under the
// workspace lock, recording first any work done since the crash (see the kernel's guard).
func (s *MaintenanceService) Recover(ctx context.Context) (RecoverResult, error) {
	return s.guard.Recover(ctx)
}

// RecoverIfIdle is what a read-only command runs first: it never acts on an interrupted operation
// (RecoverResult.Pending reports it), and when the lock is free it runs the repairs (closing the
// attempts a killed run left running), so that no command shows that stale state.
func (s *MaintenanceService) RecoverIfIdle(ctx context.Context) (RecoverResult, error) {
	return s.guard.RecoverIfIdle(ctx)
}

// Interrupted returns the operation a crash interrupted, nil when there is none.
func (s *MaintenanceService) Interrupted() (*port.Operation, error) { return s.guard.Pending() }

// OnRecover installs what hears of every recovery a use case performs as it takes the lock, so
// that the caller can tell the user an interrupted operation was finished; nil hears nothing. It
// holds for every service of the workspace (they share one guard).
func (s *MaintenanceService) OnRecover(f func(RecoverResult)) { s.guard.OnRecover = f }

// Heal retires damaged or missing copies of stored objects that have an intact copy, under the
// workspace lock (`plan verify --repair`).
func (s *MaintenanceService) Heal(ctx context.Context) (port.HealReport, error) {
	if s.healer == nil {
		return port.HealReport{}, fault.Unavailable("this workspace's services were built without a store repair")
	}
	ctx, release, err := s.guard.Enter(ctx, "verify --repair")
	if err != nil {
		return port.HealReport{}, err
	}
	defer release()
	return s.healer.Heal(ctx)
}
