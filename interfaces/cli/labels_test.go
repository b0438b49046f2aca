package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

type labeledView struct {
	ID     string            `json:"id"`
	Type   string            `json:"type"`
	Labels map[string]string `json:"labels"`
	Pinned bool              `json:"pinned"`
}

func listLabeled(t *testing.T, dir string, args ...string) []labeledView {
	t.Helper()
	var out []labeledView
	if err := json.Unmarshal([]byte(mustPlan(t, dir, append([]string{"--json", "checkpoint", "list"}, args...)...).stdout), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// Labels go on checkpoints by hand and from a plan file's decisions, filter the list, survive a
// rebuild; a pinned checkpoint outlives every prune until it is unpinned.
func TestLabelsAndPins(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	m := createCheckpoint(t, dir, "--label", "phase=design", "--label", "task=T-42")
	createCheckpoint(t, dir, "--label", "phase=build")
	writeFile(t, dir, "plan.yaml", `name: p
decisions:
  - id: compile
    labels: {phase: build, stage: "2"}
    run: echo built > out.txt
`)
	mustPlan(t, dir, "run", "plan.yaml")
	build := listLabeled(t, dir, "--label", "phase=build")
	if len(build) != 2 || build[0].Type != "pre_decision" || build[0].Labels["stage"] != "2" {
		t.Fatalf("phase=build: %+v", build)
	}
	if got := listLabeled(t, dir, "--label", "phase=design", "--label", "task=T-42"); len(got) != 1 || got[0].ID != m {
		t.Fatalf("two labels: %+v", got)
	}
	if got := listLabeled(t, dir, "--label", "phase=nothing"); len(got) != 0 {
		t.Fatalf("no match: %+v", got)
	}
	for _, bad := range []string{"novalue", "Upper=x", "=x", "k=" + strings.Repeat("v", 300), "k=a\nb"} {
		if o := inWorkspace(dir, "checkpoint", "create", "--label", bad); o.code != ExitInvalid {
			t.Errorf("--label %q: %v", bad, o)
		}
	}
	if o := inWorkspace(dir, "checkpoint", "create", "--label", "a=1", "--label", "a=2"); o.code != ExitInvalid || !strings.Contains(o.stderr, "twice") {
		t.Errorf("a key twice: %v", o)
	}

	// Pinned: kept by prune with a reason, until unpinned.
	o := mustPlan(t, dir, "--json", "checkpoint", "pin", m)
	if !strings.Contains(o.stdout, `"pinned": true`) {
		t.Fatalf("pin: %v", o)
	}
	// The text list shows the pin and the labels, sorted, after the note.
	if o := mustPlan(t, dir, "checkpoint", "list", "--label", "task=T-42"); !strings.Contains(o.stdout, "[pinned phase=design task=T-42]") {
		t.Fatalf("text list: %v", o)
	}
	if o := mustPlan(t, dir, "checkpoint", "list", "--label", "phase=none"); !strings.Contains(o.stdout, "No checkpoint carries those labels.") {
		t.Fatalf("text list, no match: %v", o)
	}
	o = mustPlan(t, dir, "--json", "checkpoint", "prune", "--keep", "0", "--yes")
	if !strings.Contains(o.stdout, "pinned") {
		t.Fatalf("prune did not keep the pinned checkpoint: %v", o)
	}
	if got := listLabeled(t, dir, "--label", "task=T-42"); len(got) != 1 || !got[0].Pinned {
		t.Fatalf("after prune: %+v", got)
	}
	mustPlan(t, dir, "checkpoint", "unpin", m)
	mustPlan(t, dir, "checkpoint", "prune", "--keep", "0", "--yes")
	if got := listLabeled(t, dir, "--label", "task=T-42"); len(got) != 0 {
		t.Fatalf("an unpinned checkpoint survived prune: %+v", got)
	}
	if o := inWorkspace(dir, "checkpoint", "pin", "0123456789abcdef01234567"); o.code != ExitNotFound {
		t.Fatalf("pin of an unknown checkpoint: %v", o)
	}
	if o := inWorkspace(dir, "checkpoint", "pin"); o.code != ExitUsage {
		t.Fatalf("pin without an ID: %v", o)
	}
	// Labels and pins are in the records: a rebuild brings them back.
	c := createCheckpoint(t, dir, "--label", "keep=me")
	mustPlan(t, dir, "checkpoint", "pin", c)
	before := mustPlan(t, dir, "--json", "checkpoint", "list").stdout
	if err := removeDatabase(t, dir); err != nil {
		t.Fatal(err)
	}
	mustPlan(t, dir, "doctor", "--rebuild")
	if after := mustPlan(t, dir, "--json", "checkpoint", "list").stdout; after != before {
		t.Fatalf("after a rebuild:\n%s\nwant\n%s", after, before)
	}
}

// Retention classes decide by type and labels before keep applies to the rest; prune --policy
// applies them on demand, as a run does after it.
func TestRetentionClasses(t *testing.T) {
	dir := newWorkspace(t)
	configure(t, dir, `retention:
  keep: 1
  classes:
    - labels: {phase: milestone}
      keep: forever
    - type: manual
      older_than: 1ns
`)
	writeFile(t, dir, "a.txt", "a\n")
	forever := createCheckpoint(t, dir, "--label", "phase=milestone")
	gone := createCheckpoint(t, dir)
	safeOld := createCheckpoint(t, dir, "--type", "safe_state") // matches no class: keep 1 keeps only the newer
	safeNew := createCheckpoint(t, dir, "--type", "safe_state")
	o := mustPlan(t, dir, "--json", "checkpoint", "prune", "--policy", "--dry-run")
	var res struct {
		Deleted []string          `json:"deleted"`
		Reasons map[string]string `json:"reasons"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Deleted, ",") != safeOld+","+gone || !strings.Contains(res.Reasons[forever], "kept forever") {
		t.Fatalf("policy: %+v (forever %s, gone %s, safe_state %s and %s)", res, forever, gone, safeOld, safeNew)
	}
	mustPlan(t, dir, "checkpoint", "prune", "--policy", "--yes")
	if got := listLabeled(t, dir); len(got) != 2 {
		t.Fatalf("after prune --policy: %+v", got)
	}
	if o := inWorkspace(dir, "checkpoint", "prune", "--policy", "--keep", "1"); o.code != ExitUsage {
		t.Fatalf("--policy with --keep: %v", o)
	}
	configure(t, dir, "record_nested_git: true\n")
	if o := inWorkspace(dir, "checkpoint", "prune", "--policy"); o.code != ExitInvalid || !strings.Contains(o.stderr, "no checkpoint retention policy") {
		t.Fatalf("--policy without one: %v", o)
	}
}
