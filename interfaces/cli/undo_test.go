package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit/treetest"
)

type loggedOp struct {
	ID          string   `json:"id"`
	Kind        string   `json:"kind"`
	Args        []string `json:"args"`
	Outcome     string   `json:"outcome"`
	Checkpoints []string `json:"checkpoints"`
	Undo        *string  `json:"undo_checkpoint"`
	UndoneBy    *string  `json:"undone_by"`
}

func historyOf(t *testing.T, dir string) []loggedOp {
	t.Helper()
	var ops []loggedOp
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "history").stdout), &ops); err != nil {
		t.Fatal(err)
	}
	return ops
}

func requireTree(t *testing.T, dir string, want []tree.Entry, context string) {
	t.Helper()
	got, err := treetest.Read(dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	if d := treetest.Diff(want, got); len(d) > 0 {
		t.Fatalf("%s:\n%s", context, treetest.Summary(d))
	}
}

// The promise: plan undo after a rollback, then after a correction, then after a decision
// brings back each prior state exactly, and plan history shows all of it. Undo walks back: the
// next one undoes the operation before, until nothing is left.
func TestUndoWalksBackThroughTheLog(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "src.txt", "source\n")
	base := createCheckpoint(t, dir, "--note", "base")
	writeFile(t, dir, "plan.yaml", `name: build
decisions:
  - id: gen
    run: echo generated > gen.txt
  - id: pack
    run: cat gen.txt src.txt > pack.txt
`)
	mustPlan(t, dir, "run", "plan.yaml")
	afterRun, err := treetest.Read(dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	statusAfterRun := decisionStates(t, dir)

	// 1. A rollback, undone: files and decision states exactly as before.
	mustPlan(t, dir, "rollback", "--to-checkpoint", base, "--yes")
	if !strings.Contains(mustPlan(t, dir, "--json", "status").stdout, `"reverted"`) {
		t.Fatal("the rollback reverted no decision")
	}
	o := mustPlan(t, dir, "--json", "undo", "--yes")
	if !strings.Contains(o.stdout, `"kind": "rollback"`) {
		t.Fatalf("undo: %v", o)
	}
	requireTree(t, dir, afterRun, "after undoing the rollback")
	if got := decisionStates(t, dir); got != statusAfterRun {
		t.Fatalf("decision states after undoing the rollback:\n%s\nwant\n%s", got, statusAfterRun)
	}

	// 2. A correction, undone: the workspace as before it, and the attempt it reverted back.
	writeFile(t, dir, "notes.txt", "work after the run\n")
	beforeCorrection, _ := treetest.Read(dir, skipState)
	mustPlan(t, dir, "correct", "--decision", "pack", "--reason", "wrong format", "--run", "echo fixed > pack.txt", "--yes")
	if readFile(t, dir, "pack.txt") != "fixed\n" {
		t.Fatal("the correction did not re-execute pack")
	}
	o = mustPlan(t, dir, "--json", "undo", "--yes")
	if !strings.Contains(o.stdout, `"kind": "correct"`) || !strings.Contains(o.stdout, `"pack"`) {
		t.Fatalf("undo: %v", o)
	}
	requireTree(t, dir, beforeCorrection, "after undoing the correction")
	var st struct {
		Decisions []struct {
			ID       string `json:"id"`
			Attempts []struct {
				Status string `json:"status"`
			} `json:"attempts"`
		} `json:"decisions"`
	}
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "status").stdout), &st); err != nil {
		t.Fatal(err)
	}
	if p := st.Decisions[1]; p.ID != "pack" || len(p.Attempts) != 2 || p.Attempts[0].Status != "succeeded" || p.Attempts[1].Status != "reverted" {
		t.Fatalf("pack after undoing its correction: %+v", p)
	}

	// 3. A decision, undone: the workspace as before it ran; the decision is reverted.
	beforeExec, _ := treetest.Read(dir, skipState)
	mustPlan(t, dir, "exec", "--id", "extra", "--", "sh", "-c", "echo extra > extra.txt && rm src.txt")
	mustPlan(t, dir, "undo", "--yes")
	requireTree(t, dir, beforeExec, "after undoing the decision")

	// The log shows all of it, newest first, the undone operations marked.
	ops := historyOf(t, dir)
	var kinds []string
	undone := map[string]bool{}
	for _, op := range ops {
		kinds = append(kinds, op.Kind)
		if op.UndoneBy != nil {
			undone[op.Kind] = true
		}
	}
	want := "undo decision exec undo correct undo rollback decision decision run checkpoint init"
	if strings.Join(kinds, " ") != want {
		t.Fatalf("history kinds:\n%s\nwant\n%s", strings.Join(kinds, " "), want)
	}
	if !undone["rollback"] || !undone["correct"] || !undone["decision"] || undone["run"] {
		t.Fatalf("undone marks: %v", undone)
	}

	// 4. Undo goes on backwards: the run's decisions, newest first, then nothing is left.
	mustPlan(t, dir, "undo", "--yes")
	if !exists(dir, "gen.txt") || exists(dir, "pack.txt") {
		t.Fatal("undoing pack did not take pack.txt away")
	}
	mustPlan(t, dir, "undo", "--yes")
	if exists(dir, "gen.txt") {
		t.Fatal("undoing gen did not take gen.txt away")
	}
	if o := inWorkspace(dir, "undo", "--yes"); o.code != ExitNotFound || !strings.Contains(o.stderr, "nothing to undo") {
		t.Fatalf("nothing left: %v", o)
	}
	// A dry run names what it would undo and changes nothing; without --yes and a terminal, undo
	// refuses.
	mustPlan(t, dir, "rollback", "--to-checkpoint", base, "--yes")
	o = mustPlan(t, dir, "undo", "--dry-run")
	if !strings.Contains(o.stdout, "Undoing rollback") {
		t.Fatalf("dry run: %v", o)
	}
	if o := inWorkspace(dir, "undo"); o.code != ExitUsage {
		t.Fatalf("undo without --yes: %v", o)
	}
	// A limited, per-plan listing.
	if ops := historyOf(t, dir); len(ops) < 3 {
		t.Fatal("history lost entries")
	}
	var two []loggedOp
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "history", "--limit", "2").stdout), &two); err != nil || len(two) != 2 {
		t.Fatalf("--limit 2: %v, %v", two, err)
	}
	if o := mustPlan(t, dir, "history", "--plan", "build"); !strings.Contains(o.stdout, "decision") || strings.Contains(o.stdout, " init ") {
		t.Fatalf("--plan build: %v", o)
	}
	if o := inWorkspace(dir, "history", "--limit", "-1"); o.code != ExitInvalid {
		t.Fatalf("--limit -1: %v", o)
	}
}

