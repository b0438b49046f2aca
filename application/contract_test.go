package application

import (
	"testing"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/checkpoint/checkpointtest"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/correction/correctiontest"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/plan/plantest"
)

// The in-memory checkpoint repository the use case tests rely on behaves as the real one does.
func TestFakeCheckpointRepositoryContract(t *testing.T) {
	checkpointtest.Repository(t, func(*testing.T) checkpoint.Repository { return newFakeRepo() })
}

// The in-memory plan repository behaves as the real one does.
func TestFakePlanRepositoryContract(t *testing.T) {
	plantest.Repository(t, func(*testing.T) plan.Repository { return newFakePlans() })
}

// The in-memory correction repository behaves as the real one does.
func TestFakeCorrectionRepositoryContract(t *testing.T) {
	correctiontest.Repository(t, func(*testing.T) correction.Repository { return newFakeCorrections() })
}
