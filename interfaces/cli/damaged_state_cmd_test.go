package cli

import (
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
	writeFile(t, dir, ".plan/journal.json", "garbage")
	same := snapshot(t, dir)
	for _, args := range [][]string{{"recover"}, {"--json", "recover"}} {
		o := inWorkspace(dir, args...)
		if o.code != ExitIntegrity || !strings.Contains(o.stderr, "journal.json is damaged; run `plan doctor`") {
			t.Errorf("%v", o)
		}
	}
	same("a refused recover changed the workspace")
	if got := readFile(t, dir, ".plan/journal.json"); got != "garbage" {
		t.Errorf("the damaged journal was changed: %q", got)
	}
}

// A decision log that cannot be read (a directory stands where it was written) is an error, and
// nothing is printed as if it were the log.
func TestLogThatCannotBeRead(t *testing.T) {
	dir := newWorkspace(t)
	mustPlan(t, dir, "exec", "--id", "a", "--", "echo", "hello")
	logs, err := filepath.Glob(filepath.Join(dir, ".plan", "logs", "a.*.log"))
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
