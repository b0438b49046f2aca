package cli

import (
	"strings"
	"testing"
)

// Completion scripts for the three shells, a manual page built from the command definitions, and
// help pages that end with the exit statuses.
func TestShellHabits(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "complete -o default -F _plan_complete plan",
		"zsh":  "bashcompinit",
		"fish": "complete -c plan -a '(__plan_complete)'",
	} {
		o := invoke(Runner{}, "completion", shell)
		if o.code != ExitOK || !strings.Contains(o.stdout, want) {
			t.Errorf("completion %s: %v", shell, o)
		}
	}
	if o := invoke(Runner{}, "completion", "tcsh"); o.code != ExitUsage {
		t.Errorf("an unknown shell: %v", o)
	}
	if o := invoke(Runner{}, "completion"); o.code != ExitUsage {
		t.Errorf("no shell: %v", o)
	}
	o := invoke(Runner{}, "man")
	if o.code != ExitOK || !strings.Contains(o.stdout, ".TH plan 1") || !strings.Contains(o.stdout, "rollback") {
		t.Errorf("man: %v", o)
	}
	for _, args := range [][]string{{"--help"}, {"rollback", "--help"}, {"checkpoint", "--help"}, {"checkpoint", "create", "--help"}} {
		if o := invoke(Runner{}, args...); !strings.Contains(o.stdout, "EXIT STATUS:") || !strings.Contains(o.stdout, "6 integrity") {
			t.Errorf("%v does not end with the exit statuses: %v", args, o)
		}
	}
}

// --quiet leaves stderr to warnings and errors: no decision output and no narration.
func TestQuiet(t *testing.T) {
	dir := newWorkspace(t)
	loud := mustPlan(t, dir, "exec", "--id", "one", "--", "echo", "decision-output")
	if !strings.Contains(loud.stderr, "decision-output") || !strings.Contains(loud.stderr, "plan: running one") {
		t.Fatalf("without --quiet: %v", loud)
	}
	quiet := mustPlan(t, dir, "--quiet", "exec", "--id", "two", "--", "echo", "decision-output")
	if quiet.stderr != "" {
		t.Fatalf("--quiet still wrote to stderr: %q", quiet.stderr)
	}
}

// Version prefers what the build set, and otherwise describes the binary from its build info.
func TestVersion(t *testing.T) {
	if v := Version("v9.9.9"); v != "v9.9.9" {
		t.Fatalf("override: %q", v)
	}
	if v := Version(""); v == "" || v == "unknown" {
		t.Fatalf("from build info: %q", v)
	}
}
