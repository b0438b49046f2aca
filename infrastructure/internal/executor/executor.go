// Package executor runs decisions as real processes: /bin/sh -c in the workspace root, in a process
// group of their own, with the decision's environment and timeout, output kept in .plan/logs/.
//
// Invariants:
//   - Execute returns only after the shell and every process of its group are gone (on timeout or
//     cancellation the group gets SIGTERM, then SIGKILL after Grace), so a decision never keeps
//     changing the workspace after plan has recorded its outcome;
//   - the shell dies with plan (Pdeathsig), so a killed plan does not leave it running unobserved;
//   - log paths are relative to .plan/ and validated, so a stored path cannot point elsewhere;
//   - a decision that is a Go function of the host (Command.Func) is called in-process with the
//     same log, live output, timeout and cancellation, and Execute returns only once it returned;
//     its panic is a failed attempt, never the host's crash.
package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// Shell is the Executor.
type Shell struct {
	layout workspace.Layout
	// Grace is how long a stopped decision gets between SIGTERM and SIGKILL.
	Grace time.Duration
}

// NewShell returns the executor for the workspace in l.
func NewShell(l workspace.Layout) *Shell { return &Shell{layout: l, Grace: 3 * time.Second} }

var _ port.Executor = (*Shell)(nil)

func (s *Shell) logFile(rel string) (string, error) {
	clean := filepath.Clean(filepath.FromSlash(rel))
	if filepath.IsAbs(clean) || clean == "." || strings.HasPrefix(clean, "..") || !strings.HasPrefix(clean, "logs"+string(filepath.Separator)) {
		return "", fault.Integrity("log path %q is not inside the state directory's logs/", rel)
	}
	return filepath.Join(s.layout.Home(), clean), nil
}

// Execute runs c.
func (s *Shell) Execute(ctx context.Context, c port.Command, live io.Writer) (port.ExecResult, error) {
	path, err := s.logFile(c.LogPath)
	if err != nil {
		return port.ExecResult{}, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return port.ExecResult{}, err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if c.Append {
		flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND
	}
	logf, err := os.OpenFile(path, flags, 0o600) // #nosec -- validated above
	if err != nil {
		return port.ExecResult{}, fmt.Errorf("create log: %w", err)
	}
	defer func() { _ = logf.Close() }()
	if c.Banner != "" {
		if _, err := fmt.Fprintf(logf, "--- %s ---\n", c.Banner); err != nil {
			return port.ExecResult{}, fmt.Errorf("write log: %w", err)
		}
		if live != nil {
			_, _ = fmt.Fprintf(live, "--- %s ---\n", c.Banner)
		}
	}

	if c.Func != nil {
		return s.runFunc(ctx, c, logf, live), nil
	}
	cmd := exec.Command("/bin/sh", "-c", c.Script) // #nosec -- running the user's decision is the point
	cmd.Dir = s.layout.Root
	cmd.Env = os.Environ()
	for k, v := range c.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// plan's own variables come last: with duplicate keys the last one wins, so a decision's env
	// can never replace the token Reap relies on.
	cmd.Env = append(cmd.Env,
		"PLAN_WORKSPACE="+s.layout.Root,
		"PLAN_DECISION_ID="+c.DecisionID,
		fmt.Sprintf("PLAN_ATTEMPT=%d", c.Attempt),
		TokenVar+"="+c.Token,
	)
	cmd.Stdin = nil
	if live != nil {
		w := io.MultiWriter(logf, live)
		cmd.Stdout, cmd.Stderr = w, w
		// Output goes through pipes here; do not wait forever for grandchildren holding them.
		cmd.WaitDelay = s.Grace
	} else {
		cmd.Stdout, cmd.Stderr = logf, logf
	}
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return port.ExecResult{}, fmt.Errorf("start /bin/sh: %w", err)
	}
	// Where the process table cannot be searched by environment (no /proc), Reap finds the group
	// through this record; it goes once the decision is over.
	group := s.groupFile(c.Token)
	_ = os.MkdirAll(filepath.Dir(group), 0o750)
	_ = os.WriteFile(group, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	defer func() { _ = os.Remove(group) }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var res port.ExecResult
	var waitErr error
	select {
	case waitErr = <-done:
	case <-ctx.Done():
		res.Interrupted = true
		waitErr = s.stop(cmd, done)
	case <-timeout:
		res.TimedOut = true
		_, _ = fmt.Fprintf(logf, "\nplan: decision timed out after %s; stopping it\n", c.Timeout)
		waitErr = s.stop(cmd, done)
	}
	// Whatever the shell did, its group must be gone before the outcome is recorded.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	res.ExitCode = exitCode(cmd.ProcessState, waitErr)
	return res, nil
}

// stop sends SIGTERM to the group, then SIGKILL after the grace period, and waits for the shell.
func (s *Shell) stop(cmd *exec.Cmd, done <-chan error) error {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-time.After(s.Grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		return <-done
	}
}

// exitCode is the shell's exit status: 128+N when signal N killed it, -1 when there is no process
// state. Wait's error adds nothing: an *exec.ExitError wraps this same ProcessState, and
// ps.ExitCode() is -1 only for a process that has not exited, which Wait never reports.
func exitCode(ps *os.ProcessState, _ error) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// TokenVar is the environment variable that tags every process of one attempt.
const TokenVar = "PLAN_ATTEMPT_TOKEN"

// Reap stops every process whose environment carries token: what a killed plan's decision left
// running (the shell dies with plan, its children do not). Matching the token rather than a
// process group survives PID reuse: an unrelated process never carries it.
func (s *Shell) Reap(token string) (int, error) {
	if token == "" {
		return 0, nil
	}
	want := []byte(TokenVar + "=" + token + "\x00")
	killed := 0
	for range 50 { // processes may fork while being stopped; repeat until none is left
		pids, err := s.tagged(token, want)
		if err != nil || len(pids) == 0 {
			if err == nil {
				_ = os.Remove(s.groupFile(token)) // nothing is left of the attempt
			}
			return killed, err
		}
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return killed, fmt.Errorf("processes of attempt %s keep reappearing", token)
}

// groupFile records the process group of the attempt token names.
func (s *Shell) groupFile(token string) string {
	sum := sha256.Sum256([]byte(token))
	return filepath.Join(s.layout.Logs(), "groups", hex.EncodeToString(sum[:8]))
}

// OpenLog opens a recorded log.
func (s *Shell) OpenLog(rel string) (io.ReadCloser, error) {
	path, err := s.logFile(rel)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path) // #nosec -- validated above
	if errors.Is(err, os.ErrNotExist) {
		return nil, fault.NotFound("log %s is missing", rel)
	}
	return f, err
}
