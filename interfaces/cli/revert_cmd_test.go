package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/planhq/plan/interfaces/view"
	"github.com/planhq/plan/tests/testkit/treetest"
)

const revertBase = "one\ntwo\nthree\nfour\nfive\n"

// revertWorkspace runs d0 (rewrites line 2 of a.txt, creates c.txt) and then d1 (creates b.txt and
// rewrites a.txt's line later, line 3 when overlap: next to d0's, so reverting d0 conflicts).
func revertWorkspace(t *testing.T, overlap bool) string {
	t.Helper()
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", revertBase)
	mustPlan(t, dir, "exec", "--id", "d0", "--", "sh", "-c", `printf 'one\nTWO\nthree\nfour\nfive\n' > a.txt; echo c > c.txt`)
	later := `printf 'one\nTWO\nthree\nfour\nFIVE\n' > a.txt; echo b > b.txt`
	if overlap {
		later = `printf 'one\nTWO\nTHREE\nfour\nfive\n' > a.txt; echo b > b.txt`
	}
	mustPlan(t, dir, "exec", "--id", "d1", "--", "sh", "-c", later)
	return dir
}

// snapshot reads the workspace for treetest.RequireSame.
func snapshot(t *testing.T, dir string) func(context string) {
	t.Helper()
	before, err := treetest.Read(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return func(context string) {
		t.Helper()
		treetest.RequireSame(t, dir, nil, before, context)
	}
}

func correctionCount(t *testing.T, dir string) int {
	t.Helper()
	var cs []json.RawMessage
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "correction", "list").stdout), &cs); err != nil {
		t.Fatal(err)
	}
	return len(cs)
}

func decodeRevert(t *testing.T, o outcome) view.Revert {
	t.Helper()
	var v view.Revert
	if err := json.Unmarshal([]byte(o.stdout), &v); err != nil {
		t.Fatalf("stdout is not a revert document: %v\n%v", err, o)
	}
	return v
}

// lineValue returns what follows label on the line of stdout that starts with it.
func lineValue(t *testing.T, o outcome, label string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(label) + `\s+(\S+)`).FindStringSubmatch(o.stdout)
	if m == nil {
		t.Fatalf("no %q line in\n%v", label, o)
	}
	return m[1]
}

// Usage errors are exit 2 and come before the workspace is opened (here it is not even initialised).
func TestRevertUsageErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args   []string
		stderr string
	}{
		{[]string{"revert"}, "plan: missing --decision ID (see `plan revert --help`)\n"},
		{[]string{"revert", "--decision", "d0"}, "plan: missing --reason TEXT: say why the decision was wrong\n"},
		{[]string{"revert", "--decision", "d0", "--reason", "r", "--conflicts", "theirs"}, `plan: --conflicts "theirs": want refuse or markers` + "\n"},
		{[]string{"revert", "--decision", "d0", "--reason", "r", "extra"}, `unexpected argument "extra"`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			o := inWorkspace(dir, c.args...)
			if o.code != ExitUsage || !strings.Contains(o.stderr, c.stderr) || o.stdout != "" {
				t.Errorf("want exit %d and %q on stderr\n%v", ExitUsage, c.stderr, o)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, ".plan")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a usage error created .plan/: %v", err)
	}
}

// An unknown decision is exit 4 whether or not the preview for the confirmation runs first (without
// --yes and without a terminal, the preview's error wins over "needs confirmation").
func TestRevertUnknownDecision(t *testing.T) {
	dir := revertWorkspace(t, false)
	same := snapshot(t, dir)
	for _, args := range [][]string{
		{"revert", "--decision", "nope", "--reason", "r"},
		{"--yes", "revert", "--decision", "nope", "--reason", "r"},
		{"--json", "--yes", "revert", "--decision", "nope", "--reason", "r"},
	} {
		o := inWorkspace(dir, args...)
		if o.code != ExitNotFound || o.stdout != "" || !strings.Contains(o.stderr, "nope") {
			t.Errorf("want exit %d naming the decision\n%v", ExitNotFound, o)
		}
	}
	same("an unknown decision changed the workspace")
	if n := correctionCount(t, dir); n != 0 {
		t.Fatalf("an unknown decision recorded %d corrections", n)
	}
}

