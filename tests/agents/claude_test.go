package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// binaries are the programs make e2e-agents installs and passes in the environment.
func binary(t *testing.T, env string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" && os.Getenv("PLAN_E2E_REQUIRE") == "1" {
		t.Fatalf("%s is not set, and make e2e-agents requires it (did the agent's install fail?)", env)
	}
	if p == "" {
		t.Skipf("%s is not set: the real agents are driven by `make e2e-agents`, which installs them and sets it", env)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("%s=%s: %v", env, p, err)
	}
	return abs
}

// recorder is a hook command that saves its arguments and the payload on stdin, one file per call
// named by the time it ran, and answers nothing (exit 0: the tool runs).
const recorder = `#!/bin/sh
f="$PLAN_E2E_RECORDS/$(date +%s%N)-$3.json"
{ printf '%s\n' "$*"; if [ -d "$PWD/build" ]; then echo build-present; else echo build-absent; fi; cat; } > "$f"
`

// record is one hook call the recorder saw.
type record struct {
	args    string // "hook claude PreToolUse"
	build   bool   // build/ existed when the hook ran
	payload map[string]any
	raw     []byte
}

func readRecords(t *testing.T, dir string) []record {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var out []record
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitN(b, []byte("\n"), 3)
		if len(lines) != 3 {
			t.Fatalf("record %s: %q", n, b)
		}
		r := record{args: string(lines[0]), build: string(lines[1]) == "build-present", raw: lines[2]}
		if err := json.Unmarshal(lines[2], &r.payload); err != nil {
			t.Fatalf("record %s is not JSON: %v\n%s", n, err, lines[2])
		}
		out = append(out, r)
	}
	return out
}

// session is the scripted work: write a file, change 100 files through the shell, read then edit
// one, then delete a directory. Read is read-only: no hook may run for it.
func session(dir string) []toolCall {
	return []toolCall{
		{"toolu_01_write", "Write", map[string]any{"file_path": filepath.Join(dir, "notes.txt"), "content": "written by the agent\n"}},
		{"toolu_02_bash", "Bash", map[string]any{"command": "for i in $(seq 1 100); do echo changed $i >> data/f$i.txt; done", "description": "Change 100 files"}},
		{"toolu_03_read", "Read", map[string]any{"file_path": filepath.Join(dir, "src", "main.txt")}},
		{"toolu_04_edit", "Edit", map[string]any{"file_path": filepath.Join(dir, "src", "main.txt"), "old_string": "old line", "new_string": "new line"}},
		{"toolu_05_rm", "Bash", map[string]any{"command": "rm -rf build", "description": "Delete build"}},
	}
}

// project makes the tree the session works on.
func project(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project")
	write := func(rel, data string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 100; i++ {
		write(fmt.Sprintf("data/f%d.txt", i), fmt.Sprintf("file %d\n", i))
	}
	write("src/main.txt", "first line\nold line\nlast line\n")
	for i := 0; i < 20; i++ {
		write(fmt.Sprintf("build/out/part%d.bin", i), strings.Repeat(fmt.Sprint(i), 1000))
	}
	return dir
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, nil
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %q: %v\nstdout:\n%s\nstderr:\n%s", name, args, err, out.String(), errOut.String())
	}
	return out.String()
}

// dataDirVar gives the plan an agent's test runs (and the hooks the agent runs) a data directory
// (PLAN_DATA_DIR) in the test's home: the workspace's history never goes to the user's.
func dataDirVar(home string) string { return "PLAN_DATA_DIR=" + filepath.Join(home, "plan-data") }

// claudeEnv is Claude Code's environment: a home of its own, the scripted server, a dummy key,
// and every kind of traffic besides the model's turned off.
func claudeEnv(home, url, records string) []string {
	return []string{
		"HOME=" + home, dataDirVar(home), "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TERM=dumb",
		"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=sk-ant-e2e-dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1", "DISABLE_BUG_COMMAND=1", "CLAUDE_CODE_DISABLE_TERMINAL_TITLE=1",
		// Root may not bypass permissions outside a sandbox; this test is one.
		"IS_SANDBOX=1",
		"PLAN_E2E_RECORDS=" + records,
	}
}

