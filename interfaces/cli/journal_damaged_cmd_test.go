package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// A damaged operation journal is an integrity failure (exit 6) that points at plan doctor, for a
// read-only command and for one that would change the workspace, which then changes nothing.
func TestDamagedJournalRefusesEveryCommand(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	createCheckpoint(t, dir)
	writeFile(t, stateOf(t, dir).Home(), "journal.json", "garbage")
	same := snapshot(t, dir)
	for _, args := range [][]string{{"status"}, {"checkpoint", "create"}, {"--json", "checkpoint", "create"}} {
		o := inWorkspace(dir, args...)
		if o.code != ExitIntegrity || !strings.Contains(o.stderr, "journal.json is damaged; run `plan doctor`") {
			t.Errorf("%v", o)
		}
	}
	same("a refused command changed the workspace")
	if err := os.Remove(stateOf(t, dir).JournalFile()); err != nil {
		t.Fatal(err)
	}
	var cps []json.RawMessage
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "checkpoint", "list").stdout), &cps); err != nil || len(cps) != 1 {
		t.Fatalf("%d checkpoints (%v): a refused checkpoint create recorded one", len(cps), err)
	}
}