func TestRevertNeedsConfirmation(t *testing.T) {
	dir := revertWorkspace(t, false)
	same := snapshot(t, dir)
	o := inWorkspace(dir, "revert", "--decision", "d0", "--reason", "r")
	if o.code != ExitUsage || !strings.Contains(o.stderr, "plan: revert needs confirmation and there is no terminal to ask on: pass --yes\n") {
		t.Fatalf("%v", o)
	}
	o = invoke(Runner{Interactive: true, Stdin: strings.NewReader("n\n")}, "-C", dir,
		"revert", "--decision", "d0", "--reason", "r", "--run", "echo again")
	want := "Reverting d0 (attempt 1) alone would change 2 path(s):\n" +
		"  merge    a.txt\n" +
		"  restore  c.txt\n" +
		"then run for d0 alone: echo again\n" +
		"Continue? [y/N] plan: revert cancelled: nothing was changed\n"
	if o.code != ExitDeclined || o.stderr != want || o.stdout != "" {
		t.Fatalf("want exit 8 and\n%s\n%v", want, o)
	}
	same("a declined revert changed the workspace")
	if n := correctionCount(t, dir); n != 0 {
		t.Fatalf("a declined revert recorded %d corrections", n)
	}

	o = invoke(Runner{Interactive: true, Stdin: strings.NewReader("y\n")}, "-C", dir, "revert", "--decision", "d0", "--reason", "r")
	if o.code != ExitOK || !strings.HasPrefix(o.stdout, "Reverted d0 (attempt 1) alone as correction ") {
		t.Fatalf("%v", o)
	}
	if got := readFile(t, dir, "a.txt"); got != "one\ntwo\nthree\nfour\nFIVE\n" {
		t.Fatalf("a.txt after the confirmed revert: %q", got)
	}
}

// A clean revert undoes d0 alone (its line and its file), keeps d1's work, says so, and names a
// safety checkpoint that undoes it. The log entry carries the correction's ID and that checkpoint.
func TestRevertText(t *testing.T) {
	dir := revertWorkspace(t, false)
	same := snapshot(t, dir)
	o := mustPlan(t, dir, "--yes", "revert", "--decision", "d0", "--reason", "wrong")
	id := regexp.MustCompile(`as correction (\S+);`).FindStringSubmatch(o.stdout)
	if id == nil {
		t.Fatalf("%v", o)
	}
	safety, archive := lineValue(t, o, "safety checkpoint:"), lineValue(t, o, "archive:")
	want := "Reverted d0 (attempt 1) alone as correction " + id[1] + "; later decisions keep their results:\n" +
		"  merge    a.txt\n" +
		"  restore  c.txt\n" +
		"0 added, 1 modified, 1 deleted.\n" +
		"safety checkpoint:   " + safety + " (roll back to it to undo the revert)\n" +
		"archive:             " + archive + "\n"
	if o.stdout != want {
		t.Fatalf("want\n%s\n%v", want, o)
	}
	if archive != filepath.Join(stateOf(t, dir).Archive(), id[1]) {
		t.Errorf("archive %s is not the workspace's archive/%s", archive, id[1])
	}
	if got := readFile(t, dir, "a.txt"); got != "one\ntwo\nthree\nfour\nFIVE\n" {
		t.Errorf("a.txt: %q", got)
	}
	if exists(dir, "c.txt") || readFile(t, dir, "b.txt") != "b\n" {
		t.Errorf("c.txt (d0's) must go and b.txt (d1's) stay")
	}
	st := statusOf(t, dir)
	if st["d0"].Status != "reverted" || st["d1"].Status != "succeeded" {
		t.Errorf("statuses: %+v", st)
	}

	ops := historyOf(t, dir)
	if ops[0].Kind != "revert" || ops[0].ID != id[1] || ops[0].Outcome != "ok" || ops[0].Undo == nil || *ops[0].Undo != safety {
		t.Errorf("the log entry: %+v, want revert %s undone by %s", ops[0], id[1], safety)
	}

	mustPlan(t, dir, "--yes", "rollback", "--to-checkpoint", safety)
	same("rolling back to the revert's safety checkpoint")
}

// A conflicting revert is refused with exit 5 even without --yes or a terminal (there is nothing to
// confirm), lists the conflicts on stdout and changes nothing.
func TestRevertRefusedText(t *testing.T) {
	dir := revertWorkspace(t, true)
	same := snapshot(t, dir)
	o := inWorkspace(dir, "revert", "--decision", "d0", "--reason", "r")
	want := "Reverting d0 (attempt 1) conflicts with later changes in 1 path(s); nothing was changed:\n" +
		"  conflict a.txt: changed since the decision in overlapping lines\n"
	if o.code != ExitConflict || o.stdout != want ||
		!strings.Contains(o.stderr, "plan: reverting d0 conflicts with later changes in 1 path(s) (a.txt: changed since the decision in overlapping lines): nothing was changed; resolve them, or pass --conflicts markers\n") {
		t.Fatalf("want exit 5 and\n%s\n%v", want, o)
	}
	same("a refused revert changed the workspace")
	if n := correctionCount(t, dir); n != 0 {
		t.Fatalf("a refused revert recorded %d corrections", n)
	}

	o = inWorkspace(dir, "--json", "--yes", "revert", "--decision", "d0", "--reason", "r")
	v := decodeRevert(t, o)
	if o.code != ExitConflict || v.Status != "refused" || !v.Refused || v.CorrectionID != nil || v.SafetyCheckpointID != nil ||
		len(v.Conflicts) != 1 || v.Conflicts[0].Path != "a.txt" || v.Conflicts[0].Action != "conflict" {
		t.Fatalf("%v", o)
	}
	same("a refused revert (--json) changed the workspace")
}

