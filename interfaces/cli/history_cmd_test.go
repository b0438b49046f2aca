package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

func TestHistoryAndUndoUsageErrors(t *testing.T) {
	dir := newWorkspace(t)
	same := snapshot(t, dir)
	for _, args := range [][]string{{"history", "extra"}, {"undo", "extra"}, {"--yes", "undo", "extra"}} {
		o := inWorkspace(dir, args...)
		if o.code != ExitUsage || !strings.Contains(o.stderr, `unexpected argument "extra"`) {
			t.Errorf("%v", o)
		}
	}
	same("a usage error changed the workspace")
}

// Nothing to undo is exit 4, also when the preview for the confirmation finds it (no --yes).
func TestUndoNothingToUndo(t *testing.T) {
	dir := newWorkspace(t)
	mustPlan(t, dir, "checkpoint", "create")
	for _, args := range [][]string{{"undo"}, {"--yes", "undo"}, {"undo", "--dry-run"}} {
		o := inWorkspace(dir, args...)
		if o.code != ExitNotFound || o.stdout != "" ||
			o.stderr != "plan: nothing to undo: no rollback, correction or decision is left that was not undone\n" {
			t.Errorf("%v", o)
		}
	}
}

func TestUndoNeedsConfirmation(t *testing.T) {
	dir := newWorkspace(t)
	mustPlan(t, dir, "exec", "--id", "d0", "--", "sh", "-c", "echo 0 > zero.txt")
	same := snapshot(t, dir)
	o := inWorkspace(dir, "undo")
	if o.code != ExitUsage || !strings.Contains(o.stderr, "plan: undo needs confirmation and there is no terminal to ask on: pass --yes\n") {
		t.Fatalf("%v", o)
	}
	o = invoke(Runner{Interactive: true, Stdin: strings.NewReader("n\n")}, "-C", dir, "undo")
	summary := regexp.MustCompile(`^Undoing decision \S+ \(d0, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}\) rolls back to its safety checkpoint (\S+)\.\n` +
		`Rolling back to (\S+) \(pre_decision, [^)]+\) would change 1 file \(0 added, 0 modified, 1 deleted\):\n  D zero.txt\nContinue\? \[y/N\] plan: undo cancelled: nothing was changed\n$`)
	m := summary.FindStringSubmatch(o.stderr)
	if o.code != ExitDeclined || m == nil || m[1] != m[2] || m[1] != decisionCheckpoint(t, dir, "d0") {
		t.Fatalf("%v", o)
	}
	same("a declined undo changed the workspace")
	for _, op := range historyOf(t, dir) {
		if op.UndoneBy != nil {
			t.Fatalf("a declined undo marked %s undone", op.ID)
		}
	}
}

// Undoing a decision rolls back to its pre_decision checkpoint, reverts it, and says how to undo the
// undo; the history marks the entry undone, and the undo is an entry of its own.
func TestUndoText(t *testing.T) {
	dir := newWorkspace(t)
	mustPlan(t, dir, "exec", "--id", "d0", "--", "sh", "-c", "echo 0 > zero.txt")
	same := snapshot(t, dir)
	mustPlan(t, dir, "exec", "--id", "d1", "--", "sh", "-c", "echo 1 > one.txt; rm zero.txt")
	after := snapshot(t, dir)
	pre := decisionCheckpoint(t, dir, "d1")
	decision := historyOf(t, dir)[0]
	if decision.Kind != "decision" || len(decision.Args) != 1 || decision.Args[0] != "d1" {
		t.Fatalf("the newest entry is not d1's decision: %+v", decision)
	}

	dry := mustPlan(t, dir, "undo", "--dry-run")
	if !strings.HasPrefix(dry.stdout, "Undoing decision "+decision.ID+" (d1, ") || !strings.Contains(dry.stdout, "  D one.txt\n  A zero.txt\n") {
		t.Fatalf("%v", dry)
	}
	after("a dry undo changed the workspace")

	o := mustPlan(t, dir, "--yes", "undo")
	m := regexp.MustCompile(`^Undid decision ` + decision.ID + `: back to ` + pre + ` \(1 added, 0 modified, 1 deleted\)\.\n` +
		`Reverted decisions: d1\nUndo this undo with: plan redo \(or plan rollback --to-checkpoint (\S+)\)\n$`).FindStringSubmatch(o.stdout)
	if m == nil {
		t.Fatalf("%v", o)
	}
	same("undo did not restore the state before d1")
	if st := statusOf(t, dir); st["d1"].Status != "reverted" || st["d0"].Status != "succeeded" {
		t.Errorf("statuses: %+v", st)
	}

	h := mustPlan(t, dir, "history", "--limit", "2")
	lines := strings.Split(strings.TrimSuffix(h.stdout, "\n"), "\n")
	stamp := `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}`
	if len(lines) != 5 || !regexp.MustCompile(`^ID\s+KIND\s+OUTCOME\s+STARTED$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^\S+\s+undo\s+ok\s+`+stamp+`$`).MatchString(lines[1]) ||
		!regexp.MustCompile(`^    decision `+decision.ID+`  @ [k-z]+ [k-z]+$`).MatchString(lines[2]) ||
		!regexp.MustCompile(`^`+decision.ID+`\s+decision\s+ok \(undone\)\s+`+stamp+`$`).MatchString(lines[3]) ||
		lines[4] != "    d1  @ "+listedShortName(t, dir, pre) {
		t.Fatalf("%v", h)
	}

	mustPlan(t, dir, "--yes", "rollback", "--to-checkpoint", m[1])
	after("rolling back to the undo's safety checkpoint")
}

