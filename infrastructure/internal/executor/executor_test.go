package executor_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/executor"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

type env struct {
	layout workspace.Layout
	shell  *executor.Shell
}

func newEnv(t *testing.T) env {
	t.Helper()
	l, err := workspace.NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	sh := executor.NewShell(l)
	sh.Grace = 300 * time.Millisecond
	return env{layout: l, shell: sh}
}

func (e env) path(rel string) string { return filepath.Join(e.layout.Root, rel) }

func (e env) read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(e.path(rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (e env) log(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.layout.State(), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (e env) exec(t *testing.T, ctx context.Context, c port.Command, live io.Writer) port.ExecResult {
	t.Helper()
	if c.LogPath == "" {
		c.LogPath = "logs/" + t.Name() + ".log"
	}
	if c.DecisionID == "" {
		c.DecisionID = "d"
	}
	res, err := e.shell.Execute(ctx, c, live)
	if err != nil {
		t.Fatalf("execute %q: %v", c.Script, err)
	}
	return res
}

// pidFrom reads a PID a script wrote into the workspace, waiting briefly for it.
func (e env) pidFrom(t *testing.T, rel string) int {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		b, err := os.ReadFile(e.path(rel))
		if s := strings.TrimSpace(string(b)); err == nil && s != "" {
			pid, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("pid file %s: %q", rel, s)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid file %s never appeared", rel)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid is a live (not zombie) process. A zombie has stopped running; whether
// it was reaped depends on the container's init, not on plan.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	state := s[i+2]
	return state != 'Z' && state != 'X'
}

// requireGone fails unless pid stops existing very soon: the SIGKILL was sent before Execute
// returned, so the kernel only needs to finish delivering it.
func requireGone(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("%s (pid %d) is still running after Execute returned", what, pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// cancelWhen returns a context that is cancelled once the script has created rel (it signals its
// readiness that way), and the time of the cancellation.
func (e env) cancelWhen(t *testing.T, rel string) (context.Context, <-chan time.Time) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	at := make(chan time.Time, 1)
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(e.path(rel)); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		at <- time.Now()
		cancel()
	}()
	return ctx, at
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for script, want := range map[string]int{
		"true":                       0,
		"exit 3":                     3,
		"false":                      1,
		"no-such-command-plan-test":  127,
		"kill -KILL $$":              128 + 9,
		"kill -USR1 $$":              128 + 10,
		"kill -TERM $$; sleep 1":     128 + 15,
		"echo x; exit 255":           255,
		"(exit 4); echo after; true": 0,
	} {
		res := e.exec(t, context.Background(), port.Command{Script: script}, nil)
		if res.ExitCode != want || res.TimedOut || res.Interrupted {
			t.Errorf("%q: %+v, want exit code %d", script, res, want)
		}
	}
}

func TestEnvironmentAndDirectory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := port.Command{
		DecisionID: "build-1",
		Attempt:    3,
		Token:      "tok-123",
		Env:        map[string]string{"MODE": "fast", "SPACED": "a b  c"},
		Script: `printf '%s|%s|%s|%s|%s|%s|%s\n' "$PLAN_DECISION_ID" "$PLAN_ATTEMPT" "$PLAN_ATTEMPT_TOKEN" ` +
			`"$MODE" "$SPACED" "$PLAN_WORKSPACE" "$(pwd)" > out.txt`,
	}
	if res := e.exec(t, context.Background(), c, nil); res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, e.log(t, "logs/"+t.Name()+".log"))
	}
	root := e.layout.Root
	want := strings.Join([]string{"build-1", "3", "tok-123", "fast", "a b  c", root, root}, "|") + "\n"
	if got := e.read(t, "out.txt"); got != want {
		t.Fatalf("command saw\n%q\nwant\n%q", got, want)
	}
}

func TestEnvInheritsAndOverridesProcessEnvironment(t *testing.T) {
	// Not parallel: t.Setenv.
	t.Setenv("PLAN_TEST_INHERITED", "from-parent")
	t.Setenv("PLAN_TEST_OVERRIDDEN", "parent")
	e := newEnv(t)
	c := port.Command{
		Env:    map[string]string{"PLAN_TEST_OVERRIDDEN": "decision"},
		Script: `echo "$PLAN_TEST_INHERITED $PLAN_TEST_OVERRIDDEN" > out.txt`,
	}
	e.exec(t, context.Background(), c, nil)
	if got := e.read(t, "out.txt"); got != "from-parent decision\n" {
		t.Fatalf("got %q", got)
	}
}

// The token is how Reap finds an attempt's processes; a decision's env must not be able to hide
// them by overriding it.
func TestDecisionEnvCannotOverrideToken(t *testing.T) {
	e := newEnv(t)
	c := port.Command{
		Token:  "real-token",
		Env:    map[string]string{executor.TokenVar: "fake", "PLAN_DECISION_ID": "fake"},
		Script: `echo "$PLAN_ATTEMPT_TOKEN $PLAN_DECISION_ID" > out.txt`,
	}
	e.exec(t, context.Background(), c, nil)
	if got := e.read(t, "out.txt"); got != "real-token d\n" {
		t.Fatalf("command saw %q, want the real token and decision ID", got)
	}
}

func TestOutputGoesToLogAndLive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := port.Command{Script: "echo to-stdout; echo to-stderr >&2; printf 'no newline'", LogPath: "logs/sub/dir/a.log"}
	var live bytes.Buffer
	res := e.exec(t, context.Background(), c, &live)
	if res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	want := "to-stdout\nto-stderr\nno newline"
	if got := e.log(t, "logs/sub/dir/a.log"); got != want {
		t.Fatalf("log %q, want %q", got, want)
	}
	if live.String() != want {
		t.Fatalf("live %q, want %q", live.String(), want)
	}
	st, err := os.Stat(filepath.Join(e.layout.State(), "logs/sub/dir/a.log"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		t.Fatalf("log mode %v: output may hold secrets and must not be world readable", st.Mode().Perm())
	}

	// The same log path again: the log holds only the new attempt's output.
	e.exec(t, context.Background(), port.Command{Script: "echo second", LogPath: "logs/sub/dir/a.log"}, nil)
	if got := e.log(t, "logs/sub/dir/a.log"); got != "second\n" {
		t.Fatalf("rewritten log %q", got)
	}

	rc, err := e.shell.OpenLog("logs/sub/dir/a.log")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(rc)
	if err != nil || string(b) != "second\n" {
		t.Fatalf("OpenLog read %q, %v", b, err)
	}
}

func TestTimeoutStopsWholeProcessGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := port.Command{
		Script:  "sleep 30 & echo $! > child.pid; echo $$ > shell.pid; wait",
		Timeout: time.Second, // long enough for the shell to start even on a loaded machine
	}
	start := time.Now()
	res := e.exec(t, context.Background(), c, nil)
	elapsed := time.Since(start)
	if !res.TimedOut || res.Interrupted {
		t.Fatalf("%+v, want timed out", res)
	}
	if res.ExitCode != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit code %d, want %d (SIGTERM)", res.ExitCode, 128+int(syscall.SIGTERM))
	}
	if elapsed < time.Second || elapsed > 6*time.Second {
		t.Fatalf("took %v for a 1s timeout", elapsed)
	}
	requireGone(t, e.pidFrom(t, "shell.pid"), "the shell")
	requireGone(t, e.pidFrom(t, "child.pid"), "the background child")
	if got := e.log(t, "logs/"+t.Name()+".log"); !strings.Contains(got, "plan: decision timed out after 1s") {
		t.Fatalf("log does not say it timed out: %q", got)
	}
}

