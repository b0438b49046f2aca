package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/infrastructure/bootstrap"
)

// Help for a command that does not exist is a usage error, not a silent exit 0 (scripts that
// probe `plan --help CMD` rely on the status).
func TestHelpForAnUnknownCommand(t *testing.T) {
	o := invoke(Runner{}, "--help", "frobnicate")
	if o.code != ExitUsage || !strings.Contains(o.stderr, `unknown command "frobnicate" (see `+"`plan --help`)") {
		t.Errorf("--help frobnicate: want exit 2\n%v", o)
	}
	o = invoke(Runner{}, "--json", "--help", "frobnicate")
	if o.code != ExitUsage || !strings.Contains(o.stderr, `"kind":"usage"`) {
		t.Errorf("--json --help frobnicate: want the usage error document\n%v", o)
	}
}

func TestShellCommandsRefuseExtraArguments(t *testing.T) {
	for _, args := range [][]string{{"completion", "bash", "zsh"}, {"man", "extra"}} {
		o := invoke(Runner{}, args...)
		if o.code != ExitUsage || o.stdout != "" || !strings.Contains(o.stderr, "unexpected argument") {
			t.Errorf("%v: want exit 2 and nothing on stdout\n%v", args, o)
		}
	}
}

// A correction that cannot be done fails before anything is asked: a person is never asked to
// confirm something that would then fail.
func TestCorrectFailsBeforeAsking(t *testing.T) {
	dir := newWorkspace(t)
	mustPlan(t, dir, "exec", "--id", "one", "--", "sh", "-c", "echo 1 > one.txt")
	o := invoke(Runner{Interactive: true, Stdin: strings.NewReader("y\n")}, "-C", dir, "correct", "--decision", "nope", "--reason", "wrong")
	if o.code != ExitNotFound || strings.Contains(o.stderr, "Continue?") {
		t.Errorf("correcting an unknown decision: want exit 4 without a prompt\n%v", o)
	}
	if got := readFile(t, dir, "one.txt"); got != "1\n" {
		t.Errorf("one.txt = %q", got)
	}
}

// The confirmation of a correction with --run shows the command that will replace the decision's.
func TestCorrectPromptShowsTheCorrectedCommand(t *testing.T) {
	dir := newWorkspace(t)
	mustPlan(t, dir, "exec", "--id", "one", "--", "sh", "-c", "echo 1 > one.txt")
	o := invoke(Runner{Interactive: true, Stdin: strings.NewReader("y\n")}, "-C", dir,
		"correct", "--decision", "one", "--reason", "wrong value", "--run", "echo 2 > one.txt")
	if o.code != ExitOK || !strings.Contains(o.stderr, "then re-execute from one with the command: echo 2 > one.txt\nContinue? [y/N] ") {
		t.Fatalf("correct --run, answered y: %v", o)
	}
	if !strings.Contains(o.stdout, "corrected command:   echo 2 > one.txt\n") || !strings.Contains(o.stdout, "re-executed:         one\n") {
		t.Errorf("the report lacks the corrected command: %v", o)
	}
	if got := readFile(t, dir, "one.txt"); got != "2\n" {
		t.Errorf("one.txt = %q after the correction, want the corrected command's output", got)
	}
}

// A rollback never overwrites a path the .planignore excludes: it holds data no snapshot has. It
// is left as it is, with a warning naming it.
func TestRollbackWarnsAboutIgnoredDataItKeeps(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "p", "stored\n")
	id := createCheckpoint(t, dir)
	writeFile(t, dir, ".planignore", "p\n")
	writeFile(t, dir, "p", "precious\n")
	o := mustPlan(t, dir, "--yes", "rollback", "--to-checkpoint", id)
	if !strings.Contains(o.stderr, `plan: warning: left "p" as it is: it holds data outside every snapshot (ignored)`+"\n") {
		t.Errorf("no warning about the ignored file: %v", o)
	}
	if got := readFile(t, dir, "p"); got != "precious\n" {
		t.Errorf("the rollback overwrote ignored data: p = %q", got)
	}
}

