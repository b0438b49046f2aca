package hostile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/tests/testkit"
	"github.com/planhq/plan/tests/testkit/servertest"
)

// The harness: the real binary, run in a workspace directory with a controlled environment.

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

// planBinary is the plan binary built from this module, once per test binary.
func planBinary(t testing.TB) string {
	t.Helper()
	return testkit.Binary(t)
}

// result is how one plan process ended.
type result struct {
	args           []string
	stdout, stderr string
	code           int
	killed         bool // ended by SIGKILL
}

func (r result) String() string {
	return fmt.Sprintf("plan %s: exit %d (killed %v)\nstdout: %s\nstderr: %s",
		strings.Join(r.args, " "), r.code, r.killed, r.stdout, r.stderr)
}

// errorKind is the `kind` of the JSON error document a --json failure prints on stderr ("" when
// there is none).
func (r result) errorKind() string {
	var doc struct {
		Error struct {
			Kind string `json:"kind"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(r.stderr)), &doc) != nil {
		return ""
	}
	return doc.Error.Kind
}

// baseEnv is the test process's environment without anything that would change what plan does
// behind a test's back: failpoints, AWS and PostgreSQL settings. A test passes what it means.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "PLAN_FAILPOINT" || strings.HasPrefix(name, "AWS_") || strings.HasPrefix(name, "PG") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// command prepares `plan -C dir args…` with env added to baseEnv and the test's data directory
// (testkit.DataDir; env may name another) (dir "" runs without -C, in the test's working
// directory).
func command(t testing.TB, dir string, env []string, stdin string, args ...string) *exec.Cmd {
	t.Helper()
	full := args
	if dir != "" {
		full = append([]string{"-C", dir}, args...)
	}
	cmd := exec.Command(planBinary(t), full...)
	cmd.Env = append(testkit.WithDataDir(t, baseEnv()), env...)
	cmd.Stdin = strings.NewReader(stdin)
	return cmd
}

// runPlan runs plan to its end, with a deadline so that a hang fails the test instead of the run.
func runPlan(t testing.TB, dir string, env []string, args ...string) result {
	t.Helper()
	return runPlanWithin(t, 2*time.Minute, dir, env, args...)
}

// runPlanWithin is runPlan with an explicit deadline: a process still running then is killed and
// the test fails, naming the command.
func runPlanWithin(t testing.TB, limit time.Duration, dir string, env []string, args ...string) result {
	t.Helper()
	p := startPlan(t, dir, env, args...)
	select {
	case <-p.done:
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("plan %s did not end within %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), limit, p.out.String(), p.errb.String())
	}
	return p.result(t)
}

// running is a started plan process, for tests that kill it or race it.
type running struct {
	args      []string
	cmd       *exec.Cmd
	out, errb bytes.Buffer
	done      chan struct{} // closed once Wait returned; err is set before
	err       error
}

func startPlan(t testing.TB, dir string, env []string, args ...string) *running {
	t.Helper()
	p := &running{args: args, cmd: command(t, dir, env, "", args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errb
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// kill sends SIGKILL and waits for the process to end.
func (p *running) kill(t testing.TB) result {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	return p.result(t)
}

// wait waits for the process to end by itself.
func (p *running) wait(t testing.TB) result {
	t.Helper()
	<-p.done
	return p.result(t)
}

func (p *running) result(t testing.TB) result {
	t.Helper()
	r := result{args: p.args, stdout: p.out.String(), stderr: p.errb.String()}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
	case errors.As(p.err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			r.killed = true
		}
	default:
		t.Fatalf("plan %v: %v", p.args, p.err)
	}
	return r
}

// workspace is a directory plan was initialised in, with the environment every command there gets.
type workspace struct {
	t   testing.TB
	dir string
	env []string
}

// newWorkspace makes a fresh directory and runs `plan init initArgs…` in it.
func newWorkspace(t testing.TB, env []string, initArgs ...string) *workspace {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w := &workspace{t: t, dir: dir, env: env}
	w.must(append([]string{"init"}, initArgs...)...)
	return w
}

// run runs plan in the workspace, whatever its exit.
func (w *workspace) run(args ...string) result {
	w.t.Helper()
	return runPlan(w.t, w.dir, w.env, args...)
}

// must runs plan in the workspace and fails the test unless it exits 0; it returns stdout.
func (w *workspace) must(args ...string) string {
	w.t.Helper()
	r := w.run(args...)
	if r.code != 0 {
		w.t.Fatalf("%s", r)
	}
	return r.stdout
}

// mustJSON runs `plan --json args…`, requires exit 0 and decodes stdout into v.
func (w *workspace) mustJSON(v any, args ...string) {
	w.t.Helper()
	out := w.must(append([]string{"--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		w.t.Fatalf("plan --json %s: stdout is not the JSON expected: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// expect runs `plan --json args…` and fails the test unless it exits with code (and, when kind is
// not empty, the JSON error's kind is kind). It returns the result for further checks.
func (w *workspace) expect(code int, kind string, args ...string) result {
	w.t.Helper()
	r := w.run(append([]string{"--json"}, args...)...)
	if r.code != code || (kind != "" && r.errorKind() != kind) {
		w.t.Fatalf("want exit %d kind %q, got exit %d kind %q\n%s", code, kind, r.code, r.errorKind(), r)
	}
	return r
}

// checkpoint creates a checkpoint with a note and returns its ID.
func (w *workspace) checkpoint(note string) string {
	w.t.Helper()
	var cp struct {
		ID string `json:"id"`
	}
	w.mustJSON(&cp, "checkpoint", "create", "--note", note)
	if cp.ID == "" {
		w.t.Fatal("checkpoint create printed no id")
	}
	return cp.ID
}

// path is the absolute path of a workspace-relative slash path.
func (w *workspace) path(rel string) string {
	return filepath.Join(w.dir, filepath.FromSlash(rel))
}

// state is the absolute path of a slash path in the workspace's state directory (statePath).
func (w *workspace) state(rel string) string {
	w.t.Helper()
	return statePath(w.t, w.dir, rel)
}

// statePath is the absolute path of a slash path in the state directory of the workspace at dir,
// where its history is kept (plan.db, objects/, journal.json, archive/, logs/, cache/): the one
// its .plan/config.yaml names (state_dir), or .plan/ itself for a workspace made with `--store
// workspace` (or not made yet).
func statePath(t testing.TB, dir, rel string) string {
	t.Helper()
	l, err := bootstrap.LayoutAt(dir)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(l.Home(), filepath.FromSlash(rel))
}

// write creates or replaces a file (parents made as needed).
func (w *workspace) write(rel, content string) {
	w.t.Helper()
	p := w.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// read returns a file's content, failing the test when it cannot be read.
func (w *workspace) read(rel string) string {
	w.t.Helper()
	b, err := os.ReadFile(w.path(rel))
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

// s3Store is a fresh bucket on the test MinIO (created by plan, removed at cleanup), and the
// environment plan needs to reach it.
type s3Store struct {
	servertest.S3Env
	URL string   // s3://bucket/prefix
	Env []string // AWS_* for plan
}

// newS3Store returns a store URL on a bucket of the test's own. endpoint overrides the server's
// address (a proxy in front of it) when not empty.
func newS3Store(t testing.TB, prefix string) s3Store {
	t.Helper()
	s := s3Store{S3Env: servertest.S3(t)}
	s.URL = "s3://" + s.Bucket + "/" + prefix
	s.Env = s3Env(s.S3Env, s.Endpoint)
	return s
}

// s3Env is the AWS_* environment for the server, reached at endpoint (the server's own or a proxy's).
func s3Env(e servertest.S3Env, endpoint string) []string {
	return []string{
		"AWS_ENDPOINT_URL=" + endpoint,
		"AWS_ACCESS_KEY_ID=" + e.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + e.SecretKey,
		"AWS_REGION=" + e.Region,
	}
}

// trials is how many times a looping test repeats: def in `make check`, PLAN_CRASH_TRIALS when set
// (`make crash` sets it) and larger.
func trials(def int) int {
	if n, err := strconv.Atoi(os.Getenv("PLAN_CRASH_TRIALS")); err == nil && n > def {
		return n
	}
	return def
}

// requireNoSecret fails the test when any of texts holds secret, naming where.
func requireNoSecret(t testing.TB, secret string, texts map[string]string) {
	t.Helper()
	for where, text := range texts {
		if strings.Contains(text, secret) {
			t.Errorf("the secret %q appears in %s:\n%s", secret, where, text)
		}
	}
}
