package cli

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/interfaces/view"
)

// `plan plans` lists every plan of the workspace, the current (last run) one first and marked,
// with its decisions counted by status, when it last ran and the file it came from.
func TestPlansListsEveryPlanCurrentFirst(t *testing.T) {
	dir := newWorkspace(t)
	if o := mustPlan(t, dir, "plans"); o.stdout != "No plan has run yet.\n" {
		t.Errorf("plans before any run: %v", o)
	}
	var none []planSummaryView
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "plans").stdout), &none); err != nil || none == nil || len(none) != 0 {
		t.Errorf("plans --json before any run is not an empty list: %v, %v", none, err)
	}

	writeFile(t, dir, "alpha.yaml", "name: alpha\ndecisions:\n  - id: one\n    run: echo alpha > alpha.txt\n")
	writeFile(t, dir, "beta.yaml", "name: beta\ndecisions:\n"+
		"  - id: two\n    run: echo beta > beta.txt\n"+
		"  - id: three\n    run: exit 4\n"+
		"  - id: four\n    run: 'true'\n")
	mustPlan(t, dir, "run", "alpha.yaml")
	if o := inWorkspace(dir, "run", "beta.yaml"); o.code != ExitInternal {
		t.Fatalf("beta's third decision fails: want exit 1\n%v", o)
	}

	o := mustPlan(t, dir, "plans")
	lines := strings.Split(strings.TrimSuffix(o.stdout, "\n"), "\n")
	if len(lines) != 3 || !regexp.MustCompile(`^PLAN\s+CURRENT\s+DECISIONS\s+LAST RUN\s+SOURCE$`).MatchString(lines[0]) {
		t.Fatalf("plans: want a header and two rows\n%v", o)
	}
	stamp := `\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}` // local, with its offset
	if !regexp.MustCompile(`^beta\s+\*\s+1 succeeded, 1 failed, 1 skipped\s+` + stamp + `\s+\S*/beta\.yaml$`).MatchString(lines[1]) {
		t.Errorf("the current plan is not first, marked and counted: %q\n%v", lines[1], o)
	}
	if !regexp.MustCompile(`^alpha\s+1 succeeded\s+` + stamp + `\s+\S*/alpha\.yaml$`).MatchString(lines[2]) {
		t.Errorf("the other plan's row: %q\n%v", lines[2], o)
	}

	var views []planSummaryView
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "plans").stdout), &views); err != nil || len(views) != 2 {
		t.Fatalf("plans --json: %+v, %v", views, err)
	}
	beta, alpha := views[0], views[1]
	if beta.Name != "beta" || !beta.Current || alpha.Name != "alpha" || alpha.Current {
		t.Errorf("plans --json order or current flag: %+v", views)
	}
	if want := map[string]int{"succeeded": 1, "failed": 1, "skipped": 1}; !equalCounts(beta.Decisions, want) {
		t.Errorf("beta's decisions %v, want %v", beta.Decisions, want)
	}
	if beta.LastRunAt == nil {
		t.Fatalf("beta ran but has no last_run_at: %+v", beta)
	}
	if _, err := time.Parse(time.RFC3339, *beta.LastRunAt); err != nil {
		t.Errorf("last_run_at %q is not RFC 3339: %v", *beta.LastRunAt, err)
	}
	if !strings.HasSuffix(alpha.Source, "alpha.yaml") {
		t.Errorf("alpha's source %q", alpha.Source)
	}

	if o := inWorkspace(dir, "plans", "extra"); o.code != ExitUsage || !strings.Contains(o.stderr, `unexpected argument "extra"`) {
		t.Errorf("plans with an argument: want exit 2\n%v", o)
	}
	if o := inWorkspace(t.TempDir(), "plans"); o.code != ExitNotFound || !strings.Contains(o.stderr, "run `plan init`") {
		t.Errorf("plans outside a workspace: want exit 4 and the init hint\n%v", o)
	}
}

func equalCounts(got, want map[string]int) bool {
	if len(got) != len(want) {
		return false
	}
	for k, n := range want {
		if got[k] != n {
			return false
		}
	}
	return true
}

