package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// decisionCheckpoint returns the checkpoint taken before decision id's latest attempt.
func decisionCheckpoint(t *testing.T, dir, id string) string {
	t.Helper()
	var st statusView
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "status").stdout), &st); err != nil {
		t.Fatal(err)
	}
	for _, d := range st.Decisions {
		if d.ID == id && d.CheckpointID != nil {
			return *d.CheckpointID
		}
	}
	t.Fatalf("decision %s has no checkpoint in %+v", id, st)
	return ""
}

// --mode state rolls decision states back and leaves every file as it is; its preview says so.
func TestRollbackModeStateLeavesTheWorkspace(t *testing.T) {
	dir := newWorkspace(t)
	mustPlan(t, dir, "exec", "--id", "one", "--", "sh", "-c", "echo 1 > one.txt")
	mustPlan(t, dir, "exec", "--id", "two", "--", "sh", "-c", "echo 2 > two.txt")
	before := decisionCheckpoint(t, dir, "one")

	o := mustPlan(t, dir, "rollback", "--mode", "state", "--to-checkpoint", before, "--dry-run")
	if !regexp.MustCompile(`^Rolling the decision states back to ` + before + ` \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}\) would revert one, two; the workspace stays as it is\.\n$`).MatchString(o.stdout) {
		t.Errorf("rollback --mode state --dry-run: %v", o)
	}
	o = invoke(Runner{Interactive: true, Stdin: strings.NewReader("n\n")}, "-C", dir, "rollback", "--mode", "state", "--to-checkpoint", before)
	if o.code != ExitDeclined || !strings.Contains(o.stderr, "would revert one, two; the workspace stays as it is.\nContinue? [y/N] ") {
		t.Errorf("the confirmation shows the state preview: %v", o)
	}

	o = mustPlan(t, dir, "--yes", "rollback", "--mode", "state", "--to-checkpoint", before)
	if !strings.HasPrefix(o.stdout, "Decision states rolled back to "+before+"; the workspace was left as it is.\n") ||
		!strings.Contains(o.stdout, "Reverted decisions: one, two\n") {
		t.Errorf("rollback --mode state: %v", o)
	}
	for rel, want := range map[string]string{"one.txt": "1\n", "two.txt": "2\n"} {
		if got := readFile(t, dir, rel); got != want {
			t.Errorf("--mode state changed %s to %q", rel, got)
		}
	}
	if o := mustPlan(t, dir, "status"); !regexp.MustCompile(`(?m)^one\s+reverted\s`).MatchString(o.stdout) ||
		!regexp.MustCompile(`(?m)^two\s+reverted\s`).MatchString(o.stdout) {
		t.Errorf("the decisions are not reverted: %v", o)
	}
	o = mustPlan(t, dir, "rollback", "--mode", "state", "--to-checkpoint", before, "--dry-run")
	if !strings.Contains(o.stdout, " would revert no decision; the workspace stays as it is.\n") {
		t.Errorf("a second state rollback has nothing to revert: %v", o)
	}
	if o := inWorkspace(dir, "--yes", "rollback", "--mode", "sideways", "--to-checkpoint", before); o.code != ExitInvalid {
		t.Errorf("an unknown --mode: want exit 3\n%v", o)
	}
}

// --at picks the newest checkpoint created at or before a time and says which it picked.
func TestRollbackAt(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	id := createCheckpoint(t, dir)
	writeFile(t, dir, "a.txt", "two\n")

	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	o := mustPlan(t, dir, "--yes", "rollback", "--at", soon)
	if !regexp.MustCompile(`plan: --at `+regexp.QuoteMeta(soon)+` picked checkpoint `+id+`, created \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}\n`).MatchString(o.stderr) ||
		!strings.Contains(o.stdout, "Rolled back to "+id+": 0 added, 1 modified, 0 deleted.\n") {
		t.Errorf("rollback --at: %v", o)
	}
	if got := readFile(t, dir, "a.txt"); got != "one\n" {
		t.Errorf("a.txt = %q after rollback --at", got)
	}
	// With --json the choice is in the document, not narrated.
	o = mustPlan(t, dir, "--json", "--yes", "rollback", "--at", soon, "--dry-run")
	if o.stderr != "" {
		t.Errorf("rollback --at --json narrated on stderr: %v", o)
	}

	o = mustPlan(t, dir, "rollback", "--to-checkpoint", id, "--dry-run")
	if !strings.HasSuffix(o.stdout, " would change 0 files (0 added, 0 modified, 0 deleted):\n  (the workspace already matches)\n") {
		t.Errorf("a rollback to the workspace as it is: %v", o)
	}

	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"rollback", "--at", "2000-01-01T00:00:00Z"}, ExitNotFound, "no checkpoint was created at or before 2000-01-01 00:00:00 +0000"},
		{[]string{"rollback", "--at", "2000-01-01T01:00:00+01:00"}, ExitNotFound, "at or before 2000-01-01 01:00:00 +0100"},
		{[]string{"rollback", "--at", "yesterday"}, ExitInvalid, `--at "yesterday" is neither an RFC 3339 time nor a duration`},
		{[]string{"rollback", "--at", "1h", "--to-checkpoint", id}, ExitUsage, "give --to-checkpoint ID or --at TIME, not both"},
		// The preview fails before anything is asked: no prompt for a checkpoint that does not exist.
		{[]string{"rollback", "--to-checkpoint", "0123456789abcdef01234567"}, ExitNotFound, ""},
	} {
		o := invoke(Runner{Interactive: true, Stdin: strings.NewReader("y\n")}, append([]string{"-C", dir}, c.args...)...)
		if o.code != c.code || !strings.Contains(o.stderr, c.msg) || strings.Contains(o.stderr, "Continue?") {
			t.Errorf("want exit %d and %q without a prompt\n%v", c.code, c.msg, o)
		}
	}
	if got := readFile(t, dir, "a.txt"); got != "one\n" {
		t.Errorf("a refused rollback changed a.txt to %q", got)
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-01-02T03:04:05Z":      time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		"2026-01-02T03:04:05+02:00": time.Date(2026, 1, 2, 1, 4, 5, 0, time.UTC),
		"90m":                       now.Add(-90 * time.Minute),
		"3d":                        now.Add(-72 * time.Hour),
	} {
		got, err := parseWhen(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0s", "-1h", "0d", "tomorrow", "2026-01-02"} {
		if _, err := parseWhen(in, now); err == nil {
			t.Errorf("parseWhen(%q) accepted it", in)
		} else if code, _ := exitCode(err); code != ExitInvalid {
			t.Errorf("parseWhen(%q): exit %d, want %d", in, code, ExitInvalid)
		}
	}
}
