package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/tests/testkit/schematest"
)

// Every --json output validates against its schema under docs/schema, produced by real commands on
// a real workspace: the documentation cannot drift from what the CLI prints. The schemas forbid
// properties they do not name, so an added field must be documented too.
func TestJSONOutputsMatchTheirSchemas(t *testing.T) {
	schemas := schematest.New(t, filepath.Join("..", "..", "docs", "schema"))
	check, validated := schemas.Check, schemas.Validated
	jsonOut := func(dir string, args ...string) string {
		t.Helper()
		return mustPlan(t, dir, append([]string{"--json"}, args...)...).stdout
	}
	dir := t.TempDir()
	check("init", jsonOut(dir, "init"))
	writeFile(t, dir, "a.txt", "one\n")
	writeFile(t, dir, "sub/b.txt", "two\n")
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	first := jsonOut(dir, "checkpoint", "create", "--note", "first")
	check("checkpoint", first)
	var cp struct{ ID string }
	if err := json.Unmarshal([]byte(first), &cp); err != nil {
		t.Fatal(err)
	}
	check("checkpoint-show-files", jsonOut(dir, "checkpoint", "show", "--files", cp.ID))
	check("run", jsonOut(dir, "exec", "--id", "mk", "--", "sh", "-c", "echo three > c.txt && mkdir empty"))
	check("status", jsonOut(dir, "status"))
	check("plans", jsonOut(dir, "plans"))
	check("log", jsonOut(dir, "log"))
	check("log", jsonOut(dir, "log", "mk", "--attempt", "1"))
	check("diff", jsonOut(dir, "diff", cp.ID))
	check("diff", jsonOut(dir, "diff", cp.ID, "--stat", "--patch"))
	check("ls", jsonOut(dir, "ls", cp.ID, "-r"))
	check("cat", jsonOut(dir, "cat", cp.ID, "a.txt"))
	check("cat", jsonOut(dir, "cat", cp.ID, "link"))
	check("restore", jsonOut(dir, "restore", cp.ID, "--target", filepath.Join(t.TempDir(), "copy"), "--", "sub"))
	check("show", jsonOut(dir, "show", "mk", "--stat", "--patch"))
	check("checkpoint-list", jsonOut(dir, "checkpoint", "list"))
	check("correction", jsonOut(dir, "--yes", "correct", "--decision", "mk", "--reason", "wrong", "--no-reexecute"))
	check("correction-list", jsonOut(dir, "correction", "list"))
	var list []struct {
		ID string `json:"correction_id"`
	}
	if err := json.Unmarshal([]byte(jsonOut(dir, "correction", "list")), &list); err != nil || len(list) != 1 {
		t.Fatalf("correction list: %v", err)
	}
	check("correction", jsonOut(dir, "correction", "show", list[0].ID))
	check("rollback", jsonOut(dir, "rollback", "--to-checkpoint", cp.ID, "--dry-run"))
	check("rollback", jsonOut(dir, "--yes", "rollback", "--to-checkpoint", cp.ID))
	check("rollback", jsonOut(dir, "--yes", "rollback", "--to-checkpoint", cp.ID, "a.txt"))
	check("history", jsonOut(dir, "history"))
	check("undo", jsonOut(dir, "undo", "--dry-run"))
	check("undo", jsonOut(dir, "--yes", "undo"))
	check("history", jsonOut(dir, "history", "--limit", "2"))
	check("recover", jsonOut(dir, "recover"))
	check("checkpoint-prune", jsonOut(dir, "checkpoint", "prune", "--keep", "1", "--dry-run"))
	check("correction-prune", jsonOut(dir, "correction", "prune", "--keep", "0", "--dry-run"))
	check("verify", jsonOut(dir, "verify", "--read-data"))
	check("gc", jsonOut(dir, "gc"))
	check("gc", jsonOut(dir, "gc", "--aggressive"))
	check("stats", jsonOut(dir, "stats"))
	check("doctor", jsonOut(dir, "doctor"))
	check("doctor-rebuild", jsonOut(dir, "doctor", "--rebuild"))
	if err := os.Remove(stateOf(t, dir).Database()); err != nil {
		t.Fatal(err)
	}
	check("doctor-rebuild", jsonOut(dir, "doctor", "--rebuild"))
	o := inWorkspace(dir, "--json", "checkpoint", "show", "ZZ.ZZ")
	if o.code != ExitInvalid {
		t.Fatalf("a malformed ID: %v", o)
	}
	check("error", o.stderr)
	checkRevertOutputs(t, check)
	checkSharedOutputs(t, check)
	checkAgentOutputs(t, check)
	checkAgentInstallOutputs(t, check)
	checkUndoOutputs(t, check)
	checkWatchOutputs(t, check)
	for _, name := range schemas.Names() {
		// The schemas only plan mcp produces are checked by interfaces/mcp's
		// TestMCPOutputsMatchTheirSchemas, which also checks its tools' outputs against the others.
		if !validated[name] && !strings.HasPrefix(name, "mcp-") {
			t.Errorf("docs/schema/%s.json is checked by no output", name)
		}
	}
}

