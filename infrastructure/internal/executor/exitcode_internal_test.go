package executor

import (
	"errors"
	"testing"
)

// Without a process state (the shell never reported one) the exit code is unknown, -1, never 0: a
// decision whose outcome plan did not see must not be recorded as a success.
func TestExitCodeWithoutProcessStateIsUnknown(t *testing.T) {
	if got := exitCode(nil, nil); got != -1 {
		t.Fatalf("exitCode(nil, nil) = %d, want -1", got)
	}
	if got := exitCode(nil, errors.New("wait failed")); got != -1 {
		t.Fatalf("exitCode(nil, err) = %d, want -1", got)
	}
}
