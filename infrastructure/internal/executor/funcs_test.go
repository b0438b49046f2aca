package executor_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
)

// A Go-function decision runs as a shell one does: in the workspace root, output in its log and
// live, with its environment, timeout and cancellation; its error is its outcome.
func TestGoFunctionDecisions(t *testing.T) {
	exitErr := func() error {
		err := exec.Command("/bin/sh", "-c", "exit 7").Run()
		if err == nil {
			t.Fatal("exit 7 succeeded")
		}
		return err
	}()
	for _, c := range []struct {
		name    string
		fn      port.Func
		timeout time.Duration
		cancel  bool
		want    port.ExecResult
		log     string
	}{
		{name: "succeeds", fn: func(_ context.Context, dir string, d port.DecisionCall) error {
			_, _ = d.Log.Write([]byte("hello " + d.ID + " " + d.Env["K"] + "\n"))
			return os.WriteFile(filepath.Join(dir, "out.txt"), []byte("x"), 0o600)
		}, log: "hello d v\n"},
		{name: "fails", fn: func(context.Context, string, port.DecisionCall) error { return errors.New("no luck") },
			want: port.ExecResult{ExitCode: 1}, log: "plan: decision d failed: no luck\n"},
		{name: "exit code", fn: func(context.Context, string, port.DecisionCall) error { return exitErr },
			want: port.ExecResult{ExitCode: 7}, log: "exit status 7"},
		{name: "panics", fn: func(context.Context, string, port.DecisionCall) error { panic("boom") },
			want: port.ExecResult{ExitCode: 2}, log: "panic: boom"},
		{name: "times out", timeout: 20 * time.Millisecond, fn: func(ctx context.Context, _ string, _ port.DecisionCall) error {
			<-ctx.Done()
			return ctx.Err()
		}, want: port.ExecResult{ExitCode: 124, TimedOut: true}, log: "timed out after 20ms"},
		{name: "interrupted", cancel: true, fn: func(ctx context.Context, _ string, _ port.DecisionCall) error {
			<-ctx.Done()
			return ctx.Err()
		}, want: port.ExecResult{Interrupted: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancel {
				time.AfterFunc(20*time.Millisecond, cancel)
			}
			var live bytes.Buffer
			res, err := e.shell.Execute(ctx, port.Command{
				DecisionID: "d", Attempt: 1, Script: "go-func:f@h", Env: map[string]string{"K": "v"}, Timeout: c.timeout,
				LogPath: "logs/d.1.log", Func: c.fn,
			}, &live)
			if err != nil || res != c.want {
				t.Fatalf("res %+v, err %v; want %+v", res, err, c.want)
			}
			if got := e.log(t, "logs/d.1.log"); !strings.Contains(got, c.log) || live.String() != got {
				t.Errorf("log %q (live %q), want it to hold %q", got, live.String(), c.log)
			}
			if c.name == "succeeds" && e.read(t, "out.txt") != "x" {
				t.Error("the function did not write in the workspace root")
			}
		})
	}
	// Without a live writer the log alone has the output.
	e := newEnv(t)
	if _, err := e.shell.Execute(context.Background(), port.Command{DecisionID: "q", LogPath: "logs/q.1.log",
		Func: port.Func(func(_ context.Context, _ string, d port.DecisionCall) error {
			_, err := d.Log.Write([]byte("quiet\n"))
			return err
		})}, nil); err != nil || e.log(t, "logs/q.1.log") != "quiet\n" {
		t.Errorf("err %v, log %q", err, e.log(t, "logs/q.1.log"))
	}
}