// checkRevertOutputs drives plan revert through a dry run, a clean revert (then correction list and
// show of the surgical correction) and a refused one, whose view is on stdout and error on stderr.
func checkRevertOutputs(t *testing.T, check func(name, doc string)) {
	t.Helper()
	dir := t.TempDir()
	jsonOut := func(args ...string) string {
		t.Helper()
		return mustPlan(t, dir, append([]string{"--json"}, args...)...).stdout
	}
	jsonOut("init")
	writeFile(t, dir, "cfg.txt", "a\nb\nc\nd\ne\n")
	jsonOut("exec", "--id", "two", "--", "sh", "-c", `printf 'A\nb\nc\nd\ne\n' > cfg.txt`)
	jsonOut("exec", "--id", "three", "--", "sh", "-c", `printf 'A\nb\nc\nd\nE\n' > cfg.txt`)
	check("revert", jsonOut("revert", "--decision", "two", "--reason", "wrong", "--dry-run"))
	check("revert", jsonOut("--yes", "revert", "--decision", "two", "--reason", "wrong"))
	list := jsonOut("correction", "list")
	check("correction-list", list)
	var cs []struct {
		ID string `json:"correction_id"`
	}
	if err := json.Unmarshal([]byte(list), &cs); err != nil || len(cs) != 1 {
		t.Fatalf("correction list: %v", err)
	}
	check("correction", jsonOut("correction", "show", cs[0].ID))
	jsonOut("exec", "--id", "four", "--", "sh", "-c", `printf 'a\nB\nc\nd\nE\n' > cfg.txt`)
	jsonOut("exec", "--id", "five", "--", "sh", "-c", `printf 'a\nBB\nc\nd\nE\n' > cfg.txt`)
	o := inWorkspace(dir, "--json", "--yes", "revert", "--decision", "four", "--reason", "wrong")
	if o.code != ExitConflict {
		t.Fatalf("a conflicting revert: %v", o)
	}
	check("revert", o.stdout)
	check("error", o.stderr)
}

// checkSharedOutputs drives a workspace on a shared (file://) store: init, gc's two phases, stats,
// workspaces and clone.
func checkSharedOutputs(t *testing.T, check func(name, doc string)) {
	t.Helper()
	base := t.TempDir()
	store := "file://" + filepath.Join(base, "store")
	dir := filepath.Join(base, "ws")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	jsonOut := func(dir string, args ...string) string {
		t.Helper()
		return mustPlan(t, dir, append([]string{"--json"}, args...)...).stdout
	}
	initOut := jsonOut(dir, "init", "--store", store)
	check("init", initOut)
	var ws struct {
		ID string `json:"workspace_id"`
	}
	if err := json.Unmarshal([]byte(initOut), &ws); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.txt", "one\n")
	jsonOut(dir, "checkpoint", "create")
	check("gc", jsonOut(dir, "gc", "--grace", "0s"))
	check("stats", jsonOut(dir, "stats"))
	check("workspaces", jsonOut(base, "workspaces", "--store", store))
	cloneOut := jsonOut(base, "clone", "--store", store, "--workspace", ws.ID, filepath.Join(base, "copy"))
	check("clone", cloneOut)
	check("workspaces", jsonOut(base, "workspaces", "--store", store))
	var cl struct {
		ID string `json:"workspace_id"`
	}
	if err := json.Unmarshal([]byte(cloneOut), &cl); err != nil {
		t.Fatal(err)
	}
	check("workspaces-retire", jsonOut(base, "--yes", "workspaces", "retire", cl.ID, "--store", store))
	check("workspaces", jsonOut(base, "workspaces", "--store", store, "--all"))
}
