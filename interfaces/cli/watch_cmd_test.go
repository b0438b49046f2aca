package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planhq/plan/infrastructure/bootstrap"
)

// startWatch runs `plan watch args…` in this process until the test ends, and waits until it
// answers; the returned wait gives its outcome once it ended.
func startWatch(t *testing.T, dir string, args ...string) (wait func() outcome) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan outcome, 1)
	go func() {
		var out, errOut strings.Builder
		r := Runner{Stdout: &out, Stderr: &errOut, Stdin: strings.NewReader("")}
		code := r.Run(ctx, append([]string{"plan", "-C", dir, "watch"}, args...))
		done <- outcome{args: args, code: code, stdout: out.String(), stderr: errOut.String()}
	}()
	l, err := bootstrap.NewLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := bootstrap.WatchQuery(context.Background(), l); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("plan watch did not answer: %v", <-done)
		}
	}
	wait = sync.OnceValue(func() outcome { return <-done })
	t.Cleanup(func() {
		cancel()
		if o := wait(); o.code != ExitOK {
			t.Errorf("plan watch ended with %v", o)
		}
	})
	return wait
}

func checkWatchOutputs(t *testing.T, check func(name, doc string)) {
	t.Helper()
	dir := newWorkspace(t)
	check("watch", mustPlan(t, dir, "--json", "watch", "status").stdout)
	wait := startWatch(t, dir, "--quiet", "1h")
	check("watch", mustPlan(t, dir, "--json", "watch", "status").stdout)
	check("watch", mustPlan(t, dir, "--json", "watch", "stop").stdout)
	if o := wait(); o.code != ExitOK || !strings.Contains(o.stderr, "plan watch: watching") || !strings.Contains(o.stderr, "stopped") {
		t.Fatalf("plan watch in the foreground: %v", o)
	}
}

func TestWatchCommand(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	o := mustPlan(t, dir, "watch", "status")
	if !strings.Contains(o.stdout, "is not running") {
		t.Fatalf("status without a service: %v", o)
	}
	startWatch(t, dir, "--every", "4h", "--quiet", "30s")
	writeFile(t, dir, "a.txt", "two\n")
	cp := mustPlan(t, dir, "--json", "checkpoint", "create")
	var v struct{ ID string }
	if err := json.Unmarshal([]byte(cp.stdout), &v); err != nil {
		t.Fatal(err)
	}
	if cat := mustPlan(t, dir, "cat", v.ID, "a.txt"); cat.stdout != "two\n" {
		t.Fatalf("the checkpoint through the service holds %q", cat.stdout)
	}
	o = mustPlan(t, dir, "watch", "status")
	for _, want := range []string{"plan watch runs for", "events: on", "2 snapshots, 1 of them full walks", "every 4h0m0s of work, after 30s quiet"} {
		if !strings.Contains(o.stdout, want) {
			t.Fatalf("status lacks %q: %v", want, o)
		}
	}
	if !regexp.MustCompile(`, since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}\) on `).MatchString(o.stdout) {
		t.Fatalf("status: the start time in the local zone with its offset: %v", o)
	}
	if o := inWorkspace(dir, "watch"); o.code != ExitConflict || !strings.Contains(o.stderr, "already runs") {
		t.Fatalf("a second service: %v", o)
	}
	if o := inWorkspace(dir, "watch", "--daemon"); o.code != ExitConflict || !strings.Contains(o.stderr, "already runs") {
		t.Fatalf("--daemon with a service running: %v", o)
	}
	if o := mustPlan(t, dir, "watch", "stop"); !strings.Contains(o.stdout, "Stopped plan watch") {
		t.Fatalf("stop: %v", o)
	}
	if o := mustPlan(t, dir, "watch", "stop"); !strings.Contains(o.stdout, "was not running") {
		t.Fatalf("stop again: %v", o)
	}
}

