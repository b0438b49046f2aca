package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime/debug"

	"github.com/planhq/plan/application/port"
)

// runFunc runs a decision that is a Go function of the host program, as Execute runs a shell
// decision: in the workspace root, output to the log (and live), within the decision's timeout,
// stopped by cancellation. Execute returns only once the function has returned.
func (s *Shell) runFunc(ctx context.Context, c port.Command, logf io.Writer, live io.Writer) port.ExecResult {
	w := logf
	if live != nil {
		w = io.MultiWriter(logf, live)
	}
	fctx, cancel := ctx, context.CancelFunc(func() {})
	if c.Timeout > 0 {
		fctx, cancel = context.WithTimeout(ctx, c.Timeout)
	}
	defer cancel()
	err := callFunc(fctx, c.Func, s.layout.Root, port.DecisionCall{
		ID: c.DecisionID, Attempt: c.Attempt, Env: maps.Clone(c.Env), Log: w,
	})
	var res port.ExecResult
	switch {
	case ctx.Err() != nil:
		res.Interrupted = true
		return res
	case fctx.Err() != nil && errors.Is(fctx.Err(), context.DeadlineExceeded):
		res.TimedOut, res.ExitCode = true, 124 // as timeout(1) reports one
		_, _ = fmt.Fprintf(w, "\nplan: decision timed out after %s\n", c.Timeout)
		return res
	case err == nil:
		return res
	}
	res.ExitCode = 1
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) && coded.ExitCode() != 0 {
		res.ExitCode = coded.ExitCode()
	}
	var p *panicked
	if errors.As(err, &p) {
		res.ExitCode = 2
	}
	_, _ = fmt.Fprintf(w, "plan: decision %s failed: %v\n", c.DecisionID, err)
	return res
}

// panicked is a decision function's panic, kept with its stack.
type panicked struct {
	value any
	stack []byte
}

func (p *panicked) Error() string { return fmt.Sprintf("panic: %v\n%s", p.value, p.stack) }

// callFunc calls fn, turning a panic into an error: a bug in a host's decision fails the decision,
// not the program that records it.
func callFunc(ctx context.Context, fn port.DecisionFunc, dir string, d port.DecisionCall) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicked{value: v, stack: debug.Stack()}
		}
	}()
	return fn.RunDecision(ctx, dir, d)
}
