package application

import (
	"testing"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/checkpoint/checkpointtest"
)

// The in-memory checkpoint repository the use case tests rely on behaves as the real one does.
func TestFakeCheckpointRepositoryContract(t *testing.T) {
	checkpointtest.Repository(t, func(*testing.T) checkpoint.Repository { return newFakeRepo() })
}