func TestWatchRefusals(t *testing.T) {
	dir := newWorkspace(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--every", "soon"}, ExitInvalid, `--every "soon" is not a duration`},
		{[]string{"--quiet", "10ms"}, ExitInvalid, "at least 1s"},
		{[]string{"status", "--every", "1h"}, ExitUsage, "unknown flag --every"},
		{[]string{"stop", "extra"}, ExitUsage, `unexpected argument "extra"`},
		{[]string{"extra"}, ExitUsage, ""},
	} {
		o := inWorkspace(dir, append([]string{"watch"}, c.args...)...)
		if o.code != c.code || !strings.Contains(o.stderr, c.want) {
			t.Errorf("watch %q: %v", c.args, o)
		}
	}
	if o := inWorkspace(t.TempDir(), "watch", "status"); o.code != ExitNotFound {
		t.Errorf("outside a workspace: %v", o)
	}
	// A socket nobody answers on: status says so, stop removes it.
	l, err := bootstrap.NewLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bootstrap.WatchSocket(l), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if o := mustPlan(t, dir, "watch", "status"); !strings.Contains(o.stderr, "no service answers") {
		t.Fatalf("a dead socket: %v", o)
	}
	if o := inWorkspace(dir, "watch"); o.code != ExitConflict || !strings.Contains(o.stderr, "not a socket") {
		t.Fatalf("a file at the socket's path: %v", o)
	}
}

// --daemon starts the service in a process of its own (this test binary, running the CLI) and
// returns once it answers; plan watch stop ends it.
func TestWatchDaemon(t *testing.T) {
	t.Setenv(childEnv, "1")
	dir := newWorkspace(t)
	o := mustPlan(t, dir, "--json", "watch", "--daemon", "--quiet", "1h", "--every", "2h")
	var st bootstrap.WatchStatus
	if err := json.Unmarshal([]byte(o.stdout), &st); err != nil || !st.Running || st.PID == os.Getpid() || st.Quiet != "1h0m0s" {
		t.Fatalf("--daemon: %v %+v", err, st)
	}
	t.Cleanup(func() { inWorkspace(dir, "watch", "stop") })
	if o := mustPlan(t, dir, "watch", "stop"); !strings.Contains(o.stdout, "Stopped") {
		t.Fatalf("stop: %v", o)
	}
	// The service answers stop before it has finished: its last log line follows shortly.
	var log []byte
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if log, err = os.ReadFile(filepath.Join(stateOf(t, dir).Logs(), "watch.log")); err == nil && strings.Contains(string(log), "plan watch: stopped") {
			break
		}
	}
	if err != nil || !strings.Contains(string(log), "plan watch: stopped") {
		t.Fatalf("the daemon's log: %v %q", err, log)
	}
	// A daemon that cannot start says why, from its log.
	if err := os.WriteFile(filepath.Join(dir, ".plan", "watch.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if o := inWorkspace(dir, "watch", "--daemon"); o.code == ExitOK || !strings.Contains(o.stderr, "not a socket") {
		t.Fatalf("a daemon that cannot listen: %v", o)
	}
}

// --quiet takes an idle checkpoint once changes settle, typed and labelled as such, and none while
// nothing changes.
func TestWatchIdleCheckpoint(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	mustPlan(t, dir, "checkpoint", "create")
	startWatch(t, dir, "--quiet", "1s")
	writeFile(t, dir, "a.txt", "two\n")
	var list []struct {
		Type   string
		Note   string
		Labels map[string]string
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		o := mustPlan(t, dir, "--json", "checkpoint", "list")
		if err := json.Unmarshal([]byte(o.stdout), &list); err != nil {
			t.Fatal(err)
		}
		if len(list) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no idle checkpoint: %v", o)
		}
	}
	var idle bool
	for _, c := range list {
		if c.Type == "idle" && c.Labels["watch"] == "idle" && strings.Contains(c.Note, "after 1s without changes") {
			idle = true
		}
	}
	if !idle {
		t.Fatalf("checkpoints %+v: want an idle one", list)
	}
}

func TestWatchHelpers(t *testing.T) {
	for in, want := range map[string]string{"": "", "one": "one", "a\nb\n\n": "b", "a\nb": "b"} {
		if got := lastLine(in); got != want {
			t.Errorf("lastLine(%q) = %q, want %q", in, got, want)
		}
	}
	if orNone("") != "-" || orNone("1h") != "1h" {
		t.Error("orNone")
	}
}
