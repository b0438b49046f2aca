package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type decisionStatus struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Attempts []struct {
		Status   string `json:"status"`
		ExitCode *int   `json:"exit_code"`
	} `json:"attempts"`
}

func statusOf(t *testing.T, dir string) map[string]decisionStatus {
	t.Helper()
	var st struct {
		Decisions []decisionStatus `json:"decisions"`
	}
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "status").stdout), &st); err != nil {
		t.Fatal(err)
	}
	out := map[string]decisionStatus{}
	for _, d := range st.Decisions {
		out[d.ID] = d
	}
	return out
}

// A flaky decision is retried, each time from its pre_decision checkpoint (what the failed attempt
// left is gone), until it succeeds; a decision whose validation fails is failed, its validation's
// output in its log; on_failure continue goes on with the next decision and exits 1 at the end.
func TestRetriesValidateAndContinue(t *testing.T) {
	dir := newWorkspace(t)
	counter := filepath.Join(t.TempDir(), "tries") // outside the workspace: rollbacks do not reset it
	writeFile(t, dir, "plan.yaml", fmt.Sprintf(`name: flaky
decisions:
  - id: flaky
    retries: 3
    run: echo try >> %[1]s; echo junk > junk-$(wc -l < %[1]s | tr -d ' ').txt; [ "$(wc -l < %[1]s)" -ge 3 ]
  - id: checked
    on_failure: continue
    run: echo output > checked.txt
    validate: grep -q expected checked.txt || { echo "checked.txt lacks expected"; exit 7; }
  - id: after
    run: echo after > after.txt
`, counter))
	o := inWorkspace(dir, "run", "plan.yaml")
	if o.code != ExitInternal || !strings.Contains(o.stderr, "checked") || !strings.Contains(o.stderr, "on_failure continue") ||
		strings.Count(o.stderr, "plan: retrying flaky") != 2 {
		t.Fatalf("run: %v", o)
	}
	st := statusOf(t, dir)
	f := st["flaky"]
	if f.Status != "succeeded" || len(f.Attempts) != 3 || f.Attempts[0].Status != "reverted" || f.Attempts[1].Status != "reverted" {
		t.Fatalf("flaky: %+v", f)
	}
	// Each retry started clean: only the last attempt's junk is in the workspace.
	if exists(dir, "junk-1.txt") || exists(dir, "junk-2.txt") || !exists(dir, "junk-3.txt") {
		t.Fatal("a retry did not start from the pre_decision checkpoint")
	}
	c := st["checked"]
	if c.Status != "failed" || len(c.Attempts) != 1 || c.Attempts[0].ExitCode == nil || *c.Attempts[0].ExitCode != 7 {
		t.Fatalf("checked: %+v", c)
	}
	if log := mustPlan(t, dir, "log", "checked").stdout; !strings.Contains(log, "validate: grep") || !strings.Contains(log, "lacks expected") {
		t.Fatalf("the validation's output is not in the log:\n%s", log)
	}
	if st["after"].Status != "succeeded" || !exists(dir, "after.txt") {
		t.Fatalf("the run did not go on past a continue: %+v", st["after"])
	}
	// Out of retries: the decision fails, and the run stops there (the default policy).
	if err := os.Remove(counter); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "plan2.yaml", "name: never\ndecisions:\n  - id: never\n    retries: 1\n    run: exit 3\n  - id: next\n    run: true\n")
	o = inWorkspace(dir, "run", "plan2.yaml")
	if o.code != ExitInternal || !strings.Contains(o.stderr, `decision "never" failed with exit code 3`) {
		t.Fatalf("out of retries: %v", o)
	}
	st = statusOf(t, dir)
	if n := st["never"]; n.Status != "failed" || len(n.Attempts) != 2 || st["next"].Status != "skipped" {
		t.Fatalf("out of retries: %+v %+v", n, st["next"])
	}
	// Retries need checkpoints; bad keys are invalid input naming the line.
	if o := inWorkspace(dir, "run", "--no-checkpoints", "plan2.yaml"); o.code != ExitInvalid || !strings.Contains(o.stderr, "--no-checkpoints") {
		t.Fatalf("retries without checkpoints: %v", o)
	}
	for _, bad := range []string{"retries: 11", "retries: -1", "retries: many", "on_failure: sometimes", "validate: ''"} {
		writeFile(t, dir, "bad.yaml", "name: bad\ndecisions:\n  - id: x\n    run: true\n    "+bad+"\n")
		if o := inWorkspace(dir, "run", "bad.yaml"); o.code != ExitInvalid || !strings.Contains(o.stderr, "bad.yaml:5") {
			t.Errorf("%s: %v", bad, o)
		}
	}
}

// rollback and correct --validate: a passing check changes nothing in the outcome; a failing one
// is exit 1 (validation_failed) naming the undo checkpoint, with the workspace left restored, and
// plan undo takes it back.
func TestRestoreValidation(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "config.txt", "good\n")
	good := createCheckpoint(t, dir)
	writeFile(t, dir, "config.txt", "bad\n")
	mustPlan(t, dir, "rollback", "--to-checkpoint", good, "--yes", "--validate", "grep -q good config.txt")
	writeFile(t, dir, "config.txt", "changed\n")
	o := inWorkspace(dir, "--json", "rollback", "--to-checkpoint", good, "--yes", "--validate", "echo checking; exit 4")
	if o.code != ExitInternal || !strings.Contains(o.stderr, `"kind":"validation_failed"`) || !strings.Contains(o.stderr, "exit code 4") ||
		!strings.Contains(o.stderr, "plan undo") {
		t.Fatalf("failed validation: %v", o)
	}
	if readFile(t, dir, "config.txt") != "good\n" {
		t.Fatal("the workspace was not left restored")
	}
	mustPlan(t, dir, "undo", "--yes")
	if readFile(t, dir, "config.txt") != "changed\n" {
		t.Fatal("undo did not take the validated-and-failed rollback back")
	}
	writeFile(t, dir, "plan.yaml", "name: p\ndecisions:\n  - id: d\n    run: echo v1 > out.txt\n")
	mustPlan(t, dir, "run", "plan.yaml")
	o = inWorkspace(dir, "correct", "--decision", "d", "--reason", "r", "--run", "echo v2 > out.txt", "--yes", "--validate", "grep -q v3 out.txt")
	if o.code != ExitInternal || !strings.Contains(o.stderr, "validation") || readFile(t, dir, "out.txt") != "v2\n" {
		t.Fatalf("correct --validate: %v", o)
	}
}
