package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/interfaces/view"
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
	writeFile(t, dir, "abc.yaml", "name: abc\ndecisions:\n  - id: a\n    run: echo A > a.txt\n  - id: b\n    run: echo b > b.txt\n  - id: c\n    run: echo c > c.txt\n")
	check("run", mustPlan(t, dir, "--json", "run", "abc.yaml").stdout)
	check("run", mustPlan(t, dir, "--json", "run", "abc.yaml", "--rerun-changed").stdout)
	checkPendingOutputs(t, check)
}

// conflicted makes a workspace whose surgical revert of decision two left markers in cfg.txt.
func conflicted(t *testing.T) string {
	t.Helper()
	dir := newWorkspace(t)
	writeFile(t, dir, "cfg.txt", "a\nb\nc\nd\ne\n")
	mustPlan(t, dir, "exec", "--id", "two", "--", "sh", "-c", `printf 'A\nb\nc\nd\ne\n' > cfg.txt`)
	mustPlan(t, dir, "exec", "--id", "three", "--", "sh", "-c", `printf 'AA\nb\nc\nd\ne\n' > cfg.txt`)
	mustPlan(t, dir, "--yes", "revert", "--decision", "two", "--reason", "wrong", "--conflicts", "markers")
	return dir
}

// checkPendingOutputs drives conflicts, resolve, validate and status with conflicts, for their
// schemas.
func checkPendingOutputs(t *testing.T, check func(name, doc string)) {
	t.Helper()
	dir := conflicted(t)
	check("conflicts", mustPlan(t, dir, "--json", "conflicts").stdout)
	check("status", mustPlan(t, dir, "--json", "status").stdout)
	check("correction-list", mustPlan(t, dir, "--json", "correction", "list").stdout)
	o := inWorkspace(dir, "--json", "validate")
	if o.code != ExitInternal {
		t.Fatalf("validate with a conflict: %v", o)
	}
	check("validate", o.stdout)
	check("error", o.stderr)
	check("conflicts", mustPlan(t, dir, "--json", "resolve", "--force", "cfg.txt").stdout)
	check("correction-list", mustPlan(t, dir, "--json", "correction", "list").stdout)
	configure(t, dir, "validate:\n  command: \"true\"\n")
	check("validate", mustPlan(t, dir, "--json", "validate").stdout)
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
		strings.Count(o.stdout, "  delete  ") != 2 {
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

func TestConflictsResolveAndStatus(t *testing.T) {
	dir := conflicted(t)
	st := mustPlan(t, dir, "status").stdout
	if !strings.Contains(st, "unresolved conflicts: 1 (cfg.txt): edit them, then plan resolve PATH…\n") || !strings.Contains(st, "store: ok (private, ") {
		t.Fatalf("status: %s", st)
	}
	o := mustPlan(t, dir, "conflicts")
	if !strings.HasPrefix(o.stdout, "PATH     WRITTEN  DECISION  CORRECTION") || !strings.Contains(o.stdout, "cfg.txt  cfg.txt  two") {
		t.Fatalf("conflicts: %v", o)
	}
	if l := mustPlan(t, dir, "correction", "list").stdout; !strings.Contains(l, "needs_attention") {
		t.Fatalf("correction list: %s", l)
	}
	// Markers left: refused, nothing marked; bad input.
	if o := inWorkspace(dir, "resolve", "cfg.txt"); o.code != ExitConflict || !strings.Contains(o.stderr, "still holds conflict markers (line 1)") {
		t.Fatalf("resolve with markers: %v", o)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"resolve"}, ExitUsage},
		{[]string{"resolve", "other.txt"}, ExitNotFound},
		{[]string{"resolve", "/elsewhere/x"}, ExitInvalid},
		{[]string{"conflicts", "x"}, ExitUsage},
		{[]string{"validate", "x"}, ExitUsage},
	} {
		if o := inWorkspace(dir, c.args...); o.code != c.code {
			t.Errorf("%v: want exit %d", o, c.code)
		}
	}
	// From a subdirectory, a path relative to it.
	writeFile(t, dir, "cfg.txt", "settled\n")
	writeFile(t, dir, "sub/keep.txt", "x")
	o = invoke(Runner{}, "-C", dir+"/sub", "resolve", "../cfg.txt")
	if o.code != ExitOK || !strings.HasPrefix(o.stdout, "Resolved cfg.txt (correction ") {
		t.Fatalf("resolve: %v", o)
	}
	if o := mustPlan(t, dir, "conflicts"); o.stdout != "No unresolved conflicts.\n" {
		t.Fatalf("after resolve: %v", o)
	}
	if l := mustPlan(t, dir, "correction", "list").stdout; strings.Contains(l, "needs_attention") || !strings.Contains(l, "succeeded") {
		t.Fatalf("correction list after resolve: %s", l)
	}
	if strings.Contains(mustPlan(t, dir, "status").stdout, "unresolved") {
		t.Fatal("status still tells conflicts")
	}
	if ops := historyOf(t, dir); ops[0].Kind != "resolve" {
		t.Fatalf("resolve is not logged: %+v", ops[0])
	}
}

