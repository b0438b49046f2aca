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
