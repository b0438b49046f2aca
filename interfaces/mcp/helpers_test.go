package mcp

// The CLI's test helpers the MCP tests need (interfaces/cli's runner_test.go, undo_test.go,
// restore_paths_test.go and agents_cmd_test.go have the originals): commands run in-process
// through cli.Runner, on real workspaces.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/interfaces/cli"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// TestMain runs the tests with a data directory of the run's own (PLAN_DATA_DIR), made in the one
// PLAN_DATA_DIR names, or in the temporary directory when it names none: the workspaces they make
// never send their history into the user's data directory (~/.local/share/plan), and never meet
// those of interfaces/cli, whose tests run at the same time (see its withOwnDataDir).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp(os.Getenv("PLAN_DATA_DIR"), "plan-mcp-test-data-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.Setenv("PLAN_DATA_DIR", dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// outcome is one in-process run of the CLI.
type outcome struct {
	args           []string
	code           int
	stdout, stderr string
}

func (o outcome) String() string {
	return fmt.Sprintf("plan %q exited %d\nstdout:\n%s\nstderr:\n%s", o.args, o.code, o.stdout, o.stderr)
}

// invoke runs args through r with fresh output buffers (r's own writers are replaced), with plan
// mcp served as the plan binary serves it.
func invoke(r cli.Runner, args ...string) outcome {
	var out, errOut bytes.Buffer
	r.Stdout, r.Stderr = &out, &errOut
	if r.Stdin == nil {
		r.Stdin = strings.NewReader("")
	}
	if r.MCP == nil {
		r.MCP = Serve
	}
	code := r.Run(context.Background(), append([]string{"plan"}, args...))
	return outcome{args: args, code: code, stdout: out.String(), stderr: errOut.String()}
}

// inWorkspace runs a non-interactive command in workspace dir.
func inWorkspace(dir string, args ...string) outcome {
	return invoke(cli.Runner{}, append([]string{"-C", dir}, args...)...)
}

// mustPlan runs a command in dir that must succeed.
func mustPlan(t *testing.T, dir string, args ...string) outcome {
	t.Helper()
	o := inWorkspace(dir, args...)
	if o.code != cli.ExitOK {
		t.Fatalf("%v", o)
	}
	return o
}

// newWorkspace returns an initialised workspace.
func newWorkspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mustPlan(t, dir, "init")
	return dir
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// createCheckpoint takes a checkpoint of dir and returns its ID.
func createCheckpoint(t *testing.T, dir string, args ...string) string {
	t.Helper()
	o := mustPlan(t, dir, append([]string{"--json", "checkpoint", "create"}, args...)...)
	var cp struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &cp); err != nil || cp.ID == "" {
		t.Fatalf("stdout is not a checkpoint: %v\n%v", err, o)
	}
	return cp.ID
}

// loggedOp is an entry of plan history's JSON.
type loggedOp struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
}

func historyOf(t *testing.T, dir string) []loggedOp {
	t.Helper()
	var ops []loggedOp
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "history").stdout), &ops); err != nil {
		t.Fatal(err)
	}
	return ops
}

// skipState leaves plan's own state out of a tree read.
var skipState = map[string]bool{".plan": true}

func requireTree(t *testing.T, dir string, want []tree.Entry, context string) {
	t.Helper()
	got, err := treetest.Read(dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	if d := treetest.Diff(want, got); len(d) > 0 {
		t.Fatalf("%s:\n%s", context, treetest.Summary(d))
	}
}

const claudeSession = "claude-7f3c1c2e-5b1a-4d7e-9c1e-2a4b6d8f0a12"

// fixture is a payload of ../agenthooks/testdata with $CWD set to dir.
func fixture(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "agenthooks", "testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "$CWD", dir)
}

// quietHook runs `plan hook ARGS…` from dir with a fixture on stdin: it must answer nothing and
// exit 0.
func quietHook(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	o := invoke(cli.Runner{Stdin: strings.NewReader(fixture(t, dir, name)), Dir: dir}, append([]string{"hook"}, args...)...)
	if o.code != 0 || o.stdout != "" || o.stderr != "" {
		t.Fatalf("%s: %v", name, o)
	}
}

// claudeTurn records a Claude Code turn: a README written, build/ removed through Bash.
func claudeTurn(t *testing.T) string {
	t.Helper()
	dir := newWorkspace(t)
	writeFile(t, dir, "build/a.o", "object")
	writeFile(t, dir, "main.go", "package main\n")
	quietHook(t, dir, "claude-UserPromptSubmit", "claude", "UserPromptSubmit")
	quietHook(t, dir, "claude-PreToolUse-Read", "claude", "PreToolUse")
	quietHook(t, dir, "claude-PreToolUse-Write", "claude", "PreToolUse")
	writeFile(t, dir, "README.md", "# Project\n")
	quietHook(t, dir, "claude-PostToolUse-Write", "claude", "PostToolUse")
	quietHook(t, dir, "claude-PreToolUse-Bash", "claude", "PreToolUse")
	if err := os.RemoveAll(filepath.Join(dir, "build")); err != nil {
		t.Fatal(err)
	}
	quietHook(t, dir, "claude-PostToolUse-Bash", "claude", "PostToolUse")
	quietHook(t, dir, "claude-Stop", "claude", "Stop")
	return dir
}