// An undo whose safety checkpoint was deleted refuses and changes nothing.
func TestUndoWithoutItsSafetyCheckpoint(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	base := createCheckpoint(t, dir)
	writeFile(t, dir, "a.txt", "b\n")
	var rb struct {
		Backup string `json:"backup_checkpoint_id"`
	}
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "rollback", "--to-checkpoint", base, "--yes").stdout), &rb); err != nil {
		t.Fatal(err)
	}
	if o := inWorkspace(dir, "checkpoint", "delete", rb.Backup, "--yes"); o.code != ExitConflict || !strings.Contains(o.stderr, "the next `plan undo` rolls back to it") {
		t.Fatalf("deleting the next undo's checkpoint without --force: %v", o)
	}
	mustPlan(t, dir, "checkpoint", "delete", rb.Backup, "--yes", "--force")
	o := inWorkspace(dir, "undo", "--yes")
	if o.code != ExitConflict || !strings.Contains(o.stderr, "was deleted") || readFile(t, dir, "a.txt") != "a\n" {
		t.Fatalf("%v", o)
	}
}

func exists(dir, rel string) bool {
	_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel)))
	return err == nil
}

// Prune keeps the pre_decision checkpoints of every plan's live decisions, not only the current
// plan's: correcting a decision of another plan (--plan) rolls back to them.
func TestPruneKeepsEveryPlansDecisionCheckpoints(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "alpha.yaml", "name: alpha\ndecisions:\n  - id: a1\n    run: echo a > a.txt\n")
	writeFile(t, dir, "beta.yaml", "name: beta\ndecisions:\n  - id: b1\n    run: echo b > b.txt\n")
	mustPlan(t, dir, "run", "alpha.yaml")
	mustPlan(t, dir, "run", "beta.yaml") // beta is now current
	o := mustPlan(t, dir, "--json", "checkpoint", "prune", "--keep", "0", "--yes")
	if !strings.Contains(o.stdout, "alpha/a1") {
		t.Fatalf("alpha's live decision checkpoint is not protected: %v", o)
	}
	mustPlan(t, dir, "correct", "--plan", "alpha", "--decision", "a1", "--reason", "r", "--yes")
}

// Commands refused before they changed anything are not logged; a recover with nothing to do is
// not either.
func TestRefusalsAreNotLogged(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	createCheckpoint(t, dir)
	n := len(historyOf(t, dir))
	inWorkspace(dir, "rollback", "--to-checkpoint", "0123456789abcdef01234567", "--yes") // not found
	inWorkspace(dir, "checkpoint", "create", "--label", "Bad=x")                         // invalid
	mustPlan(t, dir, "recover")
	if got := historyOf(t, dir); len(got) != n {
		t.Fatalf("%d entries after refusals, %d before: %+v", len(got), n, got)
	}
}
