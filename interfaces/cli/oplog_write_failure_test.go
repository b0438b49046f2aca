package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// refuseLogEntries makes the database refuse new operation log entries (those matching when),
// as a full or failing disk would refuse a write: every other table takes writes as before.
func refuseLogEntries(t *testing.T, dir, when string) {
	t.Helper()
	g, err := gorm.Open(sqlite.Open(stateOf(t, dir).Database()), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if db, err := g.DB(); err == nil {
			_ = db.Close()
		}
	}()
	if err := g.Exec(`CREATE TRIGGER refuse_log BEFORE INSERT ON operations ` + when +
		` BEGIN SELECT RAISE(ABORT, 'the operation log refuses writes'); END`).Error; err != nil {
		t.Fatal(err)
	}
}

// The operation log is a record of commands, not part of them: when an entry cannot be written,
// the command still succeeds and says so in a warning, and what it did stands.
func TestCommandsSucceedWhenTheirLogEntryCannotBeWritten(t *testing.T) {
	t.Run("the command's entry", func(t *testing.T) {
		dir := newWorkspace(t)
		writeFile(t, dir, "a.txt", "a\n")
		refuseLogEntries(t, dir, "")
		o := inWorkspace(dir, "--json", "checkpoint", "create")
		if o.code != ExitOK || !strings.Contains(o.stderr, "operation log: ") || !strings.Contains(o.stderr, "the operation log refuses writes") {
			t.Fatalf("%v", o)
		}
		id := jsonField(t, o, "id")
		if got := mustPlan(t, dir, "checkpoint", "show", id); !strings.Contains(got.stdout, id) {
			t.Errorf("the checkpoint does not stand: %v", got)
		}
	})
	t.Run("a decision's entry", func(t *testing.T) {
		dir := newWorkspace(t)
		refuseLogEntries(t, dir, "WHEN NEW.kind = 'decision'")
		o := inWorkspace(dir, "exec", "--id", "a", "--", "sh", "-c", "echo made > out.txt")
		if o.code != ExitOK || !strings.Contains(o.stderr, "operation log: ") {
			t.Fatalf("%v", o)
		}
		if got := readFile(t, dir, "out.txt"); got != "made\n" {
			t.Errorf("out.txt %q", got)
		}
		var ops []struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "history").stdout), &ops); err != nil {
			t.Fatal(err)
		}
		if len(ops) == 0 || ops[0].Kind != "exec" {
			t.Errorf("the command's own entry is missing: %+v", ops)
		}
		for _, op := range ops {
			if op.Kind == "decision" {
				t.Errorf("a refused decision entry is in the log: %+v", ops)
			}
		}
	})
}
