package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/planhq/plan/interfaces/view"
)

// A record a crash left prepared but never committed is not history: doctor --rebuild leaves it
// out and says so.
func TestDoctorRebuildLeavesOutWhatACrashCutShort(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	id := createCheckpoint(t, dir)
	crash(t, "record-prepared", "-C", dir, "checkpoint", "create", "--note", "cut short")
	pending, err := filepath.Glob(filepath.Join(stateOf(t, dir).Home(), "*", "records", "pending", "*"))
	if err != nil || len(pending) == 0 {
		t.Fatalf("the crash left no pending record (%v)", err)
	}
	for _, s := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(stateOf(t, dir).Database() + s); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	o := mustPlan(t, dir, "doctor", "--rebuild")
	db := stateOf(t, dir).Database()
	want := regexp.MustCompile(`^Rebuilt ` + regexp.QuoteMeta(db) + ` \(it was missing\) from \d+ records: 1 checkpoints, 0 plans, 0 decisions, 0 corrections\.\n` +
		`\d+ records of operations a crash cut short were left out \(they never completed\)\.\n$`)
	if !want.MatchString(o.stdout) {
		t.Fatalf("%v", o)
	}
	var list []view.Checkpoint
	o = mustPlan(t, dir, "--json", "checkpoint", "list")
	if err := json.Unmarshal([]byte(o.stdout), &list); err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("after the rebuild: %v (%v)", o, err)
	}
}

// Without its records the store cannot be read back: doctor --rebuild fails (exit 1, naming the
// records) and puts no half-made database in place.
func TestDoctorRebuildWithoutTheRecords(t *testing.T) {
	dir := newWorkspace(t)
	createCheckpoint(t, dir)
	recs, err := filepath.Glob(filepath.Join(stateOf(t, dir).Home(), "*", "records"))
	if err != nil || len(recs) != 1 {
		t.Fatalf("records: %v %v", recs, err)
	}
	db := stateOf(t, dir).Database()
	for _, s := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(db + s); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(recs[0]); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(recs[0], []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := inWorkspace(dir, "doctor", "--rebuild")
	if o.code != ExitInternal || o.stdout != "" || !strings.Contains(o.stderr, recs[0]) {
		t.Fatalf("%v", o)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("a failed rebuild left a database: %v", err)
	}
}
