package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// checkUndoOutputs drives undo --to, redo (dry and real) and a prune that takes undo's safety
// checkpoints, for their schemas.
func checkUndoOutputs(t *testing.T, check func(name, doc string)) {
	t.Helper()
	dir := newWorkspace(t)
	runABC(t, dir)
	a := entryOf(t, dir, "a")
	check("undo", mustPlan(t, dir, "--json", "undo", "--to", a, "--dry-run").stdout)
	check("undo", mustPlan(t, dir, "--json", "--yes", "undo", "--to", a).stdout)
	check("redo", mustPlan(t, dir, "--json", "redo", "--dry-run").stdout)
	check("redo", mustPlan(t, dir, "--json", "--yes", "redo").stdout)
	check("checkpoint-prune", mustPlan(t, dir, "--json", "checkpoint", "prune", "--keep", "0", "--keep-daily", "1", "--dry-run").stdout)
	check("history", mustPlan(t, dir, "--json", "history").stdout)
}

func runABC(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, dir, "abc.yaml", "name: abc\ndecisions:\n  - id: a\n    run: echo a > a.txt\n  - id: b\n    run: echo b > b.txt\n  - id: c\n    run: echo c > c.txt\n")
	mustPlan(t, dir, "run", "abc.yaml")
}

// entryOf is the log entry of decision id's newest attempt.
func entryOf(t *testing.T, dir, id string) string {
	t.Helper()
	for _, op := range historyOf(t, dir) {
		if op.Kind == "decision" && len(op.Args) == 1 && op.Args[0] == id {
			return op.ID
		}
	}
	t.Fatalf("no entry of decision %s", id)
	return ""
}

func TestUndoToAndRedo(t *testing.T) {
	dir := newWorkspace(t)
	runABC(t, dir)
	a := entryOf(t, dir, "a")
	o := mustPlan(t, dir, "undo", "--to", a, "--dry-run")
	if !strings.HasPrefix(o.stdout, "Undoing 2 operations:\n") || !exists(dir, "c.txt") {
		t.Fatalf("dry run: %v", o)
	}
	o = mustPlan(t, dir, "--yes", "undo", "--to", a)
	if !strings.HasPrefix(o.stdout, "Undid 2 operations (back to before decision ") || exists(dir, "b.txt") || !exists(dir, "a.txt") {
		t.Fatalf("undo --to: %v", o)
	}
	if st := statusOf(t, dir); st["a"].Status != "succeeded" || st["b"].Status != "reverted" || st["c"].Status != "reverted" {
		t.Fatalf("statuses: %+v", st)
	}
	o = mustPlan(t, dir, "redo", "--dry-run")
	if !strings.HasPrefix(o.stdout, "Redoing undo ") || exists(dir, "b.txt") {
		t.Fatalf("dry redo: %v", o)
	}
	if o := inWorkspace(dir, "redo"); o.code != ExitUsage {
		t.Fatalf("redo without --yes and no terminal: %v", o)
	}
	o = mustPlan(t, dir, "--yes", "redo")
	if !strings.Contains(o.stdout, "Decisions back as they were: b, c\n") || readFile(t, dir, "c.txt") != "c\n" {
		t.Fatalf("redo: %v", o)
	}
	if st := statusOf(t, dir); st["b"].Status != "succeeded" || st["c"].Status != "succeeded" {
		t.Fatalf("statuses after redo: %+v", st)
	}
	if o := inWorkspace(dir, "--yes", "redo"); o.code != ExitNotFound || !strings.Contains(o.stderr, "nothing to redo") {
		t.Fatalf("nothing to redo: %v", o)
	}
	// A new operation after an undo: redo would throw it away and refuses.
	mustPlan(t, dir, "--yes", "undo")
	mustPlan(t, dir, "exec", "--id", "d", "--", "sh", "-c", "echo d > d.txt")
	if o := inWorkspace(dir, "--yes", "redo"); o.code != ExitConflict || !strings.Contains(o.stderr, "ran after it") || !exists(dir, "d.txt") {
		t.Fatalf("redo after a new decision: %v", o)
	}
	// Bad input.
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--yes", "undo", "--to", ""}, ExitUsage},
		{[]string{"--yes", "undo", "--to", "ffffffffffffffffffffffff"}, ExitNotFound},
		{[]string{"--yes", "undo", "--to", a[:4]}, ExitInvalid},
		{[]string{"--yes", "redo", "extra"}, ExitUsage},
		{[]string{"--yes", "undo", "extra"}, ExitUsage},
	} {
		if o := inWorkspace(dir, c.args...); o.code != c.code {
			t.Errorf("%v: want exit %d", o, c.code)
		}
	}
}

