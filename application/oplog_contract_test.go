package application_test

import (
	"testing"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/application/oplogtest"
	"github.com/planhq/plan/application/port"
)

// The in-memory rollback history the use case tests rely on behaves as the real one does.
func TestFakeHistoryContract(t *testing.T) {
	oplogtest.History(t, func(*testing.T) port.History { return application.NewFakeHistory() })
}

// The in-memory operation logs the use case tests rely on behave as the real one does.
func TestFakeOperationLogContract(t *testing.T) {
	t.Run("log", func(t *testing.T) {
		oplogtest.OperationLog(t, func(*testing.T) port.OperationLog { return application.NewFakeOperationLog() })
	})
	t.Run("replacing log", func(t *testing.T) {
		oplogtest.OperationLog(t, func(*testing.T) port.OperationLog { return application.NewFakeReplacingOperationLog() })
	})
}