func TestGroupKilledEvenWhenShellExitsOnTerm(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// The child ignores SIGTERM and outlives the shell: only the final SIGKILL to the group stops it.
	c := port.Command{
		Script: "(trap '' TERM; echo > trapped; exec sleep 30) & echo $! > child.pid; " +
			"while [ ! -f trapped ]; do sleep 0.01; done; echo > ready; wait",
	}
	ctx, _ := e.cancelWhen(t, "ready")
	res := e.exec(t, ctx, c, nil)
	if !res.Interrupted || res.ExitCode != 128+int(syscall.SIGTERM) {
		t.Fatalf("%+v, want interrupted, the shell ended by SIGTERM", res)
	}
	requireGone(t, e.pidFrom(t, "child.pid"), "the TERM-ignoring child")
}
func TestBackgroundChildKilledAfterNormalExit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := port.Command{Script: "sleep 30 & echo $! > child.pid; exit 0"}
	start := time.Now()
	res := e.exec(t, context.Background(), c, nil)
	if res.ExitCode != 0 || res.TimedOut || res.Interrupted {
		t.Fatalf("%+v", res)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("Execute waited for the background child")
	}
	requireGone(t, e.pidFrom(t, "child.pid"), "the background child")
}

func TestLiveOutputDoesNotWaitForGrandchildHoldingPipe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := port.Command{Script: "sleep 30 & echo $! > child.pid; echo started"}
	var live bytes.Buffer
	start := time.Now()
	res := e.exec(t, context.Background(), c, &live)
	elapsed := time.Since(start)
	if res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	if elapsed > 5*time.Second {
		t.Fatalf("Execute waited %v for a grandchild holding the output pipe", elapsed)
	}
	if live.String() != "started\n" {
		t.Fatalf("live %q", live.String())
	}
	requireGone(t, e.pidFrom(t, "child.pid"), "the grandchild")
}

