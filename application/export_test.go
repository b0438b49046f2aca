package application

import "github.com/planhq/plan/application/port"

// The fakes the contract suites of application/oplogtest run against, for the external test
// package (oplogtest imports application, so application's own tests cannot import it).

// NewFakeHistory returns the use case tests' in-memory History.
func NewFakeHistory() port.History { return &fakeHistory{recs: map[string]port.HistoryRecord{}} }

// NewFakeOperationLog returns the use case tests' in-memory OperationLog.
func NewFakeOperationLog() port.OperationLog { return &fakeOpLog{} }

// NewFakeReplacingOperationLog returns the in-memory OperationLog that also replaces entries.
func NewFakeReplacingOperationLog() port.OperationLog { return &replacingLog{tx: &fakeTx{}} }
