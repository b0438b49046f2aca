package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// agentRun runs plan in dir with HOME (and nothing else of the environment) set to home.
func agentRun(dir, home string, args ...string) outcome {
	env := map[string]string{"HOME": home}
	return invoke(Runner{Dir: dir, Getenv: func(k string) string { return env[k] }}, args...)
}

// checkAgentInstallOutputs drives install, a second install, uninstall and status (one file malformed).
func checkAgentInstallOutputs(t *testing.T, check func(name, doc string)) {
	t.Helper()
	dir, home := t.TempDir(), t.TempDir()
	o := agentRun(dir, home, "--json", "agent", "install", "claude", "--bin", "plan")
	if o.code != ExitOK {
		t.Fatal(o)
	}
	check("agent", o.stdout)
	check("agent", agentRun(dir, home, "--json", "agent", "install", "codex", "--user", "--bin", "plan").stdout)
	check("agent", agentRun(dir, home, "--json", "agent", "uninstall", "claude").stdout)
	writeFile(t, home, ".gemini/settings.json", "{")
	check("agent-status", agentRun(dir, home, "--json", "agent", "status").stdout)
}

func TestAgentInstallInitialisesAndIsIdempotent(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	o := agentRun(dir, home, "--json", "agent", "install", "claude", "--bin", "/opt/plan")
	if o.code != ExitOK {
		t.Fatal(o)
	}
	var v agentView
	if err := json.Unmarshal([]byte(o.stdout), &v); err != nil {
		t.Fatal(err)
	}
	if !v.Initialised || !v.Changed || !v.Created || v.Workspace == "" || v.Path != filepath.Join(v.Workspace, ".claude", "settings.json") {
		t.Fatalf("%+v", v)
	}
	if _, err := os.Stat(filepath.Join(dir, ".plan")); err != nil {
		t.Fatal("workspace not initialised")
	}
	first, _ := os.ReadFile(v.Path)
	o = agentRun(dir, home, "agent", "install", "claude", "--bin", "/opt/plan")
	if o.code != ExitOK || !strings.Contains(o.stdout, "already installed") || strings.Contains(o.stdout, "Initialised") {
		t.Fatal(o)
	}
	if again, _ := os.ReadFile(v.Path); string(again) != string(first) {
		t.Fatal("second install changed the file")
	}
	// From a subdirectory, the workspace's settings are the ones found.
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	o = agentRun(sub, home, "agent", "status")
	if o.code != ExitOK || !strings.Contains(o.stdout, "claude  project  installed  "+v.Path) || !strings.Contains(o.stdout, "claude  user     absent") {
		t.Fatal(o)
	}
	o = agentRun(sub, home, "agent", "install", "gemini", "--user")
	if o.code != ExitOK || !strings.Contains(o.stdout, "note: Gemini CLI runs a project's hooks only in a trusted folder") {
		t.Fatal(o)
	}
	exe, _ := os.Executable()
	if b, _ := os.ReadFile(filepath.Join(home, ".gemini", "settings.json")); !strings.Contains(string(b), filepath.Base(exe)+" hook gemini BeforeTool") {
		t.Fatalf("default --bin is not this binary:\n%s", b)
	}
	if o = agentRun(sub, home, "agent", "uninstall", "gemini", "--user"); o.code != ExitOK || !strings.Contains(o.stdout, "Removed plan's hooks for Gemini CLI") {
		t.Fatal(o)
	}
	if o = agentRun(sub, home, "agent", "uninstall", "gemini", "--user"); o.code != ExitOK || !strings.Contains(o.stdout, "has no plan hooks to remove") {
		t.Fatal(o)
	}
}

func TestAgentRefusals(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"agent", "install"}, ExitUsage, "name the agent"},
		{[]string{"agent", "install", "claude", "extra"}, ExitUsage, "unexpected argument"},
		{[]string{"agent", "install", "cursor"}, ExitUsage, `unknown agent "cursor"`},
		{[]string{"agent", "uninstall", "claude", "--user", "--project"}, ExitUsage, "exclude each other"},
		{[]string{"agent", "status", "x"}, ExitUsage, "unexpected argument"},
	} {
		if o := agentRun(dir, home, c.args...); o.code != c.code || !strings.Contains(o.stderr, c.msg) {
			t.Errorf("%v", o)
		}
	}
	if o := agentRun(dir, "", "agent", "install", "claude", "--user"); o.code != ExitInvalid || !strings.Contains(o.stderr, "HOME is not set") {
		t.Fatal(o)
	}
	if o := agentRun(dir, "", "agent", "status"); o.code != ExitInvalid {
		t.Fatal(o)
	}
	// A malformed settings file: refused before the workspace is made, left as it was.
	writeFile(t, dir, ".claude/settings.json", `{"hooks": []}`)
	o := agentRun(dir, home, "agent", "install", "claude")
	if o.code != ExitInvalid || !strings.Contains(o.stderr, `"hooks" is not an object`) {
		t.Fatal(o)
	}
	if _, err := os.Stat(filepath.Join(dir, ".plan")); !os.IsNotExist(err) {
		t.Fatal("a refused install made the workspace")
	}
	if o := agentRun(dir, home, "agent", "uninstall", "claude"); o.code != ExitInvalid {
		t.Fatal(o)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".claude", "settings.json")); string(b) != `{"hooks": []}` {
		t.Fatalf("changed: %s", b)
	}
	o = agentRun(dir, home, "agent", "status")
	if o.code != ExitOK || !strings.Contains(o.stdout, "claude  project  invalid") {
		t.Fatal(o)
	}
	// The settings directory is a file: the workspace is made, the write fails.
	dir2 := t.TempDir()
	writeFile(t, dir2, ".codex", "not a directory")
	if o := agentRun(dir2, home, "agent", "install", "codex"); o.code == ExitOK {
		t.Fatal(o)
	}
	// A .plan that is not a workspace: opening it fails, the settings are not written.
	dir3 := t.TempDir()
	writeFile(t, dir3, ".plan", "x")
	if o := agentRun(dir3, home, "agent", "install", "claude"); o.code == ExitOK {
		t.Fatal(o)
	}
	if _, err := os.Stat(filepath.Join(dir3, ".claude")); !os.IsNotExist(err) {
		t.Fatal("settings written for a workspace that failed to open")
	}
	// partial state in the text output
	writeFile(t, dir2, ".gemini/settings.json", `{"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": "plan hook gemini BeforeTool"}]}]}}`)
	if o := agentRun(dir2, home, "agent", "status"); !strings.Contains(o.stdout, "gemini  project  partial") || !strings.Contains(o.stdout, "missing: [AfterTool") {
		t.Fatal(o)
	}
}