func TestHistoryOfAnotherPlanIsEmpty(t *testing.T) {
	dir := newWorkspace(t)
	mustPlan(t, dir, "exec", "--id", "d0", "--", "true")
	if o := mustPlan(t, dir, "history", "--plan", "nope"); o.stdout != "No operations logged yet.\n" {
		t.Fatalf("%v", o)
	}
	var ops []json.RawMessage
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "history", "--plan", "nope").stdout), &ops); err != nil || len(ops) != 0 {
		t.Fatalf("want [], got %d entries (%v)", len(ops), err)
	}
}

// A failed decision is logged: the exec as decision_failed, the decision with its status.
func TestHistoryLogsAFailedDecision(t *testing.T) {
	dir := newWorkspace(t)
	if o := inWorkspace(dir, "exec", "--id", "bad", "--", "false"); o.code != ExitInternal {
		t.Fatalf("%v", o)
	}
	ops := historyOf(t, dir)
	if len(ops) < 2 || ops[0].Kind != "decision" || ops[0].Outcome != "failed" || ops[1].Kind != "exec" || ops[1].Outcome != "decision_failed" {
		t.Fatalf("%+v", ops)
	}
}

// A revert whose replacement failed is recorded and changed the workspace (docs/cli.md: "exits 1
// with the revert recorded"), so plan undo takes it back first, not the decision before it.
func TestUndoARevertWhoseReplacementFailed(t *testing.T) {
	dir := revertWorkspace(t, false)
	before := snapshot(t, dir)
	o := inWorkspace(dir, "--json", "--yes", "revert", "--decision", "d0", "--reason", "r", "--run", "false")
	v := decodeRevert(t, o)
	if o.code != ExitInternal || v.CorrectionID == nil || v.SafetyCheckpointID == nil {
		t.Fatalf("%v", o)
	}
	u := mustPlan(t, dir, "--yes", "undo")
	if !strings.HasPrefix(u.stdout, "Undid revert "+*v.CorrectionID+": back to "+*v.SafetyCheckpointID+" ") {
		t.Fatalf("undo did not take back the revert %s\n%v", *v.CorrectionID, u)
	}
	before("undoing the revert")
	if st := statusOf(t, dir); st["d1"].Status != "succeeded" {
		t.Errorf("undoing the revert touched d1: %+v", st)
	}
}

// The operation log records the command line without the credentials of the URLs in it: the log is
// shared by every workspace of a database and recorded in the store.
func TestHistoryHidesURLCredentials(t *testing.T) {
	dir := newWorkspace(t)
	mustPlan(t, dir, "exec", "--id", "d0", "--", "true", "postgres://u:s3cret@h/d", "--db=postgres://h/d?user=u&password=s3cret")
	o := inWorkspace(dir, "--json", "history")
	if o.code != ExitOK || strings.Contains(o.stdout, "s3cret") ||
		!strings.Contains(o.stdout, `"postgres://u@h/d"`) || !strings.Contains(o.stdout, `"--db=postgres://h/d?user=u"`) {
		t.Fatalf("%v", o)
	}
}

// listedShortName is the short name checkpoint list shows for checkpoint id.
func listedShortName(t *testing.T, dir, id string) string {
	t.Helper()
	var cps []struct {
		ID      string `json:"id"`
		ShortID string `json:"short_id"`
	}
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "checkpoint", "list").stdout), &cps); err != nil {
		t.Fatal(err)
	}
	for _, cp := range cps {
		if cp.ID == id {
			return cp.ShortID
		}
	}
	t.Fatalf("no checkpoint %s", id)
	return ""
}
