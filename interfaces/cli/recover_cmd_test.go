package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// childEnv makes the test binary run the CLI instead of the tests, so a test can crash a real plan
// process at a failpoint (SIGKILL) and inspect what it left behind.
const childEnv = "PLAN_CLI_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(DefaultRunner("test").Run(context.Background(), os.Args))
	}
	os.Exit(withOwnDataDir(m.Run))
}

// withOwnDataDir runs the tests with a data directory of the run's own (PLAN_DATA_DIR), made in
// the one PLAN_DATA_DIR names, or in the temporary directory when it names none: the workspaces
// they make never send their history into the user's data directory (~/.local/share/plan), and
// never meet another package's, whose tests run at the same time (concurrent inits in one data
// directory can refuse each other: an init sees the other's entry directory before its
// workspace.json is written, as damaged). Child processes inherit it.
func withOwnDataDir(run func() int) int {
	dir, err := os.MkdirTemp(os.Getenv("PLAN_DATA_DIR"), "plan-cli-test-data-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := os.Setenv("PLAN_DATA_DIR", dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return run()
}

// crash runs plan args in a child process with failpoint armed and requires that it was killed.
func crash(t *testing.T, failpointName string, args ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...) // #nosec -- the test binary itself
	cmd.Env = append(os.Environ(), childEnv+"=1", "PLAN_FAILPOINT="+failpointName)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("plan %q at %s was not killed: %v\n%s", args, failpointName, err, out)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("plan %q at %s ended with %v, not SIGKILL\n%s", args, failpointName, err, out)
	}
}

// `plan recover` finishes a rollback a crash interrupted, and tells a person what it did: work
// done after the crash is recorded as a checkpoint first, so recovery destroys nothing.
func TestRecoverReportsWhatItDid(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "target\n")
	target := createCheckpoint(t, dir)
	writeFile(t, dir, "a.txt", "changed\n")
	writeFile(t, dir, "b.txt", "new\n")

	crash(t, "restore.removed", "-C", dir, "--yes", "rollback", "--to-checkpoint", target)
	if _, err := os.Stat(stateOf(t, dir).JournalFile()); err != nil {
		t.Fatalf("the killed rollback left no journal: %v", err)
	}
	// Work done after the crash, which no snapshot holds yet.
	writeFile(t, dir, "after-crash.txt", "precious\n")

	o := mustPlan(t, dir, "checkpoint", "list")
	if !strings.Contains(o.stderr, "is pending and the workspace may be part-way through it: run `plan recover`") {
		t.Errorf("a read-only command does not report the pending rollback: %v", o)
	}
	o = mustPlan(t, dir, "recover")
	m := regexp.MustCompile(`^The workspace had changed since the crash: 1 path\(s\) recorded first as checkpoint ([0-9a-f]{24})\.\n` +
		`Recovered interrupted rollback [0-9a-f]{24}: completed\.\n$`).FindStringSubmatch(o.stdout)
	if m == nil {
		t.Fatalf("recover: %v", o)
	}
	if got := readFile(t, dir, "a.txt"); got != "target\n" {
		t.Errorf("a.txt = %q after recovery, want the target's", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "after-crash.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the finished rollback kept a path the target does not have: %v", err)
	}
	// What recovery removed is in the checkpoint it recorded first.
	mustPlan(t, dir, "--yes", "rollback", "--to-checkpoint", m[1])
	if got := readFile(t, dir, "after-crash.txt"); got != "precious\n" {
		t.Errorf("the work done after the crash is lost: %q", got)
	}
	if o := mustPlan(t, dir, "recover"); o.stdout != "Nothing to recover: no operation was interrupted.\n" {
		t.Errorf("a second recover: %v", o)
	}
}
