package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/planhq/plan/interfaces/view"
)

// checkpoint list marks the head (JSON "head": true, text "@ head") and the safety checkpoints
// (JSON "safety", text "(safety)"); after a rollback the head is its target, not the newest.
func TestListMarksTheHeadAndSafetyCheckpoints(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	first := createCheckpoint(t, dir)
	writeFile(t, dir, "a.txt", "changed\n")
	createCheckpoint(t, dir)
	mustPlan(t, dir, "--yes", "rollback", "--to-checkpoint", first)
	var list []view.Checkpoint
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "checkpoint", "list").stdout), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].Type != "pre_rollback" || !list[0].Safety || list[0].Head ||
		list[2].ID != first || !list[2].Head || list[2].Safety || list[1].Parent == nil || *list[1].Parent != first {
		t.Fatalf("checkpoint list --json after a rollback: %+v", list)
	}
	o := mustPlan(t, dir, "checkpoint", "list")
	if !strings.Contains(o.stdout, "(safety)") || strings.Count(o.stdout, "@ head") != 1 {
		t.Errorf("checkpoint list after a rollback: %v", o)
	}
	if o := mustPlan(t, dir, "status"); !strings.Contains(o.stdout, "no changes since") {
		t.Errorf("status right after a rollback: %v", o)
	}
	// A checkpoint taken now branches from the rollback's target: the graph shows two children of
	// first, the newer (the head) first, and the safety checkpoint under the abandoned branch.
	writeFile(t, dir, "a.txt", "branch\n")
	branch := createCheckpoint(t, dir)
	g := mustPlan(t, dir, "checkpoint", "list", "--graph").stdout
	lines := strings.Split(strings.TrimSuffix(g, "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "○ ") || !strings.Contains(lines[0], first) ||
		!strings.HasPrefix(lines[1], "├─@ ") || !strings.Contains(lines[1], branch) ||
		!strings.HasPrefix(lines[2], "└─○ ") || !strings.HasPrefix(lines[3], "  └─◌ ") {
		t.Errorf("checkpoint list --graph after a branch:\n%s", g)
	}
}
