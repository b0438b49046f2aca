package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// When the outcome of a decision cannot be recorded (the database refuses it), the command fails
// and its decision's entry in the operation log still gets an end: the time the command ended,
// never a zero time, while its outcome says the attempt was left running.
func TestLogEntryOfADecisionWhoseOutcomeWasNotRecorded(t *testing.T) {
	dir := newWorkspace(t)
	for _, on := range []string{"INSERT", "UPDATE"} {
		execDB(t, dir, `CREATE TRIGGER refuse_outcome_`+on+` BEFORE `+on+` ON attempts WHEN NEW.status != 'running'`+
			` BEGIN SELECT RAISE(ABORT, 'the disk refuses the outcome'); END`)
	}
	before := time.Now()
	o := inWorkspace(dir, "exec", "--id", "a", "--", "sh", "-c", "echo made > out.txt")
	if o.code != ExitInternal || !strings.Contains(o.stderr, "the disk refuses the outcome") {
		t.Fatalf("want the command to fail with the database's refusal\n%v", o)
	}
	// The disk works again: the next command closes the attempt left running, and reads the log.
	for _, on := range []string{"INSERT", "UPDATE"} {
		execDB(t, dir, `DROP TRIGGER refuse_outcome_`+on)
	}
	var ops []struct {
		Kind       string   `json:"kind"`
		Args       []string `json:"args"`
		Outcome    string   `json:"outcome"`
		FinishedAt string   `json:"finished_at"`
	}
	h := mustPlan(t, dir, "--json", "history")
	if err := json.Unmarshal([]byte(h.stdout), &ops); err != nil {
		t.Fatalf("%v\n%v", err, h)
	}
	var found bool
	for _, op := range ops {
		if op.Kind != "decision" {
			continue
		}
		found = true
		end, err := time.Parse(time.RFC3339, op.FinishedAt)
		if err != nil || end.Before(before.Truncate(time.Second)) || op.Outcome != "running" || len(op.Args) != 1 || op.Args[0] != "a" {
			t.Errorf("the decision's entry: %+v (%v)\n%v", op, err, h)
		}
	}
	if !found {
		t.Errorf("no entry for the decision\n%v", h)
	}
}

// When the checkpoints a command made cannot be read back for its operation-log entry, the
// command still succeeds with a warning: the log is a record of commands, not part of them.
func TestCommandSucceedsWhenItsCheckpointsCannotBeReadForTheLog(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	// The database garbles each checkpoint's root reference as it stores it.
	execDB(t, dir, `CREATE TRIGGER garble AFTER INSERT ON checkpoints BEGIN `+
		`UPDATE checkpoints SET root_tree = 'garbled' WHERE id = NEW.id; END`)
	o := inWorkspace(dir, "--json", "checkpoint", "create")
	if o.code != ExitOK || !strings.Contains(o.stderr, "plan: warning: operation log: ") ||
		!strings.Contains(o.stderr, "has a damaged root tree reference") {
		t.Fatalf("want success with a warning about the log\n%v", o)
	}
	id := jsonField(t, o, "id")
	// What was stored is damaged and reads as such.
	if got := inWorkspace(dir, "checkpoint", "show", id); got.code != ExitIntegrity {
		t.Errorf("the garbled checkpoint: want exit 6\n%v", got)
	}
}
