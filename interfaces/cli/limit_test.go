package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// Every list takes --limit N: the first N items in the list's own order; 0 is all, a negative
// count is invalid input and lists nothing.
func TestLimitOnEveryList(t *testing.T) {
	dir := newWorkspace(t)
	for _, id := range []string{"a", "b", "c"} {
		mustPlan(t, dir, "exec", "--id", id, "--", "sh", "-c", "echo "+id+" > "+id+".txt")
	}
	mustPlan(t, dir, "--yes", "correct", "--decision", "c", "--reason", "r", "--no-reexecute")
	mustPlan(t, dir, "--yes", "correct", "--decision", "b", "--reason", "r", "--no-reexecute")
	mustPlan(t, dir, "exec", "--plan", "other", "--id", "x", "--", "true")
	store := "file://" + filepath.Join(t.TempDir(), "store")
	mustPlan(t, t.TempDir(), "init", "--store", store)
	mustPlan(t, t.TempDir(), "init", "--store", store)

	count := func(args ...string) int {
		t.Helper()
		var items []json.RawMessage
		if err := json.Unmarshal([]byte(mustPlan(t, dir, append([]string{"--json"}, args...)...).stdout), &items); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return len(items)
	}
	for _, list := range [][]string{
		{"checkpoint", "list"}, {"correction", "list"}, {"plans"}, {"workspaces", "--store", store},
	} {
		all := count(list...)
		if all < 2 {
			t.Fatalf("%v: %d items, the test needs 2 or more", list, all)
		}
		if n := count(append(list, "--limit", "1")...); n != 1 {
			t.Errorf("%v --limit 1: %d items", list, n)
		}
		if n := count(append(list, "--limit", "0")...); n != all {
			t.Errorf("%v --limit 0: %d items, want all %d", list, n, all)
		}
		if n := count(append(list, "--limit", "1000")...); n != all {
			t.Errorf("%v --limit 1000: %d items, want all %d", list, n, all)
		}
		o := inWorkspace(dir, append(list, "--limit", "-1")...)
		if o.code != ExitInvalid || o.stdout != "" || !strings.Contains(o.stderr, "--limit -1") {
			t.Errorf("%v --limit -1: %v", list, o)
		}
	}
}