// A dry run of a revert that would be refused still shows the whole per-path plan (docs/cli.md:
// "--dry-run prints the per-path plan ... exit 0 even when the real revert would be refused"), not
// only the conflicts, and says how to go ahead.
func TestRevertDryRunOfARefusal(t *testing.T) {
	dir := revertWorkspace(t, true)
	same := snapshot(t, dir)
	o := mustPlan(t, dir, "revert", "--decision", "d0", "--reason", "r", "--dry-run")
	want := "Reverting d0 (attempt 1) alone would do, path by path (nothing was changed):\n" +
		"  conflict a.txt: changed since the decision in overlapping lines\n" +
		"  restore  c.txt\n" +
		"0 added, 0 modified, 1 deleted.\n" +
		"It would be refused for 1 conflict(s); --conflicts markers writes them for you to resolve.\n"
	if o.stdout != want {
		t.Fatalf("want\n%s\n%v", want, o)
	}
	v := decodeRevert(t, mustPlan(t, dir, "--json", "revert", "--decision", "d0", "--reason", "r", "--dry-run"))
	if !v.DryRun || !v.Refused || len(v.Paths) != 2 || len(v.Conflicts) != 1 {
		t.Fatalf("%+v", v)
	}
	same("a dry run changed the workspace")
	if n := correctionCount(t, dir); n != 0 {
		t.Fatalf("a dry run recorded %d corrections", n)
	}
}

func TestRevertDryRunText(t *testing.T) {
	dir := revertWorkspace(t, false)
	same := snapshot(t, dir)
	o := mustPlan(t, dir, "revert", "--decision", "d0", "--reason", "r", "--dry-run")
	want := "Reverting d0 (attempt 1) alone would do, path by path (nothing was changed):\n" +
		"  merge    a.txt\n" +
		"  restore  c.txt\n" +
		"0 added, 1 modified, 1 deleted.\n"
	if o.stdout != want {
		t.Fatalf("want\n%s\n%v", want, o)
	}
	same("a dry run changed the workspace")
}

// With --conflicts markers the conflict is written into the file, the correction needs attention,
// and correction show says so path by path.
func TestRevertMarkersText(t *testing.T) {
	dir := revertWorkspace(t, true)
	o := invoke(Runner{Interactive: true, Stdin: strings.NewReader("n\n")}, "-C", dir,
		"revert", "--decision", "d0", "--reason", "r", "--conflicts", "markers")
	if o.code != ExitDeclined || !strings.Contains(o.stderr, "and leave 1 conflict(s) to resolve.\n") {
		t.Fatalf("the confirmation does not count the conflicts\n%v", o)
	}

	o = mustPlan(t, dir, "--yes", "revert", "--decision", "d0", "--reason", "overlapping", "--conflicts", "markers")
	id := regexp.MustCompile(`as correction (\S+);`).FindStringSubmatch(o.stdout)
	if id == nil {
		t.Fatalf("%v", o)
	}
	for _, line := range []string{
		"  conflict a.txt: changed since the decision in overlapping lines (wrote a.txt)\n",
		"  restore  c.txt\n",
		"Needs attention: 1 conflict(s) left for you to resolve (markers or PATH.reverted where written).\n",
	} {
		if !strings.Contains(o.stdout, line) {
			t.Errorf("stdout lacks %q\n%v", line, o)
		}
	}
	if a := readFile(t, dir, "a.txt"); !strings.Contains(a, "<<<<<<< live\n") || !strings.Contains(a, ">>>>>>> before d0\n") {
		t.Errorf("a.txt has no conflict markers: %q", a)
	}
	if exists(dir, "c.txt") {
		t.Errorf("c.txt (d0's, no conflict) was not removed")
	}

	show := mustPlan(t, dir, "correction", "show", id[1])
	pre := decisionCheckpoint(t, dir, "d0")
	for _, line := range []string{
		"correction " + id[1] + " of d0: needs_attention\n", // not succeeded while its conflict is unresolved
		"kind:                surgical (d0 alone; later decisions kept)\n",
		"needs attention:     1 conflict(s) left to resolve (plan resolve PATH marks one done)\n",
		"  a.txt: changed since the decision in overlapping lines (wrote a.txt)\n",
		"reason:              overlapping\n",
		"reverted against:    " + pre + " (d0's pre_decision checkpoint)\n",
	} {
		if !strings.Contains(show.stdout, line) {
			t.Errorf("correction show lacks %q\n%v", line, show)
		}
	}
	if strings.Contains(show.stdout, "rolled back to:") {
		t.Errorf("a surgical correction did not roll back\n%v", show)
	}
}

