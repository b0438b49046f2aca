package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// A record a crash left prepared but never committed is not history: doctor --rebuild leaves it
// out and says so.
func TestDoctorRebuildLeavesOutWhatACrashCutShort(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	id := createCheckpoint(t, dir)
	crash(t, "record-prepared", "-C", dir, "checkpoint", "create", "--note", "cut short")
	pending, err := filepath.Glob(filepath.Join(dir, ".plan", "*", "records", "pending", "*"))
	if err != nil || len(pending) == 0 {
		t.Fatalf("the crash left no pending record (%v)", err)
	}
	for _, s := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(dir, ".plan", "plan.db"+s)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	o := mustPlan(t, dir, "doctor", "--rebuild")
	db := filepath.Join(dir, ".plan", "plan.db")
	want := regexp.MustCompile(`^Rebuilt ` + regexp.QuoteMeta(db) + ` \(it was missing\) from \d+ records: 1 checkpoints, 0 plans, 0 decisions, 0 corrections\.\n` +
		`\d+ records of operations a crash cut short were left out \(they never completed\)\.\n$`)
	if !want.MatchString(o.stdout) {
		t.Fatalf("%v", o)
	}
	var list []checkpointView
	o = mustPlan(t, dir, "--json", "checkpoint", "list")
	if err := json.Unmarshal([]byte(o.stdout), &list); err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("after the rebuild: %v (%v)", o, err)
	}
}
