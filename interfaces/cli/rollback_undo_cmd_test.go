package cli

import (
	"context"
	"strings"
	"testing"
)

// A rollback whose JSON cannot be written is exit 1 but went through: plan undo takes it back,
// not the decision before it.
func TestUndoARollbackWhoseOutputFailed(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "1\n")
	id := createCheckpoint(t, dir)
	mustPlan(t, dir, "exec", "--id", "d0", "--", "sh", "-c", "echo 2 > a.txt")
	var errOut strings.Builder
	r := Runner{Stdout: failingWriter{}, Stderr: &errOut, Stdin: strings.NewReader("")}
	code := r.Run(context.Background(), []string{"plan", "-C", dir, "--json", "--yes", "rollback", "--to-checkpoint", id})
	if code != ExitInternal || readFile(t, dir, "a.txt") != "1\n" {
		t.Fatalf("exit %d, stderr %q, a.txt %q", code, errOut.String(), readFile(t, dir, "a.txt"))
	}
	rb := historyOf(t, dir)[0]
	if rb.Kind != "rollback" || rb.Outcome != "internal" || rb.Undo == nil {
		t.Fatalf("the log entry: %+v", rb)
	}
	o := mustPlan(t, dir, "--yes", "undo")
	if !strings.HasPrefix(o.stdout, "Undid rollback "+rb.ID+": back to "+*rb.Undo+" (0 added, 1 modified, 0 deleted).\n") {
		t.Fatalf("%v", o)
	}
	if got := readFile(t, dir, "a.txt"); got != "2\n" {
		t.Fatalf("a.txt after undoing the rollback: %q", got)
	}
	if st := statusOf(t, dir); st["d0"].Status != "succeeded" {
		t.Fatalf("d0 after undoing the rollback that reverted it: %+v", st)
	}
}

// A rollback that did not go through is not logged (it changed nothing), so plan undo never picks it.
func TestAFailedRollbackIsNotUndoable(t *testing.T) {
	dir := newWorkspace(t)
	if o := inWorkspace(dir, "--yes", "rollback", "--to-checkpoint", "ffffffffffff"); o.code != ExitNotFound {
		t.Fatalf("%v", o)
	}
	if rb := historyOf(t, dir)[0]; rb.Kind == "rollback" {
		t.Fatalf("a refused rollback was logged: %+v", rb)
	}
	if o := inWorkspace(dir, "--yes", "undo"); o.code != ExitNotFound {
		t.Fatalf("%v", o)
	}
}
