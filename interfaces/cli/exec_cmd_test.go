package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plan exec exits with its command's status, as env, nice and timeout do (127 no such command,
// 126 not executable, 128+N killed by signal N), and ends with one line, not the plan's table.
func TestExecPassesTheChildsStatusThrough(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "not-executable", "echo no\n")
	for _, c := range []struct {
		name string
		cmd  []string
		code int
	}{
		{"a command that fails", []string{"sh", "-c", "exit 3"}, 3},
		{"no such command", []string{"no-such-command-here"}, 127},
		{"not executable", []string{"./not-executable"}, 126},
		{"killed by a signal", []string{"sh", "-c", "kill -TERM $$"}, 128 + 15},
	} {
		o := inWorkspace(dir, append([]string{"exec", "--"}, c.cmd...)...)
		if o.code != c.code || o.stdout != "" || strings.Contains(o.stderr, "DECISION") {
			t.Errorf("%s: want exit %d, nothing on stdout and no table\n%v", c.name, c.code, o)
		}
		lines := strings.Split(strings.TrimSpace(o.stderr), "\n")
		last := lines[len(lines)-1]
		if !strings.Contains(last, "failed with exit code") || !strings.Contains(last, "before it: plan rollback --to-checkpoint ") {
			t.Errorf("%s: the last line says what failed and how to undo it: %q", c.name, last)
		}
	}
	if o := inWorkspace(dir, "--json", "exec", "--", "sh", "-c", "exit 5"); o.code != 5 || !strings.Contains(o.stderr, `"kind":"decision_failed"`) || !strings.Contains(o.stderr, `"code":5`) {
		t.Errorf("--json: the error document carries the child's status\n%v", o)
	}

	o := mustPlan(t, dir, "exec", "--id", "make-it", "--", "sh", "-c", "echo made > made.txt; echo said")
	if !strings.HasPrefix(o.stdout, `make-it succeeded on plan adhoc (1 file changed; checkpoint `) || strings.Count(o.stdout, "\n") != 1 || !strings.Contains(o.stdout, " after it)") {
		t.Errorf("success is one line on stdout\n%v", o)
	}
	if strings.Contains(o.stderr, "make-it succeeded") || !strings.Contains(o.stderr, "said\n") {
		t.Errorf("stderr has the command's output and no second account of its end\n%v", o)
	}
	// A plan from a plan file takes no ad-hoc decision: refused, nothing run.
	if err := os.WriteFile(filepath.Join(dir, "p.yaml"), []byte("name: bare\ndecisions:\n  - id: a\n    run: \"true\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustPlan(t, dir, "run", "--no-checkpoints", "p.yaml")
	if o := inWorkspace(dir, "exec", "--plan", "bare", "--", "touch", "ran"); o.code != ExitConflict || !strings.Contains(o.stderr, "nothing was run") {
		t.Errorf("exec onto a plan file's plan\n%v", o)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); !os.IsNotExist(err) {
		t.Errorf("the refused exec ran its command: %v", err)
	}
}