func TestContextCancelInterrupts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancelled := e.cancelWhen(t, "child.pid")
	c := port.Command{Script: "sleep 30 & echo $! > child.tmp && mv child.tmp child.pid; wait", Timeout: time.Minute}
	res := e.exec(t, ctx, c, nil)
	if !res.Interrupted || res.TimedOut {
		t.Fatalf("%+v, want interrupted", res)
	}
	if res.ExitCode != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit code %d", res.ExitCode)
	}
	if time.Since(<-cancelled) > 5*time.Second {
		t.Fatal("cancellation did not stop the command promptly")
	}
	requireGone(t, e.pidFrom(t, "child.pid"), "the background child")
}
func TestCancelledContextBeforeStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := e.exec(t, ctx, port.Command{Script: "sleep 30"}, nil)
	if !res.Interrupted {
		t.Fatalf("%+v, want interrupted", res)
	}
}

func TestTermTrapGetsToCleanUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// SIGTERM comes first, so a decision can clean up and choose its exit code.
	c := port.Command{Script: "trap 'echo cleaning; exit 7' TERM; sleep 30 & echo > ready; wait"}
	ctx, _ := e.cancelWhen(t, "ready")
	res := e.exec(t, ctx, c, nil)
	if !res.Interrupted || res.ExitCode != 7 {
		t.Fatalf("%+v, want interrupted with the trap's exit code 7", res)
	}
	if got := e.log(t, "logs/"+t.Name()+".log"); !strings.Contains(got, "cleaning") {
		t.Fatalf("trap output missing from log: %q", got)
	}
}
func TestGraceEscalatesToKill(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.shell.Grace = 300 * time.Millisecond
	c := port.Command{
		Script: "trap '' TERM; echo $$ > shell.pid; sleep 20 & echo $! > child.pid; echo > ready; wait; sleep 20",
	}
	ctx, cancelled := e.cancelWhen(t, "ready")
	res := e.exec(t, ctx, c, nil)
	elapsed := time.Since(<-cancelled)
	if !res.Interrupted {
		t.Fatalf("%+v, want interrupted", res)
	}
	if res.ExitCode != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit code %d, want %d: the shell ignores TERM and must be killed", res.ExitCode, 128+int(syscall.SIGKILL))
	}
	if elapsed < 300*time.Millisecond {
		t.Fatalf("killed %v after the cancellation: the 300ms grace period was not given", elapsed)
	}
	if elapsed > 5*time.Second {
		t.Fatalf("took %v: no escalation to SIGKILL", elapsed)
	}
	requireGone(t, e.pidFrom(t, "shell.pid"), "the shell")
	requireGone(t, e.pidFrom(t, "child.pid"), "the child")
}
func TestLogPathValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []string{
		"../x", "/abs/logs/x", e.layout.State() + "/logs/x", "logs", "logs/", ".", "", "x.log",
		"archive/x", "logsx/y", "logs/../x", "logs/../../x", "logs/../objects/x", "./../logs/x",
	} {
		res, err := e.shell.Execute(context.Background(), port.Command{Script: "echo ran > ran.txt", LogPath: p}, nil)
		if !errors.Is(err, fault.ErrIntegrity) || fault.Kind(err) != fault.ErrIntegrity {
			t.Errorf("log path %q: %+v, %v; want integrity error", p, res, err)
		}
		if _, err := os.Stat(e.path("ran.txt")); err == nil {
			t.Fatalf("log path %q: the command ran despite the invalid log path", p)
		}
		if _, err := e.shell.OpenLog(p); fault.Kind(err) != fault.ErrIntegrity {
			t.Errorf("OpenLog(%q): %v; want integrity error", p, err)
		}
	}
	// A path that cleans to one inside logs/ is fine.
	if _, err := e.shell.Execute(context.Background(), port.Command{Script: "true", LogPath: "logs/../logs/ok.log"}, nil); err != nil {
		t.Fatalf("logs/../logs/ok.log: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.layout.Logs(), "ok.log")); err != nil {
		t.Fatal(err)
	}
}

