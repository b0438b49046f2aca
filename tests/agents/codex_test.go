package agents

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// codexSession is the scripted work through Codex's shell tool (exec_command; the Responses API
// gives an unknown model no apply_patch tool): write a file, change 100 files, edit one, delete a
// directory (with rm -r: Codex itself refuses rm -rf, "rm -f style commands are not permitted").
func codexSession() []toolCall {
	return []toolCall{
		{"call_01_write", "exec_command", map[string]any{"cmd": "printf 'written by the agent\\n' > notes.txt"}},
		{"call_02_bash", "exec_command", map[string]any{"cmd": "for i in $(seq 1 100); do echo changed $i >> data/f$i.txt; done"}},
		{"call_03_edit", "exec_command", map[string]any{"cmd": "sed -i 's/old line/new line/' src/main.txt"}},
		{"call_04_rm", "exec_command", map[string]any{"cmd": "rm -r build"}},
	}
}

// codexEnv is Codex's environment: a home and CODEX_HOME of its own, the dummy key the scripted
// provider reads, nothing else.
func codexEnv(home, records string) []string {
	return []string{
		"HOME=" + home, dataDirVar(home), "CODEX_HOME=" + filepath.Join(home, ".codex"), "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8",
		"TERM=dumb", "PLAN_E2E_KEY=dummy", "PLAN_E2E_RECORDS=" + records,
	}
}

// codexArgs runs codex exec headless against the scripted provider at url, in dir trusted as a
// project (its .codex/hooks.json is read only then) with hook trust bypassed (the one step
// `plan agent install codex` asks of a person).
func codexArgs(url, dir, prompt string) []string {
	return []string{"exec", "--trust", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
		"--dangerously-bypass-hook-trust", "--color", "never",
		"-c", "model_provider=e2e",
		"-c", `model_providers.e2e={name="e2e",base_url="` + url + `",wire_api="responses",env_key="PLAN_E2E_KEY"}`,
		"-m", "gpt-5-codex", prompt}
}

// TestCodexRunsPlansInstalledHooks is TestClaudeCodeRunsPlansInstalledHooks for Codex.
func TestCodexRunsPlansInstalledHooks(t *testing.T) {
	plan := binary(t, "PLAN_E2E_PLAN")
	codex := binary(t, "PLAN_E2E_CODEX")
	dir := project(t)
	home, records := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(t.TempDir(), "record-hook")
	if err := os.WriteFile(rec, []byte(recorder), 0o755); err != nil {
		t.Fatal(err)
	}
	env := codexEnv(home, records)
	run(t, dir, env, plan, "agent", "install", "codex", "--project", "--bin", rec)
	script := codexSession()
	srv := newResponsesServer(t, script)
	began := time.Now()
	out := run(t, dir, env, codex, codexArgs(srv.URL, dir, "Tidy the project.")...)
	t.Logf("codex ran the session in %v", time.Since(began))
	if !strings.Contains(out, "Done.") {
		t.Fatalf("codex's output: %s", out)
	}
	checkWork(t, dir)
	got := readRecords(t, records)
	var seq []string
	session := ""
	for _, r := range got {
		id, _ := r.payload["tool_use_id"].(string)
		seq = append(seq, strings.TrimSpace(r.args+" "+id))
		if s, _ := r.payload["session_id"].(string); session == "" {
			session = s
		} else if s != session {
			t.Errorf("%s: session_id %s, want %s", r.args, s, session)
		}
		if ev := strings.Fields(r.args); len(ev) != 3 || r.payload["hook_event_name"] != ev[2] {
			t.Errorf("%s: hook_event_name %v", r.args, r.payload["hook_event_name"])
		}
		if r.payload["cwd"] != dir {
			t.Errorf("%s: cwd %v, want %s", r.args, r.payload["cwd"], dir)
		}
		if r.payload["tool_name"] != nil && r.payload["tool_name"] != "Bash" {
			t.Errorf("%s: tool_name %v", r.args, r.payload["tool_name"])
		}
	}
	want := []string{"hook codex UserPromptSubmit"}
	for _, c := range script {
		want = append(want, "hook codex PreToolUse "+c.id, "hook codex PostToolUse "+c.id)
	}
	want = append(want, "hook codex Stop")
	if strings.Join(seq, "\n") != strings.Join(want, "\n") {
		t.Fatalf("hook calls:\n%s\nwant:\n%s", strings.Join(seq, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range got {
		if r.payload["tool_use_id"] == "call_04_rm" && r.build != (r.payload["hook_event_name"] == "PreToolUse") {
			t.Errorf("%s %s ran with build present=%v", r.args, r.payload["tool_use_id"], r.build)
		}
	}
	checkFixtures(t, "codex", got, dir, home)
}

// checkWork checks the session's effects on the project tree.
func checkWork(t *testing.T, dir string) {
	t.Helper()
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
}

// TestCodexSessionUndoneThroughPlan is TestClaudeCodeSessionUndoneThroughPlan for Codex.
func TestCodexSessionUndoneThroughPlan(t *testing.T) {
	plan := binary(t, "PLAN_E2E_PLAN")
	codex := binary(t, "PLAN_E2E_CODEX")
	dir := project(t)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	env := codexEnv(home, "")
	run(t, dir, env, plan, "agent", "install", "codex", "--project", "--bin", plan)
	script := codexSession()
	srv := newResponsesServer(t, script)
	if out := run(t, dir, env, codex, codexArgs(srv.URL, dir, "Tidy the project.")...); !strings.Contains(out, "Done.") {
		t.Fatalf("codex's output: %s", out)
	}
	checkWork(t, dir)
	checkUndo(t, plan, dir, env, "codex", []string{"call_01_write", "call_02_bash", "call_03_edit", "call_04_rm"})
}
