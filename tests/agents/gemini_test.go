package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// geminiSession is the scripted work through Gemini CLI's own tools: write_file, the shell,
// read_file (read-only: no hook), replace, then the shell's rm -rf. (Gemini CLI refuses a
// command with $(...) in it, so the loop reads seq's output.)
func geminiSession(dir string) []toolCall {
	return []toolCall{
		{"gem_01_write", "write_file", map[string]any{"file_path": filepath.Join(dir, "notes.txt"), "content": "written by the agent\n"}},
		{"gem_02_bash", "run_shell_command", map[string]any{"command": "seq 1 100 | while read i; do echo changed $i >> data/f$i.txt; done", "description": "Change 100 files"}},
		{"gem_03_read", "read_file", map[string]any{"file_path": filepath.Join(dir, "src", "main.txt")}},
		{"gem_04_edit", "replace", map[string]any{"file_path": filepath.Join(dir, "src", "main.txt"), "old_string": "old line", "new_string": "new line", "instruction": "Replace the old line."}},
		{"gem_05_rm", "run_shell_command", map[string]any{"command": "rm -rf build", "description": "Delete build"}},
	}
}

// geminiEnv is Gemini CLI's environment: a home of its own whose settings choose API-key auth
// (the base URL alone selects a gateway auth 0.61 refuses headless), turn folder trust, usage
// statistics and update checks off; the scripted server as the API's base URL; no relaunch.
func geminiEnv(t *testing.T, home, url, records string) []string {
	t.Helper()
	settings := `{"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
 "privacy": {"usageStatisticsEnabled": false}, "general": {"disableAutoUpdate": true, "disableUpdateNag": true}}`
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{
		"HOME=" + home, dataDirVar(home), "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TERM=dumb", "NO_COLOR=1",
		"GEMINI_API_KEY=e2e-dummy", "GOOGLE_GEMINI_BASE_URL=" + url, "GEMINI_CLI_NO_RELAUNCH=1",
		"PLAN_E2E_RECORDS=" + records,
	}
}

// TestGeminiCLIRunsPlansInstalledHooks is TestClaudeCodeRunsPlansInstalledHooks for Gemini CLI.
func TestGeminiCLIRunsPlansInstalledHooks(t *testing.T) {
	plan := binary(t, "PLAN_E2E_PLAN")
	gemini := binary(t, "PLAN_E2E_GEMINI")
	dir := project(t)
	home, records := t.TempDir(), t.TempDir()
	rec := filepath.Join(t.TempDir(), "record-hook")
	if err := os.WriteFile(rec, []byte(recorder), 0o755); err != nil {
		t.Fatal(err)
	}
	script := geminiSession(dir)
	srv := newGeminiServer(t, script)
	env := geminiEnv(t, home, srv.URL, records)
	run(t, dir, env, plan, "agent", "install", "gemini", "--project", "--bin", rec)
	began := time.Now()
	out := run(t, dir, env, gemini, "-p", "Tidy the project.", "--yolo", "-m", "gemini-2.5-pro")
	t.Logf("gemini ran the session in %v", time.Since(began))
	if !strings.Contains(out, "Done.") {
		t.Fatalf("gemini's output: %s", out)
	}
	checkWork(t, dir)
	got := readRecords(t, records)
	var seq []string
	for _, r := range got {
		name, _ := r.payload["tool_name"].(string)
		seq = append(seq, strings.TrimSpace(r.args+" "+name))
		if ev := strings.Fields(r.args); len(ev) != 3 || r.payload["hook_event_name"] != ev[2] {
			t.Errorf("%s: hook_event_name %v", r.args, r.payload["hook_event_name"])
		}
		if r.payload["cwd"] != dir {
			t.Errorf("%s: cwd %v, want %s", r.args, r.payload["cwd"], dir)
		}
	}
	want := []string{"hook gemini BeforeAgent"}
	for _, c := range script {
		if c.name == "read_file" {
			continue
		}
		want = append(want, "hook gemini BeforeTool "+c.name, "hook gemini AfterTool "+c.name)
	}
	want = append(want, "hook gemini AfterAgent", "hook gemini SessionEnd")
	if strings.Join(seq, "\n") != strings.Join(want, "\n") {
		t.Fatalf("hook calls:\n%s\nwant:\n%s", strings.Join(seq, "\n"), strings.Join(want, "\n"))
	}
	// Gemini CLI's tool hooks carry no tool-call ID: the rm's are the ones whose command is rm.
	for _, r := range got {
		if in, _ := r.payload["tool_input"].(map[string]any); in["command"] == "rm -rf build" && r.build != (r.payload["hook_event_name"] == "BeforeTool") {
			t.Errorf("%s ran with build present=%v", r.args, r.build)
		}
		if _, has := r.payload["tool_use_id"]; has {
			t.Errorf("%s: Gemini CLI now sends a tool_use_id: plan's hook could use it", r.args)
		}
	}
	checkFixtures(t, "gemini", got, dir, home)
}

// TestGeminiCLISessionUndoneThroughPlan is TestClaudeCodeSessionUndoneThroughPlan for Gemini CLI,
// whose hooks carry no tool-call ID: plan names the calls itself.
func TestGeminiCLISessionUndoneThroughPlan(t *testing.T) {
	plan := binary(t, "PLAN_E2E_PLAN")
	gemini := binary(t, "PLAN_E2E_GEMINI")
	dir := project(t)
	home := t.TempDir()
	script := geminiSession(dir)
	srv := newGeminiServer(t, script)
	env := geminiEnv(t, home, srv.URL, "")
	run(t, dir, env, plan, "agent", "install", "gemini", "--project", "--bin", plan)
	if out := run(t, dir, env, gemini, "-p", "Tidy the project.", "--yolo", "-m", "gemini-2.5-pro"); !strings.Contains(out, "Done.") {
		t.Fatalf("gemini's output: %s", out)
	}
	checkWork(t, dir)
	checkUndo(t, plan, dir, env, "gemini", nil)
}