// TestClaudeCodeRunsPlansInstalledHooks installs plan's hooks with `plan agent install claude
// --project` (the command a recorder, to see what the real agent sends), runs the real Claude Code
// headless through the scripted session, and checks the agent did the work and called each hook
// plan installed: before and after every mutating tool call, with its tool-call ID, never for the
// read-only one, and on the prompt, the stop and the session's end.
func TestClaudeCodeRunsPlansInstalledHooks(t *testing.T) {
	plan := binary(t, "PLAN_E2E_PLAN")
	claude := binary(t, "PLAN_E2E_CLAUDE")
	dir := project(t)
	home, records := t.TempDir(), t.TempDir()
	rec := filepath.Join(t.TempDir(), "record-hook")
	if err := os.WriteFile(rec, []byte(recorder), 0o755); err != nil {
		t.Fatal(err)
	}
	env := claudeEnv(home, "", records)
	run(t, dir, env, plan, "agent", "install", "claude", "--project", "--bin", rec)
	if _, err := os.Stat(filepath.Join(dir, ".plan")); err != nil {
		t.Fatal("plan agent install did not initialise the workspace")
	}
	script := session(dir)
	srv := newAnthropicServer(t, script)
	env = claudeEnv(home, srv.URL, records)
	began := time.Now()
	out := run(t, dir, env, claude, "-p", "Tidy the project.", "--dangerously-skip-permissions",
		"--model", "claude-sonnet-4-5", "--output-format", "json")
	t.Logf("claude ran the session in %v", time.Since(began))
	var result struct {
		IsError   bool   `json:"is_error"`
		Result    string `json:"result"`
		SessionID string `json:"session_id"`
		NumTurns  int    `json:"num_turns"`
	}
	if err := json.Unmarshal([]byte(out), &result); err != nil || result.IsError || result.Result != "Done." {
		t.Fatalf("claude's result: %v %+v\n%s", err, result, out)
	}

	// The agent did the work.
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "written by the agent\n" {
		t.Fatalf("notes.txt: %q", b)
	}
	for i := 1; i <= 100; i++ {
		if b, _ := os.ReadFile(filepath.Join(dir, "data", fmt.Sprintf("f%d.txt", i))); string(b) != fmt.Sprintf("file %d\nchanged %d\n", i, i) {
			t.Fatalf("data/f%d.txt: %q", i, b)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "src", "main.txt")); string(b) != "first line\nnew line\nlast line\n" {
		t.Fatalf("src/main.txt: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "build")); !os.IsNotExist(err) {
		t.Fatalf("build/ still there: %v", err)
	}

	// Each hook plan installed ran, in order, with the real payload.
	got := readRecords(t, records)
	var seq []string
	for _, r := range got {
		id, _ := r.payload["tool_use_id"].(string)
		seq = append(seq, strings.TrimSpace(r.args+" "+id))
		if r.payload["session_id"] != result.SessionID {
			t.Errorf("%s: session_id %v, want %s", r.args, r.payload["session_id"], result.SessionID)
		}
		if ev := strings.Fields(r.args); len(ev) != 3 || r.payload["hook_event_name"] != ev[2] {
			t.Errorf("%s: hook_event_name %v", r.args, r.payload["hook_event_name"])
		}
		if r.payload["cwd"] != dir {
			t.Errorf("%s: cwd %v, want %s", r.args, r.payload["cwd"], dir)
		}
	}
	want := []string{"hook claude UserPromptSubmit"}
	for _, c := range script {
		if c.name == "Read" {
			continue
		}
		want = append(want, "hook claude PreToolUse "+c.id, "hook claude PostToolUse "+c.id)
	}
	want = append(want, "hook claude Stop", "hook claude SessionEnd")
	if strings.Join(seq, "\n") != strings.Join(want, "\n") {
		t.Fatalf("hook calls:\n%s\nwant:\n%s", strings.Join(seq, "\n"), strings.Join(want, "\n"))
	}
	// The hook before the rm ran while build/ was still there, the one after it once it was gone.
	for _, r := range got {
		if r.payload["tool_use_id"] == "toolu_05_rm" && r.build != (r.payload["hook_event_name"] == "PreToolUse") {
			t.Errorf("%s %s ran with build present=%v", r.args, r.payload["tool_use_id"], r.build)
		}
	}
	checkFixtures(t, "claude", got, dir, home)
}

// checkFixtures compares the shape (the set of keys, recursively for tool_input) of each payload
// with the one kept in testdata/<agent>/, which PLAN_E2E_UPDATE_FIXTURES=1 rewrites from this run
// (paths replaced by /project and /home/user, so the files hold no machine's names).
func checkFixtures(t *testing.T, agent string, got []record, dir, home string) {
	t.Helper()
	fixdir := filepath.Join("testdata", agent)
	if os.Getenv("PLAN_E2E_UPDATE_FIXTURES") == "1" {
		if err := os.RemoveAll(fixdir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(fixdir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range got {
		name := filepath.Join(fixdir, fmt.Sprintf("%02d-%s.json", i+1, strings.Fields(r.args)[2]))
		clean := strings.NewReplacer(dir, "/project", home, "/home/user").Replace(string(r.raw))
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, []byte(clean), "", "  "); err != nil {
			t.Fatal(err)
		}
		pretty.WriteByte('\n')
		if os.Getenv("PLAN_E2E_UPDATE_FIXTURES") == "1" {
			if err := os.WriteFile(name, pretty.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		kept, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("no fixture for hook call %d (%s): %v (PLAN_E2E_UPDATE_FIXTURES=1 writes them)", i+1, r.args, err)
		}
		var a, b map[string]any
		_ = json.Unmarshal(kept, &a)
		_ = json.Unmarshal(pretty.Bytes(), &b)
		if ka, kb := keys(a), keys(b); ka != kb {
			t.Errorf("%s: the agent's payload changed shape:\nkept: %s\nnow:  %s", name, ka, kb)
		}
	}
}

func keys(m map[string]any) string {
	var ks []string
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok && k == "tool_input" {
			k += "{" + keys(sub) + "}"
		}
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

// TestClaudeCodeSessionUndoneThroughPlan runs the scripted session in the real Claude Code with
// plan's own hooks (plan agent install claude --project), then undoes it with plan (checkUndo).
func TestClaudeCodeSessionUndoneThroughPlan(t *testing.T) {
	plan := binary(t, "PLAN_E2E_PLAN")
	claude := binary(t, "PLAN_E2E_CLAUDE")
	dir := project(t)
	home := t.TempDir()
	script := session(dir)
	srv := newAnthropicServer(t, script)
	env := claudeEnv(home, srv.URL, "")
	run(t, dir, env, plan, "agent", "install", "claude", "--project", "--bin", plan)
	out := run(t, dir, env, claude, "-p", "Tidy the project.", "--dangerously-skip-permissions",
		"--model", "claude-sonnet-4-5", "--output-format", "json")
	if !strings.Contains(out, `"result":"Done."`) {
		t.Fatalf("claude's result: %s", out)
	}
	checkWork(t, dir)
	checkUndo(t, plan, dir, env, "claude", []string{"toolu_01_write", "toolu_02_bash", "toolu_04_edit", "toolu_05_rm"})
}
