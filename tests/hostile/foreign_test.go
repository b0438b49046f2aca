package hostile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Workspaces another user controls: whoever can write a workspace's .plan/ or its config.yaml
// decides what plan runs as the user who runs it (validate.command; the decisions `plan correct`
// re-executes), so plan refuses such a workspace (exit 5, conflict) wherever it is found or however
// it is named, and never runs a command it names.

// withValidateCommand gives the workspace a validate.command that leaves a mark outside it, and
// returns the mark's path.
func withValidateCommand(t *testing.T, w *workspace) string {
	t.Helper()
	mark := filepath.Join(t.TempDir(), "ran")
	f, err := os.OpenFile(w.path(".plan/config.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("validate:\n  command: \"id -u > " + mark + "\"\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return mark
}

// runIn runs plan in the directory cwd without -C, as a user typing it there.
func runIn(t *testing.T, cwd string, env []string, args ...string) result {
	t.Helper()
	p := &running{args: args, cmd: command(t, "", env, "", args...), done: make(chan struct{})}
	p.cmd.Dir = cwd
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errb
	if err := p.cmd.Run(); err != nil {
		p.err = err
	}
	close(p.done)
	return p.result(t)
}

// requireRefused fails the test unless r is exit 5, a conflict, whose message has every one of want.
func requireRefused(t *testing.T, r result, want ...string) {
	t.Helper()
	if r.code != 5 || r.errorKind() != "conflict" {
		t.Fatalf("want exit 5 (conflict):\n%s", r)
	}
	for _, s := range want {
		if !strings.Contains(r.stderr, s) {
			t.Fatalf("the refusal does not say %q:\n%s", s, r)
		}
	}
}

// requireNotRun fails the test when the validate command left its mark.
func requireNotRun(t *testing.T, mark string) {
	t.Helper()
	if b, err := os.ReadFile(mark); err == nil {
		t.Fatalf("the other user's validate.command ran (as uid %s)", strings.TrimSpace(string(b)))
	}
}

// A .plan another user made in the directory plan starts in (the current directory or -C DIR) is
// refused as one above it is, and its validate.command never runs: the repro's attack, a workspace
// planted in a world-writable directory of the user's own workspace.
func TestForeignWorkspaceAtTheStartIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a .plan to another user (uid 65534)")
	}
	own := newWorkspace(t, []string{"PLAN_WATCH=0"})
	shared := own.path("shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil { // whatever the umask
		t.Fatal(err)
	}
	planted := &workspace{t: t, dir: shared, env: own.env}
	planted.must("init", "--nested")
	mark := withValidateCommand(t, planted)
	// The other user's, as they would make it: theirs, and open to all.
	err := filepath.Walk(planted.path(".plan"), func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			err = os.Chown(p, 65534, 65534)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--json", "validate"}, {"--json", "checkpoint", "create", "--validate"},
		{"--json", "status"}, {"--json", "init", "--nested"}} {
		requireRefused(t, runIn(t, shared, own.env, args...), "belongs to another user (uid 65534)", "run plan as the user who owns it")
		requireRefused(t, runPlan(t, shared, own.env, args...), "belongs to another user (uid 65534)")
	}
	sub := filepath.Join(shared, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	requireRefused(t, runIn(t, sub, own.env, "--json", "validate"), "belongs to another user (uid 65534)", "run plan as the user who owns it")
	requireNotRun(t, mark)
}

// A workspace of the user's whose config.yaml another user owns never runs its validate.command.
func TestForeignConfigurationIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give config.yaml to another user (uid 65534)")
	}
	w := newWorkspace(t, []string{"PLAN_WATCH=0"})
	mark := withValidateCommand(t, w)
	if err := os.Chown(w.path(".plan/config.yaml"), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"validate"}, {"checkpoint", "create", "--validate"}} {
		requireRefused(t, w.run(append([]string{"--json"}, args...)...), "config.yaml belongs to another user (uid 65534)",
			"will not read a configuration another user can write")
	}
	requireNotRun(t, mark)
}

// A configuration or .plan that others may write is refused as another user's is (no root needed:
// the user's own files, opened up), and plan says how to close it; closed again, it is used.
func TestWorkspaceOthersCanWriteIsRefused(t *testing.T) {
	w := newWorkspace(t, []string{"PLAN_WATCH=0"})
	mark := withValidateCommand(t, w)
	for _, p := range []string{".plan/config.yaml", ".plan"} {
		info, err := os.Stat(w.path(p))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(w.path(p), info.Mode().Perm()|0o022); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"validate"}, {"checkpoint", "create", "--validate"}} {
			requireRefused(t, w.run(append([]string{"--json"}, args...)...), "is writable by users other than you", "chmod go-w")
		}
		requireNotRun(t, mark)
		if err := os.Chmod(w.path(p), info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	w.must("validate")
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("the user's own validate.command did not run once the workspace was theirs alone: %v", err)
	}
}