// Prune keeps the safety checkpoint the next undo needs and says which operations undo can no
// longer take back on their own; undo then steps past them with a warning.
func TestPruneAndUndoSafetyCheckpoints(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "f.txt", "0\n")
	base := createCheckpoint(t, dir)
	writeFile(t, dir, "f.txt", "1\n")
	mustPlan(t, dir, "--yes", "rollback", "--to-checkpoint", base)
	writeFile(t, dir, "f.txt", "2\n")
	mustPlan(t, dir, "--yes", "rollback", "--to-checkpoint", base)
	ops := historyOf(t, dir)
	newest, older := ops[0], ops[1]
	var pv struct {
		Deleted  []string          `json:"deleted"`
		Reasons  map[string]string `json:"reasons"`
		UndoLost []struct {
			ID string `json:"id"`
		} `json:"undo_lost"`
	}
	o := mustPlan(t, dir, "--json", "checkpoint", "prune", "--keep", "0", "--dry-run")
	if err := json.Unmarshal([]byte(o.stdout), &pv); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(pv.Reasons[*newest.Undo], "the next `plan undo` rolls back to it") || len(pv.UndoLost) != 1 || pv.UndoLost[0].ID != older.ID {
		t.Fatalf("prune preview: %+v", pv)
	}
	o = mustPlan(t, dir, "checkpoint", "prune", "--keep", "0")
	if !strings.Contains(o.stdout, "plan undo can no longer take back these 1 operations") {
		t.Fatalf("prune: %v", o)
	}
	// The first undo has its checkpoint; the second steps past the pruned one... and finds no
	// earlier one: refused, nothing changed.
	mustPlan(t, dir, "--yes", "undo")
	if readFile(t, dir, "f.txt") != "2\n" {
		t.Fatal("the first undo did not bring back 2")
	}
	o = inWorkspace(dir, "--yes", "undo")
	if o.code != ExitConflict || !strings.Contains(o.stderr, "every earlier operation's") || readFile(t, dir, "f.txt") != "2\n" {
		t.Fatalf("undo past a pruned checkpoint with nothing before it: %v", o)
	}
}

// Calendar retention on the command line: a newest checkpoint per day, combined with --keep.
func TestPruneCalendarFlags(t *testing.T) {
	dir := newWorkspace(t)
	for i := range 3 {
		writeFile(t, dir, "f.txt", strings.Repeat("x", i+1))
		createCheckpoint(t, dir)
	}
	o := mustPlan(t, dir, "checkpoint", "prune", "--keep-daily", "1", "--dry-run")
	if !strings.HasPrefix(o.stdout, "Would delete 2 checkpoints, kept 1.\n") || !strings.Contains(o.stdout, "(--keep-daily)") ||
		strings.Count(o.stdout, "  would delete ") != 2 {
		t.Fatalf("%v", o)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"checkpoint", "prune", "--keep-daily", "-1"}, ExitInvalid},
		{[]string{"checkpoint", "prune", "--policy", "--keep-weekly", "2"}, ExitUsage},
		{[]string{"checkpoint", "prune"}, ExitUsage},
	} {
		if o := inWorkspace(dir, c.args...); o.code != c.code {
			t.Errorf("%v: want exit %d", o, c.code)
		}
	}
}