func TestValidateAndCheckpointCreateValidate(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	if o := mustPlan(t, dir, "validate"); !strings.Contains(o.stdout, "no check command configured") {
		t.Fatalf("%v", o)
	}
	configure(t, dir, "validate:\n  command: test -f ok.txt\n")
	before := len(listCheckpoints(t, dir))
	o := inWorkspace(dir, "checkpoint", "create", "--validate")
	if o.code != ExitInternal || !strings.Contains(o.stderr, `no checkpoint was taken: the check "test -f ok.txt" failed with exit code 1`) {
		t.Fatalf("create --validate failing: %v", o)
	}
	if n := len(listCheckpoints(t, dir)); n != before {
		t.Fatalf("a refused checkpoint was recorded: %d, %d before", n, before)
	}
	if ops := historyOf(t, dir); len(ops) > 0 && ops[0].Kind == "checkpoint" {
		t.Fatalf("a refused checkpoint was logged: %+v", ops[0])
	}
	if o := inWorkspace(dir, "validate"); o.code != ExitInternal || !strings.Contains(o.stdout, "failed with exit code 1") {
		t.Fatalf("validate failing: %v", o)
	}
	writeFile(t, dir, "ok.txt", "")
	if o := mustPlan(t, dir, "validate"); !strings.Contains(o.stdout, `the check "test -f ok.txt" passed`) {
		t.Fatalf("%v", o)
	}
	mustPlan(t, dir, "checkpoint", "create", "--validate")
	if n := len(listCheckpoints(t, dir)); n != before+1 {
		t.Fatalf("%d checkpoints", n)
	}
	// A blank command is refused as bad configuration.
	configure(t, dir, "validate:\n  command: \"  \"\n")
	if o := inWorkspace(dir, "checkpoint", "create", "--validate"); o.code != ExitInvalid || !strings.Contains(o.stderr, "validate.command is blank") {
		t.Fatalf("blank command: %v", o)
	}
	if o := inWorkspace(dir, "validate"); o.code != ExitInvalid {
		t.Fatalf("blank command, validate: %v", o)
	}
}

