package cli

import (
	"regexp"
	"strings"
	"testing"
)

// prune --dry-run prints a table, as restic forget does: every checkpoint, newest first, its type,
// time and note, whether it is kept or deleted, and the rule that says so.
func TestPruneDryRunTable(t *testing.T) {
	dir := newWorkspace(t)
	var ids []string
	for i, note := range []string{"first", "", "third", "fourth"} {
		writeFile(t, dir, "f.txt", strings.Repeat("x", i+1))
		args := []string{}
		if note != "" {
			args = []string{"--note", note}
		}
		ids = append(ids, createCheckpoint(t, dir, args...))
	}
	mustPlan(t, dir, "checkpoint", "pin", ids[0])
	o := mustPlan(t, dir, "checkpoint", "prune", "--keep", "2", "--dry-run")
	lines := strings.Split(strings.TrimSuffix(o.stdout, "\n"), "\n")
	if len(lines) != 6 || lines[0] != "Would delete 1 checkpoints, kept 3." || !regexp.MustCompile(`^  ACTION +ID +TYPE +CREATED +NOTE +RULE$`).MatchString(lines[1]) {
		t.Fatalf("%v", o)
	}
	time := `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}`
	for i, want := range []string{
		`^  keep +` + ids[3] + ` +manual +` + time + ` +fourth +among the newest 2$`,
		`^  keep +` + ids[2] + ` +manual +` + time + ` +third +among the newest 2$`,
		`^  delete +` + ids[1] + ` +manual +` + time + ` +- +beyond the newest 2$`,
		`^  keep +` + ids[0] + ` +manual +` + time + ` +first +pinned \(` + "`plan checkpoint unpin`" + ` releases it\)$`,
	} {
		if !regexp.MustCompile(want).MatchString(lines[i+2]) {
			t.Errorf("line %d: %q does not match %s", i+2, lines[i+2], want)
		}
	}
	if o := mustPlan(t, dir, "checkpoint", "prune", "--keep", "1", "--keep-daily", "1", "--older-than", "1h", "--dry-run"); strings.Contains(o.stdout, "delete  ") {
		t.Errorf("everything is newer than an hour: %v", o)
	}
	if o := mustPlan(t, dir, "checkpoint", "prune", "--keep", "0", "--keep-daily", "1", "--dry-run"); !strings.Contains(o.stdout, "beyond the newest 0, no calendar rule keeps it\n") {
		t.Errorf("the calendar's drop rule: %v", o)
	}
	if o := mustPlan(t, dir, "checkpoint", "prune", "--keep", "1", "--older-than", "1ns", "--dry-run"); !strings.Contains(o.stdout, "beyond the newest 1, older than 1ns\n") {
		t.Errorf("the age's drop rule: %v", o)
	}
	configure(t, dir, "retention:\n  classes:\n    - type: manual\n      older_than: 1ns\n")
	if o := mustPlan(t, dir, "checkpoint", "prune", "--policy", "--dry-run"); !strings.Contains(o.stdout, "retention class type manual: older than 1ns\n") {
		t.Errorf("a class's drop rule: %v", o)
	}
}
