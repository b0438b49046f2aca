package persistence

import (
	"testing"

	"github.com/planhq/plan/application/oplogtest"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/checkpoint/checkpointtest"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/correction/correctiontest"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/plan/plantest"
)

// The gorm checkpoint repository meets the contract the use cases' fake is held to, on each engine.
func TestCheckpointRepositoryContract(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		checkpointtest.Repository(t, func(t *testing.T) checkpoint.Repository { return NewCheckpoints(e.open(t)) })
	})
}

// The gorm plan repository meets the contract the use cases' fake is held to, on each engine.
func TestPlanRepositoryContract(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		plantest.Repository(t, func(t *testing.T) plan.Repository { return NewPlans(e.open(t)) })
	})
}

// The gorm correction repository meets the contract the use cases' fake is held to, on each engine.
func TestCorrectionRepositoryContract(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		correctiontest.Repository(t, func(t *testing.T) correction.Repository { return NewCorrections(e.open(t)) })
	})
}

// The gorm rollback history meets the contract the use cases' fake is held to, on each engine.
func TestHistoryContract(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		oplogtest.History(t, func(t *testing.T) port.History { return NewHistory(e.open(t)) })
	})
}

// The gorm operation log (a replacing one) meets the contract the use cases' fakes are held to, on
// each engine.
func TestOperationLogContract(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		oplogtest.OperationLog(t, func(t *testing.T) port.OperationLog { return NewOperationLog(e.open(t)) })
	})
}
