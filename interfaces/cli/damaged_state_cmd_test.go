package cli

import (
	"encoding/json"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `plan recover` on a damaged journal is an integrity failure pointing at doctor, like every other
// command, and changes nothing: it cannot know what the interrupted operation was.
func TestRecoverRefusesADamagedJournal(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	createCheckpoint(t, dir)
	writeFile(t, stateOf(t, dir).Home(), "journal.json", "garbage")
	same := snapshot(t, dir)
	for _, args := range [][]string{{"recover"}, {"--json", "recover"}} {
		o := inWorkspace(dir, args...)
		if o.code != ExitIntegrity || !strings.Contains(o.stderr, "journal.json is damaged; run `plan doctor`") {
			t.Errorf("%v", o)
		}
	}
	same("a refused recover changed the workspace")
	if got := readFile(t, stateOf(t, dir).Home(), "journal.json"); got != "garbage" {
		t.Errorf("the damaged journal was changed: %q", got)
	}
}

// A decision log that cannot be read (a directory stands where it was written) is an error, and
// nothing is printed as if it were the log.
func TestLogThatCannotBeRead(t *testing.T) {
	dir := newWorkspace(t)
	mustPlan(t, dir, "exec", "--id", "a", "--", "echo", "hello")
	logs, err := filepath.Glob(filepath.Join(stateOf(t, dir).Logs(), "plans", "adhoc", "a.*.log"))
	if err != nil || len(logs) != 1 {
		t.Fatalf("logs %v, %v", logs, err)
	}
	if err := os.Remove(logs[0]); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(logs[0], 0o750); err != nil {
		t.Fatal(err)
	}
	o := inWorkspace(dir, "log", "a")
	if o.code == ExitOK || o.stdout != "" || !strings.Contains(o.stderr, "is a directory") {
		t.Fatalf("%v", o)
	}
}

// damageDB runs one SQL statement that must change rows of the workspace's database, as a disk
// fault or a bad manual edit would leave it.
func damageDB(t *testing.T, dir, stmt string) {
	t.Helper()
	if n := execDB(t, dir, stmt); n == 0 {
		t.Fatalf("%s: changed no row", stmt)
	}
}

// execDB runs one SQL statement on the workspace's database and returns the rows it changed.
func execDB(t *testing.T, dir, stmt string) int64 {
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
	res := g.Exec(stmt)
	if res.Error != nil {
		t.Fatalf("%s: %v", stmt, res.Error)
	}
	return res.RowsAffected
}

// wantIntegrity checks a listing refused over a damaged record: exit 6, kind integrity with
// --json, the message naming what is damaged, and nothing on stdout that could pass for a listing.
func wantIntegrity(t *testing.T, dir, msg string, args ...string) {
	t.Helper()
	o := inWorkspace(dir, args...)
	if o.code != ExitIntegrity || o.stdout != "" || !strings.Contains(o.stderr, msg) {
		t.Errorf("want exit 6 and %q\n%v", msg, o)
	}
	o = inWorkspace(dir, append([]string{"--json"}, args...)...)
	var doc struct {
		Error struct{ Kind, Message string }
		Code  int
	}
	if err := json.Unmarshal([]byte(o.stderr), &doc); err != nil || o.code != ExitIntegrity || o.stdout != "" ||
		doc.Error.Kind != "integrity" || doc.Code != ExitIntegrity || !strings.Contains(doc.Error.Message, msg) {
		t.Errorf("--json: want kind integrity, code 6 and %q (%v)\n%v", msg, err, o)
	}
}

// `plan plans` and `plan correction list` over a record the database holds damaged are integrity
// failures (exit 6) naming the record, never a partial list. A damaged correction fails every
// command (each first closes corrections a killed plan left re-executing), `correction list` too.
func TestListingsRefuseDamagedRecords(t *testing.T) {
	t.Run("plans", func(t *testing.T) {
		dir := newWorkspace(t)
		writeFile(t, dir, "alpha.yaml", "name: alpha\ndecisions:\n  - id: one\n    run: echo alpha > alpha.txt\n")
		writeFile(t, dir, "beta.yaml", "name: beta\ndecisions:\n  - id: two\n    run: echo beta > beta.txt\n")
		mustPlan(t, dir, "run", "alpha.yaml")
		mustPlan(t, dir, "run", "beta.yaml")
		// Damage the plan that is no longer current: the current one still reads, the list does not.
		damageDB(t, dir, `UPDATE decisions SET env = 'not json' WHERE id = 'one'`)
		wantIntegrity(t, dir, "the env of decision one is damaged", "plans")
		if o := mustPlan(t, dir, "status"); !strings.Contains(o.stdout, "plan beta") || !strings.Contains(o.stdout, "two ") {
			t.Errorf("the current plan no longer reads\n%v", o)
		}
	})
	t.Run("corrections", func(t *testing.T) {
		dir := newWorkspace(t)
		mustPlan(t, dir, "exec", "--id", "a", "--", "sh", "-c", "echo a > a.txt")
		id := jsonField(t, mustPlan(t, dir, "--json", "correct", "--yes", "--decision", "a", "--reason", "wrong",
			"--run", "echo b > a.txt"), "correction_id")
		damageDB(t, dir, `UPDATE corrections SET scope = 'not json'`)
		wantIntegrity(t, dir, "correction "+id+" has a damaged scope", "correction", "list")
	})
}
