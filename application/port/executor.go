package port

import (
	"context"
	"io"
	"time"
)

// DecisionFunc is a decision a host program implements in Go instead of a shell command. It runs
// exactly where a shell decision runs, so it gets the same pre_decision checkpoint, running record,
// outcome (result tree, artifacts, exit code), retries, on_failure policy, correction and revert.
//
// RunDecision changes the workspace rooted at dir. Its result is the attempt's outcome:
//   - nil: succeeded (exit code 0);
//   - an error: failed; its message goes to the attempt's log, and its exit code is the error's
//     ExitCode() when it has that method (as *exec.ExitError has), else 1;
//   - returning once ctx is done: interrupted (cancelled), or timed out (the decision's timeout; exit
//     code 124, as timeout(1) reports).
//
// A panic is recovered and recorded as a failure (exit code 2) with its stack in the log. A
// function must stop changing the workspace when it returns: plan records the outcome then.
type DecisionFunc interface {
	RunDecision(ctx context.Context, dir string, d DecisionCall) error
}

// DecisionCall is the decision a DecisionFunc runs.
type DecisionCall struct {
	ID      string
	Attempt int
	Env     map[string]string
	// Log is the attempt's log (`plan log ID`), also shown live when the caller asked for it.
	Log io.Writer
}

// Func adapts a plain function to DecisionFunc.
type Func func(ctx context.Context, dir string, d DecisionCall) error

// RunDecision calls f.
func (f Func) RunDecision(ctx context.Context, dir string, d DecisionCall) error {
	return f(ctx, dir, d)
}

// Command is one decision execution for the Executor.
type Command struct {
	DecisionID string
	Attempt    int
	Script     string // run by /bin/sh -c in the workspace root
	Env        map[string]string
	Timeout    time.Duration // 0: none
	LogPath    string        // relative to the state directory
	// Token is put in the processes' environment (PLAN_ATTEMPT_TOKEN) so Reap can find them.
	Token string
	// Append adds to the log instead of replacing it (a decision's validation, after its output);
	// Banner, when set, is a line written to the log (and live) first.
	Append bool
	Banner string
	// Func, when set, is the decision as Go code (a DecisionFunc the host program provides): it is
	// called with the workspace root instead of running Script, with the same log, live output,
	// environment, timeout and cancellation.
	Func DecisionFunc
}

// ExecResult is how a command ended.
type ExecResult struct {
	ExitCode    int
	TimedOut    bool
	Interrupted bool // the context was cancelled (a signal); the process group was stopped
}

// Executor runs decisions' commands as real processes, keeping their output in the log.
type Executor interface {
	// Execute runs c, writes its output to its log and to live (when not nil), and returns once the
	// process (and its process group) is gone. An error means it could not be started.
	Execute(ctx context.Context, c Command, live io.Writer) (ExecResult, error)
	// OpenLog opens a recorded log.
	OpenLog(path string) (io.ReadCloser, error)
	// Reap stops every process still carrying token (left behind by a plan that was killed) and
	// returns how many it stopped.
	Reap(token string) (int, error)
}
