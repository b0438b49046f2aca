package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/infrastructure/bootstrap"
)

// startingHook runs a hook as the plan binary does: allowed to start `plan watch`.
func startingHook(dir, payload string, getenv func(string) string, args ...string) outcome {
	return invoke(Runner{Stdin: strings.NewReader(payload), Dir: dir, StartWatch: true, Getenv: getenv}, append([]string{"hook"}, args...)...)
}

func layoutOf(t *testing.T, dir string) bootstrap.Layout {
	t.Helper()
	l, err := bootstrap.NewLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The start of a turn starts the workspace's change-tracking service when none runs, in the
// background (this test binary, running the CLI), with --stop-after, so that the turn's
// checkpoints read only what changed; the next turn finds it running and starts no other.
func TestATurnStartsTheWatchService(t *testing.T) {
	t.Setenv(childEnv, "1")
	dir := newWorkspace(t)
	writeFile(t, dir, "main.go", "package main\n")
	l := layoutOf(t, dir)
	t.Cleanup(func() { inWorkspace(dir, "watch", "stop") })
	payload := fixture(t, dir, "claude-UserPromptSubmit")
	if o := startingHook(dir, payload, nil, "claude", "UserPromptSubmit"); o.code != 0 || o.stdout != "" || o.stderr != "" {
		t.Fatalf("%v", o)
	}
	var st bootstrap.WatchStatus
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, err = bootstrap.WatchQuery(context.Background(), l); err == nil {
			break
		}
	}
	if err != nil || st.PID == os.Getpid() || st.StopAfter != hookWatchStopAfter.String() {
		t.Fatalf("the turn did not start the service: %+v, %v", st, err)
	}
	if o := startingHook(dir, payload, nil, "claude", "UserPromptSubmit"); o.code != 0 || o.stderr != "" {
		t.Fatalf("%v", o)
	}
	if again, err := bootstrap.WatchQuery(context.Background(), l); err != nil || again.PID != st.PID {
		t.Fatalf("the second turn replaced the service: %+v, %v (was pid %d)", again, err, st.PID)
	}
}

// Nothing is started where the user said not to (hooks.watch: false, PLAN_WATCH=0), nor by a
// Runner inside another program (its executable is not plan).
func TestATurnStartsNoServiceWhenToldNot(t *testing.T) {
	t.Setenv(childEnv, "1")
	for name, c := range map[string]struct {
		config string
		env    map[string]string
		start  bool
	}{
		"hooks.watch false": {config: "hooks:\n  watch: false\n", start: true},
		"PLAN_WATCH=0":      {env: map[string]string{"PLAN_WATCH": "0"}, start: true},
		"a host's runner":   {start: false},
	} {
		t.Run(name, func(t *testing.T) {
			dir := newWorkspace(t)
			if c.config != "" {
				configure(t, dir, c.config)
			}
			t.Cleanup(func() { inWorkspace(dir, "watch", "stop") })
			payload := fixture(t, dir, "claude-UserPromptSubmit")
			o := invoke(Runner{Stdin: strings.NewReader(payload), Dir: dir, StartWatch: c.start, Getenv: func(k string) string {
				if v, ok := c.env[k]; ok {
					return v
				}
				return os.Getenv(k)
			}}, "hook", "claude", "UserPromptSubmit")
			if o.code != 0 || o.stderr != "" {
				t.Fatalf("%v", o)
			}
			time.Sleep(300 * time.Millisecond)
			if _, err := bootstrap.WatchQuery(context.Background(), layoutOf(t, dir)); err == nil {
				t.Fatal("a service was started")
			}
			if _, err := os.Stat(filepath.Join(stateOf(t, dir).Logs(), "watch.log")); err == nil {
				t.Fatal("a service was spawned (it has a log)")
			}
		})
	}
}

// A service that cannot be started is a warning the agent shows; the turn is recorded.
func TestATurnWarnsWhenTheServiceCannotStart(t *testing.T) {
	t.Setenv(childEnv, "1")
	dir := newWorkspace(t)
	if err := os.MkdirAll(filepath.Join(stateOf(t, dir).Logs(), "watch.log"), 0o700); err != nil { // where the log goes
		t.Fatal(err)
	}
	o := startingHook(dir, fixture(t, dir, "claude-UserPromptSubmit"), nil, "claude", "UserPromptSubmit")
	if o.code != 0 || !strings.Contains(o.stderr+o.stdout, "could not start plan watch") {
		t.Fatalf("%v", o)
	}
	if v := sessionsOf(t, dir); len(v.Sessions) != 1 {
		t.Fatalf("the turn was not recorded: %+v", v)
	}
}
