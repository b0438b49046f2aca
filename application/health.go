package application

import (
	"context"
	"errors"
	"fmt"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
)

// StoreSummary is the store's health in one line, as cheap as `plan status` can afford: its size
// from the index it already holds, and whether the newest checkpoint's tree is there, checked
// without reading its data (doctor and verify read more).
type StoreSummary struct {
	Usage port.StoreUsage
	// Problem says what is wrong ("" when nothing the check sees is).
	Problem string
}

// Summary returns the store's summary; latest is the newest checkpoint (nil when there is none).
// A store that does not answer is a problem to report, not an error: status still shows the rest.
func (s *MaintenanceService) Summary(_ context.Context, latest *checkpoint.Checkpoint) StoreSummary {
	sum := StoreSummary{Usage: s.store.Usage()}
	if latest == nil {
		return sum
	}
	switch err := s.store.CheckObject(latest.Root(), false); {
	case err == nil:
	case errors.Is(err, fault.ErrUnavailable) || errors.Is(err, fault.ErrDenied):
		sum.Problem = fmt.Sprintf("the store did not answer (%v)", err)
	default:
		sum.Problem = fmt.Sprintf("the newest checkpoint %s: %v (plan doctor, plan verify)", latest.ID(), err)
	}
	return sum
}
