package cli

import (
	"strings"
	"testing"
)

func TestCheckpointPinUsageAndUnknown(t *testing.T) {
	dir := newWorkspace(t)
	id := createCheckpoint(t, dir)
	for _, cmd := range []string{"pin", "unpin"} {
		if o := inWorkspace(dir, "checkpoint", cmd); o.code != ExitUsage || !strings.Contains(o.stderr, "missing argument ID") {
			t.Errorf("%v", o)
		}
		if o := inWorkspace(dir, "checkpoint", cmd, id, "extra"); o.code != ExitUsage || !strings.Contains(o.stderr, `unexpected argument "extra"`) {
			t.Errorf("%v", o)
		}
		if o := inWorkspace(dir, "checkpoint", cmd, "ffffffffffff"); o.code != ExitNotFound {
			t.Errorf("%v", o)
		}
	}
	if o := mustPlan(t, dir, "checkpoint", "pin", id); o.stdout != "Pinned checkpoint "+id+": no prune deletes it.\n" {
		t.Errorf("%v", o)
	}
	if o := mustPlan(t, dir, "checkpoint", "unpin", id); o.stdout != "Unpinned checkpoint "+id+".\n" {
		t.Errorf("%v", o)
	}
}

// A malformed --label filter is invalid input (exit 3), not an empty list.
func TestCheckpointListBadLabelFilter(t *testing.T) {
	dir := newWorkspace(t)
	createCheckpoint(t, dir, "--label", "env=prod")
	for _, label := range []string{"nokey", "Env=prod"} {
		o := inWorkspace(dir, "checkpoint", "list", "--label", label)
		if o.code != ExitInvalid || o.stdout != "" || !strings.Contains(o.stderr, "label") {
			t.Errorf("--label %s: %v", label, o)
		}
	}
	if o := inWorkspace(dir, "checkpoint", "list", "--label", "env=prod", "--label", "env=dev"); o.code != ExitInvalid ||
		!strings.Contains(o.stderr, "label env is given twice") {
		t.Errorf("%v", o)
	}
}