// status, log and exec take --plan NAME to address a plan that is not the current one; a plan
// that does not exist is "not found" and points at `plan plans`.
func TestPlanFlagAddressesAnotherPlan(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "alpha.yaml", "name: alpha\ndecisions:\n  - id: one\n    run: echo from-alpha\n  - id: later\n    run: 'true'\n")
	writeFile(t, dir, "beta.yaml", "name: beta\ndecisions:\n  - id: two\n    run: echo from-beta\n")
	mustPlan(t, dir, "run", "alpha.yaml")
	mustPlan(t, dir, "run", "beta.yaml")

	if o := mustPlan(t, dir, "status"); !strings.Contains(o.stdout, "\nplan beta (checkpoints on)\n") {
		t.Errorf("status shows the current plan: %v", o)
	}
	o := mustPlan(t, dir, "status", "--plan", "alpha")
	if !strings.Contains(o.stdout, "\nplan alpha (checkpoints on)\n") || !regexp.MustCompile(`(?m)^one\s+succeeded\s+1\s+0\s`).MatchString(o.stdout) {
		t.Errorf("status --plan alpha: %v", o)
	}
	if o := mustPlan(t, dir, "log", "--plan", "alpha"); o.stdout != "==> one (attempt 1, succeeded) <==\nfrom-alpha\n==> later (attempt 1, succeeded) <==\n" {
		t.Errorf("log --plan alpha: %v", o)
	}
	if o := mustPlan(t, dir, "log"); o.stdout != "from-beta\n" {
		t.Errorf("log of the current plan's only decision has no header: %v", o)
	}
	for _, args := range [][]string{{"status", "--plan", "nope"}, {"log", "--plan", "nope"}, {"log", "one", "--plan", "nope"}} {
		if o := inWorkspace(dir, args...); o.code != ExitNotFound || !strings.Contains(o.stderr, "plan plans") {
			t.Errorf("%v: want exit 4 and a pointer to `plan plans`\n%v", args, o)
		}
	}
}

// A plan run with --no-checkpoints says, in its status, that its decisions cannot be undone.
func TestStatusWarnsWithoutCheckpoints(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "plan.yaml", "name: bare\ndecisions:\n  - id: a\n    run: echo a > a.txt\n")
	mustPlan(t, dir, "run", "plan.yaml", "--no-checkpoints")
	o := mustPlan(t, dir, "status")
	if !strings.Contains(o.stdout, "\nplan bare (checkpoints OFF (--no-checkpoints): decisions cannot be rolled back or corrected)\n") ||
		!regexp.MustCompile(`(?m)^a\s+succeeded\s+1\s+0\s+-\s+0\s*$`).MatchString(o.stdout) {
		t.Errorf("status of a plan without checkpoints: %v", o)
	}
	if o := inWorkspace(dir, "--yes", "correct", "--decision", "a", "--reason", "wrong"); o.code == ExitOK {
		t.Errorf("a decision without a checkpoint was corrected\n%v", o)
	}
	if got := readFile(t, dir, "a.txt"); got != "a\n" {
		t.Errorf("a refused correction changed a.txt to %q", got)
	}
}

// status tells what changed since the newest checkpoint and a pending crashed operation, also in a
// workspace where no plan has run, and from a subdirectory.
func TestStatusTellsWhatIsPending(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "sub/a.txt", "a\n")
	o := mustPlan(t, filepath.Join(dir, "sub"), "status")
	if !strings.Contains(o.stdout, "no checkpoint yet\nchanges since: 2 files (2 added, 0 modified, 0 deleted") ||
		!strings.Contains(o.stdout, "no plan has run yet") {
		t.Errorf("status of a fresh workspace: %v", o)
	}
	id := createCheckpoint(t, dir)
	writeFile(t, dir, "sub/a.txt", "changed\n")
	writeFile(t, dir, "b.txt", "b\n")
	var v view.WorkspaceStatus
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "status").stdout), &v); err != nil {
		t.Fatal(err)
	}
	ws := v.Workspace
	if v.Plan != nil || len(v.Decisions) != 0 || ws.LatestCheckpoint == nil || *ws.LatestCheckpoint != id || ws.Head == nil || *ws.Head != id ||
		ws.Changes.Added != 1 || ws.Changes.Modified != 1 || ws.Changes.Deleted != 0 || ws.PendingOperation != nil {
		t.Fatalf("status --json: %+v", v)
	}
	if o := mustPlan(t, dir, "status"); !strings.Contains(o.stdout, "head "+*ws.LatestShortID+" ("+id+")\n") {
		t.Errorf("status names the head by its short name: %v", o)
	}
	// An operation a crash left in the journal is pending until recovered; status says so.
	var root tree.Hash
	if err := root.UnmarshalText([]byte(jsonField(t, mustPlan(t, dir, "--json", "checkpoint", "show", id), "root_tree"))); err != nil {
		t.Fatal(err)
	}
	op := port.Operation{ID: "0123456789abcdef01234567", Kind: "rollback", Direction: port.Forward,
		Source: root, Target: root, TargetCheckpoint: checkpoint.ID(id), StartedAt: time.Now()}
	bootstrap.TestJournal(t, dir, op)
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "status").stdout), &v); err != nil {
		t.Fatal(err)
	}
	if p := v.Workspace.PendingOperation; p == nil || p.Kind != "rollback" || p.ID != op.ID {
		t.Fatalf("the pending rollback: %+v", v.Workspace)
	}
	if o := mustPlan(t, dir, "status"); !strings.Contains(o.stdout, "pending: an interrupted rollback ("+op.ID+"): plan recover finishes it\n") {
		t.Errorf("status of a pending rollback: %v", o)
	}
}
