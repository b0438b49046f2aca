package cli

import (
	"strings"
	"testing"
)

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