func TestOpenLogMissing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.shell.OpenLog("logs/never-ran.log")
	if !errors.Is(err, fault.ErrNotFound) || fault.Kind(err) != fault.ErrNotFound {
		t.Fatalf("got %v, want not found", err)
	}
}

func TestExecuteFailsWhenLogCannotBeCreated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// logs/blocked is a file, so logs/blocked/x.log cannot be created.
	if err := os.WriteFile(filepath.Join(e.layout.Logs(), "blocked"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := e.shell.Execute(context.Background(), port.Command{Script: "echo ran > ran.txt", LogPath: "logs/blocked/x.log"}, nil)
	if err == nil {
		t.Fatal("Execute succeeded without a log")
	}
	if _, err := os.Stat(e.path("ran.txt")); err == nil {
		t.Fatal("the command ran without a log")
	}
}

func startTagged(t *testing.T, token string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...) // #nosec -- test fixture
	cmd.Env = append(os.Environ(), executor.TokenVar+"="+token)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

func waitExit(t *testing.T, cmd *exec.Cmd) *os.ProcessState {
	t.Helper()
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("the tagged process is still running")
	}
	return cmd.ProcessState
}

func TestReapKillsTaggedProcess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	token := fmt.Sprintf("reap-%d-%d", os.Getpid(), time.Now().UnixNano())
	cmd := startTagged(t, token, "sleep", "30")
	// An untagged process and one with a token that merely starts with ours are left alone.
	other := startTagged(t, token+"-other", "sleep", "30")

	// Wait until the tagged process has exec'd, so its environment is readable.
	deadline := time.Now().Add(3 * time.Second)
	for !strings.Contains(readFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid)), "sleep") {
		if time.Now().After(deadline) {
			t.Fatal("tagged process did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	n, err := e.shell.Reap(token)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("Reap stopped %d processes, want 1", n)
	}
	ps := waitExit(t, cmd)
	if ws, ok := ps.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("tagged process ended with %v, want killed by SIGKILL", ps)
	}
	if !alive(other.Process.Pid) {
		t.Fatal("Reap killed a process with a different token")
	}
	if n, err := e.shell.Reap(token); n != 0 || err != nil {
		t.Fatalf("second Reap: %d, %v; want nothing left", n, err)
	}
}

func TestReapEmptyToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// An untagged child: an empty token must never match processes that lack a token, or that
	// carry an empty one.
	cmd := startTagged(t, "", "sleep", "30")
	n, err := e.shell.Reap("")
	if n != 0 || err != nil {
		t.Fatalf("Reap(\"\") = %d, %v", n, err)
	}
	if !alive(cmd.Process.Pid) {
		t.Fatal("Reap(\"\") killed a process")
	}
	if n, err := e.shell.Reap("no-process-has-this-token"); n != 0 || err != nil {
		t.Fatalf("Reap of an unused token = %d, %v", n, err)
	}
}

// What a killed plan leaves: a decision's process that escaped the group (setsid) but still
// carries the attempt's token. Execute cannot stop it; Reap must.
func TestReapFindsProcessEscapedFromExecute(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	token := fmt.Sprintf("escape-%d-%d", os.Getpid(), time.Now().UnixNano())
	// The shell waits until the child has left its session, so the group kill at the end of
	// Execute cannot reach it.
	c := port.Command{Token: token, Script: "setsid sh -c 'echo > escaped; exec sleep 30' > /dev/null 2>&1 & " +
		"while [ ! -f escaped ]; do sleep 0.01; done; echo $! > child.pid"}
	if res := e.exec(t, context.Background(), c, nil); res.ExitCode != 0 {
		t.Fatalf("%+v", res)
	}
	pid := e.pidFrom(t, "child.pid")
	deadline := time.Now().Add(3 * time.Second)
	for !strings.Contains(readFile(fmt.Sprintf("/proc/%d/cmdline", pid)), "sleep") {
		if time.Now().After(deadline) {
			t.Fatalf("escaped child %d is not running sleep", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !alive(pid) {
		t.Fatal("setup: the escaped child is not running")
	}
	n, err := e.shell.Reap(token)
	if err != nil || n != 1 {
		t.Fatalf("Reap = %d, %v; want 1", n, err)
	}
	requireGone(t, pid, "the escaped child")
}

func readFile(p string) string {
	b, err := os.ReadFile(p) // #nosec -- test reads /proc
	if err != nil {
		return ""
	}
	return string(b)
}
