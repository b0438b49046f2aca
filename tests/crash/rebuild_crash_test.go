package crash

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The record trials kill a command between writing its record and committing its transaction,
// and between the commit and the record's rename, then throw the database away. The records must
// bring back exactly what the database said: the intact database's state once a command has
// settled the pending records, or, when the database is lost right after the kill, the state
// before the killed command or after it, never anything else. A rebuild killed half way leaves no
// database a command would trust, and running it again finishes the job.

// state is what a user sees of a workspace's history, as JSON.
func state(t *testing.T, ws string) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{
		{"checkpoint", "list"}, {"plans"}, {"status"}, {"correction", "list"},
	} {
		r := runPlan(t, ws, nil, append([]string{"--json"}, args...)...)
		if r.code != 0 {
			t.Fatalf("plan %v: exit %d: %s", args, r.code, r.stderr)
		}
		// status names the workspace's directory, which differs between a workspace and its copy.
		b.WriteString(strings.ReplaceAll(r.stdout, `"root": "`+ws+`"`, `"root": "WS"`))
	}
	return b.String()
}

// rebuild deletes ws's database and rebuilds it, returning the state afterwards.
func rebuild(t *testing.T, ws string) string {
	t.Helper()
	dropDatabase(t, ws)
	if r := runPlan(t, ws, nil, "checkpoint", "list"); r.code != 6 || !strings.Contains(r.stderr, "plan doctor --rebuild") {
		t.Fatalf("a lost database: exit %d, %s", r.code, r.stderr)
	}
	mustPlan(t, ws, "doctor", "--rebuild")
	return state(t, ws)
}

func dropDatabase(t *testing.T, ws string) {
	t.Helper()
	for _, s := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(stateFile(t, ws, "plan.db"+s)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// recordFixture is a workspace with a history of every kind: a plan run, a correction, manual
// checkpoints, a rollback and a deleted checkpoint.
func recordFixture(t *testing.T) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	mustPlan(t, ws, "init")
	writeFile(t, filepath.Join(ws, "src", "main.txt"), []byte("main\n"), 0o644)
	first := createCheckpoint(t, ws, "first")
	writeFile(t, filepath.Join(ws, "plan.yaml"), []byte(`name: build
decisions:
  - id: gen
    run: mkdir -p out && echo generated > out/gen.txt
  - id: pack
    run: cat out/gen.txt > out/pack.txt
`), 0o644)
	mustPlan(t, ws, "run", "plan.yaml")
	mustPlan(t, ws, "correct", "--decision", "pack", "--reason", "wrong input", "--yes")
	gone := createCheckpoint(t, ws, "to delete")
	mustPlan(t, ws, "checkpoint", "delete", gone)
	mustPlan(t, ws, "rollback", "--to-checkpoint", first, "--yes")
	return ws
}

var recordFailpoints = []string{"record-prepared", "record-commit"}

// recordCommands are commands whose first transaction the failpoints interrupt.
var recordCommands = [][]string{
	{"checkpoint", "create", "--note", "killed"},
	{"exec", "--id", "more", "--", "sh", "-c", "echo more > more.txt"},
	{"checkpoint", "delete", "--yes", "FIRST"},
}

func TestCrashRecordsAtEveryFailpoint(t *testing.T) {
	base := recordFixture(t)
	if got := rebuild(t, copyOf(t, base)); got != state(t, base) {
		t.Fatalf("a rebuild of the fixture differs:\n%s\nwant\n%s", got, state(t, base))
	}
	for _, fp := range recordFailpoints {
		for _, cmd := range recordCommands {
			cmd = append([]string(nil), cmd...)
			if cmd[len(cmd)-1] == "FIRST" {
				cmd[len(cmd)-1] = firstCheckpoint(t, base)
			}
			name := fmt.Sprintf("%s at %s", cmd[0], fp)
			ws := copyOf(t, base)
			before := state(t, ws)
			r := runPlan(t, ws, []string{"PLAN_FAILPOINT=" + fp}, cmd...)
			if !r.killed {
				t.Fatalf("%s: not killed: exit %d %s", name, r.code, r.stderr)
			}
			lost := copyOf(t, ws) // the database lost right after the crash
			after := state(t, ws) // settles the pending record
			if fp == "record-prepared" && after != before {
				t.Fatalf("%s: a transaction killed before its commit changed the history", name)
			}
			if got := rebuild(t, ws); got != after {
				t.Fatalf("%s: rebuilt after a command settled the records:\n%s\nwant\n%s", name, got, after)
			}
			if got := rebuild(t, lost); got != before && got != after {
				t.Fatalf("%s: rebuilt right after the kill: neither before nor after:\n%s", name, got)
			}
		}
	}
}

// A rebuild killed part way leaves no database: commands still refuse (exit 6), and the next
// rebuild gives the full history.
func TestCrashRebuildKilled(t *testing.T) {
	ws := recordFixture(t)
	want := state(t, ws)
	dropDatabase(t, ws)
	r := runPlan(t, ws, []string{"PLAN_FAILPOINT=rebuild-record"}, "doctor", "--rebuild")
	if !r.killed {
		t.Fatalf("rebuild not killed: exit %d %s", r.code, r.stderr)
	}
	if r := runPlan(t, ws, nil, "checkpoint", "list"); r.code != 6 {
		t.Fatalf("after a killed rebuild: exit %d %s", r.code, r.stderr)
	}
	mustPlan(t, ws, "doctor", "--rebuild")
	if got := state(t, ws); got != want {
		t.Fatalf("rebuilt after a killed rebuild:\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(stateFile(t, ws, "plan.db.rebuild")); !os.IsNotExist(err) {
		t.Fatalf("the temporary database is left: %v", err)
	}
}

// firstCheckpoint returns the oldest checkpoint's ID.
func firstCheckpoint(t *testing.T, ws string) string {
	t.Helper()
	var oldest string
	for id := range listCheckpoints(t, ws) {
		if oldest == "" || id < oldest {
			oldest = id
		}
	}
	return oldest
}

func copyOf(t *testing.T, ws string) string {
	t.Helper()
	to := filepath.Join(t.TempDir(), "ws")
	copyWorkspace(t, ws, to)
	return to
}