// --run replaces d0's command once on the reverted workspace: success names d0 as re-executed, a
// failure is exit 1 with the revert recorded and undoable through its safety checkpoint.
func TestRevertReplacement(t *testing.T) {
	t.Run("succeeds", func(t *testing.T) {
		dir := revertWorkspace(t, false)
		o := mustPlan(t, dir, "--yes", "revert", "--decision", "d0", "--reason", "r", "--run", "echo new > c.txt")
		if !strings.Contains(o.stdout, "replacement:         echo new > c.txt (succeeded)\n") {
			t.Fatalf("%v", o)
		}
		if got := readFile(t, dir, "c.txt"); got != "new\n" {
			t.Errorf("c.txt: %q", got)
		}
		dir = revertWorkspace(t, false)
		v := decodeRevert(t, mustPlan(t, dir, "--json", "--yes", "revert", "--decision", "d0", "--reason", "r", "--run", "true"))
		if v.Status != "reverted" || v.Command == nil || *v.Command != "true" || len(v.ReexecutedDecisions) != 1 || v.ReexecutedDecisions[0] != "d0" {
			t.Fatalf("%+v", v)
		}
	})
	t.Run("fails", func(t *testing.T) {
		dir := revertWorkspace(t, false)
		o := inWorkspace(dir, "--yes", "revert", "--decision", "d0", "--reason", "r", "--run", "false")
		if o.code != ExitInternal || !strings.Contains(o.stdout, "replacement:         false (did not succeed)\n") ||
			!strings.Contains(o.stderr, "is recorded, but its replacement did not succeed") {
			t.Fatalf("%v", o)
		}
		if got := readFile(t, dir, "a.txt"); got != "one\ntwo\nthree\nfour\nFIVE\n" {
			t.Errorf("the revert did not stand: a.txt is %q", got)
		}
		dir = revertWorkspace(t, false)
		o = inWorkspace(dir, "--json", "--yes", "revert", "--decision", "d0", "--reason", "r", "--run", "false")
		v := decodeRevert(t, o)
		if o.code != ExitInternal || v.Status != "replacement_failed" || v.CorrectionID == nil || v.SafetyCheckpointID == nil {
			t.Fatalf("%v", o)
		}
	})
}

func TestDeref(t *testing.T) {
	s := "x"
	if deref(nil) != "-" || deref(&s) != "x" {
		t.Fatal("deref: nil is -, otherwise the value")
	}
}

// A revert whose JSON cannot be written is exit 1, but it was applied and recorded: the output
// failing does not undo it, and the log names it so plan undo can.
func TestRevertWriteFailureAfterTheRevert(t *testing.T) {
	dir := revertWorkspace(t, false)
	var errOut strings.Builder
	r := Runner{Stdout: failingWriter{}, Stderr: &errOut, Stdin: strings.NewReader("")}
	code := r.Run(context.Background(), []string{"plan", "-C", dir, "--json", "--yes", "revert", "--decision", "d0", "--reason", "r"})
	if code != ExitInternal || !strings.Contains(errOut.String(), "file already closed") {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	if got := readFile(t, dir, "a.txt"); got != "one\ntwo\nthree\nfour\nFIVE\n" || exists(dir, "c.txt") {
		t.Fatalf("the revert was not applied: a.txt %q", got)
	}
	if n := correctionCount(t, dir); n != 1 {
		t.Fatalf("%d corrections recorded", n)
	}
	if op := historyOf(t, dir)[0]; op.Kind != "revert" || op.Outcome != "internal" || op.Undo == nil {
		t.Fatalf("the log entry: %+v", op)
	}
	u := mustPlan(t, dir, "--yes", "undo")
	if !strings.HasPrefix(u.stdout, "Undid revert ") {
		t.Fatalf("%v", u)
	}
}