// Commands that change the workspace or the store wait for the workspace lock, then give up with
// exit 5 naming the holder, having changed nothing.
func TestBusyWorkspaceRefusesChanges(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	createCheckpoint(t, dir)
	createCheckpoint(t, dir)
	unlock := bootstrap.TestLock(t, dir)
	t.Run("busy", func(t *testing.T) {
		for _, args := range [][]string{
			{"checkpoint", "create"},
			{"checkpoint", "prune", "--keep", "1"},
			{"gc"},
			{"correction", "prune", "--keep", "0"},
		} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				t.Parallel() // each waits for the lock; together they wait once
				o := inWorkspace(dir, args...)
				if o.code != ExitConflict || !strings.Contains(o.stderr, "a test holding the lock") {
					t.Errorf("want exit 5 naming the holder\n%v", o)
				}
			})
		}
	})
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if o := mustPlan(t, dir, "checkpoint", "list"); strings.Count(o.stdout, " manual ") != 2 {
		t.Errorf("a refused command changed the checkpoints: %v", o)
	}
}

func TestPruneRefusesANegativeKeep(t *testing.T) {
	dir := newWorkspace(t)
	createCheckpoint(t, dir)
	if o := inWorkspace(dir, "checkpoint", "prune", "--keep", "-1"); o.code != ExitInvalid {
		t.Errorf("prune --keep -1: want exit 3\n%v", o)
	}
	if o := mustPlan(t, dir, "checkpoint", "list"); strings.Count(o.stdout, " manual ") != 1 {
		t.Errorf("a refused prune deleted a checkpoint: %v", o)
	}
}

// A missing required flag is a usage error (exit 2) on every command, naming the flag.
// (Without --store, workspaces and clone are about the local workspaces: --store is required only
// by what needs it, --db.)
func TestMissingRequiredFlagIsUsage(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"clone", filepath.Join(dir, "c")},
		{"clone", "--store", "file://" + dir, filepath.Join(dir, "c")},
		{"restore", "@"},
	} {
		o := invoke(Runner{Dir: dir}, args...)
		if o.code != ExitUsage || !strings.Contains(o.stderr, "missing --") {
			t.Errorf("want exit 2 naming the flag: %v", o)
		}
	}
	for _, args := range [][]string{
		{"workspaces", "--db", "sqlite:///x"},
		{"clone", "--workspace", "0123", "--db", "sqlite:///x", filepath.Join(dir, "c")},
	} {
		o := invoke(Runner{Dir: dir}, args...)
		if o.code != ExitUsage || !strings.Contains(o.stderr, "--db needs --store") {
			t.Errorf("want exit 2 naming --store: %v", o)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "c")); !os.IsNotExist(err) {
		t.Errorf("a refused clone made its directory: %v", err)
	}
	if o := invoke(Runner{}, "clone", "--help"); !strings.Contains(o.stdout, "(required)") {
		t.Errorf("help no longer says which flags are required:\n%s", o.stdout)
	}
}

// An unknown command close to a known one names it; one far from all does not guess.
func TestUnknownCommandSuggests(t *testing.T) {
	for args, want := range map[string]string{
		"rolback":         `unknown command "rolback": did you mean "rollback"?`,
		"checkpoint lsit": `unknown command "lsit": did you mean "list"?`,
		"zzz":             `unknown command "zzz" (see`,
	} {
		o := invoke(Runner{}, strings.Fields(args)...)
		if o.code != ExitUsage || !strings.Contains(o.stderr, want) {
			t.Errorf("plan %s: want exit 2 saying %q: %v", args, want, o)
		}
	}
}

// -n is --dry-run wherever there is one.
func TestDryRunShorthand(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one")
	id := createCheckpoint(t, dir)
	writeFile(t, dir, "a.txt", "two")
	if o := mustPlan(t, dir, "rollback", "-n", "--to-checkpoint", id); !strings.Contains(o.stdout, "would") {
		t.Errorf("rollback -n: %v", o)
	}
	if got := readFile(t, dir, "a.txt"); got != "two" {
		t.Fatalf("rollback -n changed a.txt to %q", got)
	}
	for _, args := range [][]string{{"checkpoint", "prune", "--keep", "0", "-n"}, {"undo", "-n"}, {"correction", "prune", "--keep", "0", "-n"}} {
		if o := inWorkspace(dir, args...); o.code == ExitUsage {
			t.Errorf("%v: -n is not --dry-run: %v", args, o)
		}
	}
}