func listCheckpoints(t *testing.T, dir string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "checkpoint", "list").stdout), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// A plan file edited after its decisions succeeded: run warns and keeps them; --rerun-changed
// rolls back to the first changed one's pre_decision checkpoint, keeps the edited plan file, and
// re-executes from there; plan undo takes the re-run back step by step.
func TestRunRerunChangedFromTheCommandLine(t *testing.T) {
	dir := newWorkspace(t)
	runABC(t, dir)
	writeFile(t, dir, "abc.yaml", "name: abc\ndecisions:\n  - id: a\n    run: echo a > a.txt\n  - id: b\n    run: echo B > b.txt\n  - id: c\n    run: cat b.txt > c.txt\n")
	o := mustPlan(t, dir, "run", "abc.yaml")
	if !strings.Contains(o.stderr, "changed decisions that already succeeded: b (command), c (command)") || readFile(t, dir, "b.txt") != "b\n" {
		t.Fatalf("%v", o)
	}
	var rv struct {
		Changed []struct {
			ID     string   `json:"id"`
			Fields []string `json:"fields"`
		} `json:"changed_decisions"`
		RerunFrom *string `json:"rerun_from"`
	}
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "run", "abc.yaml").stdout), &rv); err != nil || len(rv.Changed) != 2 || rv.RerunFrom != nil {
		t.Fatalf("%+v, %v", rv, err)
	}
	o = mustPlan(t, dir, "run", "abc.yaml", "--rerun-changed")
	if !strings.Contains(o.stdout, "Re-ran from b, whose definition changed") || readFile(t, dir, "c.txt") != "B\n" ||
		!strings.Contains(readFile(t, dir, "abc.yaml"), "echo B") {
		t.Fatalf("%v", o)
	}
	if o := mustPlan(t, dir, "run", "abc.yaml"); strings.Contains(o.stderr, "changed decisions") {
		t.Fatalf("still reported: %v", o)
	}
	// Undo: c, b, then the re-run's rollback: the state before the re-run.
	for range 3 {
		mustPlan(t, dir, "--yes", "undo")
	}
	if readFile(t, dir, "b.txt") != "b\n" || readFile(t, dir, "c.txt") != "c\n" || !strings.Contains(readFile(t, dir, "abc.yaml"), "echo B") {
		t.Fatalf("after undoing the re-run: b %q c %q", readFile(t, dir, "b.txt"), readFile(t, dir, "c.txt"))
	}
}

// Status's store line names a shared store, and says PROBLEM when the check found one; a plan file
// outside the workspace is nothing rerun keeps.
func TestStatusStoreLine(t *testing.T) {
	base := t.TempDir()
	storeDir := filepath.Join(base, "store")
	dir := filepath.Join(base, "ws")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	mustPlan(t, dir, "init", "--store", "file://"+storeDir)
	writeFile(t, dir, "a.txt", "a\n")
	createCheckpoint(t, dir)
	if o := mustPlan(t, dir, "status"); !strings.Contains(o.stdout, "store: ok ("+storeDir+", ") {
		t.Fatalf("%v", o)
	}
	// A problem the check found is one line too (a damaged newest checkpoint itself stops status
	// earlier: it compares the workspace with that checkpoint).
	var b strings.Builder
	problem := "the newest checkpoint x: object missing (plan doctor, plan verify)"
	printPending(&b, view.WorkspaceState{Store: view.StoreHealth{Problem: &problem}})
	if b.String() != "store: PROBLEM: "+problem+"\n" {
		t.Errorf("%q", b.String())
	}
	if got := planFileInside(dir, filepath.Join(base, "p.yaml")); got != nil {
		t.Errorf("a plan file outside the workspace: %v", got)
	}
	if got := planFileInside(dir, dir); got != nil {
		t.Errorf("the workspace itself: %v", got)
	}
}

// The retention policy after a run says which undos it took away.
func TestRetentionAfterARunNamesTheUndosItTakes(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "f.txt", "0\n")
	base := createCheckpoint(t, dir)
	writeFile(t, dir, "f.txt", "1\n")
	mustPlan(t, dir, "--yes", "rollback", "--to-checkpoint", base)
	writeFile(t, dir, "f.txt", "2\n")
	mustPlan(t, dir, "--yes", "rollback", "--to-checkpoint", base)
	configure(t, dir, "retention:\n  keep: 1\n")
	writeFile(t, dir, "p.yaml", "name: p\ndecisions:\n  - id: x\n    run: echo x > x.txt\n")
	o := mustPlan(t, dir, "run", "p.yaml")
	if !strings.Contains(o.stderr, "the retention policy deleted the safety checkpoints of 1 operations plan undo could still take back (rollback ") {
		t.Fatalf("%v", o)
	}
}
