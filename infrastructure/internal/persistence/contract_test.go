package persistence

import (
	"testing"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/checkpoint/checkpointtest"
)

// The gorm checkpoint repository meets the contract the use cases' fake is held to, on each engine.
func TestCheckpointRepositoryContract(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		checkpointtest.Repository(t, func(t *testing.T) checkpoint.Repository { return NewCheckpoints(e.open(t)) })
	})
}
