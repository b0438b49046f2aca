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
	checkLocalOutputs(t, check)
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

// checkLocalOutputs drives the workspaces the data directory keeps (a data directory of its own):
// init (outside, then re-attached), workspaces while the directory is there, gone, detached and
// beside a damaged entry, clone --from bringing a gone one back, and store move-out of a workspace
// made with --store workspace (then again, already done).
func checkLocalOutputs(t *testing.T, check func(name, doc string)) {
	t.Helper()
	data, base := ownDataDir(t), t.TempDir()
	env := func(k string) string {
		if k == "PLAN_DATA_DIR" {
			return data
		}
		return os.Getenv(k)
	}
	jsonOut := func(dir string, args ...string) string {
		t.Helper()
		o := invoke(Runner{Getenv: env}, append([]string{"-C", dir, "--json"}, args...)...)
		if o.code != ExitOK {
			t.Fatalf("%v", o)
		}
		return o.stdout
	}
	type local struct {
		ID          string `json:"workspace_id"`
		Root        string `json:"root"`
		Directory   string `json:"directory"`
		Checkpoints *int   `json:"checkpoints"`
		Reattached  bool   `json:"reattached"`
		Outside     bool   `json:"outside"`
		HistoryDir  string `json:"history_dir"`
	}
	listed := func(dir string) []local {
		t.Helper()
		doc := jsonOut(dir, "workspaces")
		check("workspaces-local", doc)
		var ws []local
		if err := json.Unmarshal([]byte(doc), &ws); err != nil {
			t.Fatal(err)
		}
		return ws
	}
	decode := func(doc string) (v local) {
		t.Helper()
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}

	dir := filepath.Join(base, "ws")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	initOut := jsonOut(dir, "init")
	check("init", initOut)
	ws := decode(initOut)
	if !ws.Outside || !strings.HasPrefix(ws.HistoryDir, data+string(filepath.Separator)) {
		t.Fatalf("a new workspace keeps its history in the data directory %s: %s", data, initOut)
	}
	writeFile(t, dir, "a.txt", "one\n")
	jsonOut(dir, "checkpoint", "create")
	if got := listed(base); len(got) != 1 || got[0].ID != ws.ID || got[0].Directory != "present" {
		t.Fatalf("listed %+v, want %s present", got, ws.ID)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	// An entry that cannot be read is listed too, as damaged.
	writeFile(t, filepath.Join(data, "workspaces", "0123456789abcdef01234567"), "workspace.json", "{")
	got := listed(base)
	if len(got) != 2 || got[0].ID != ws.ID || got[0].Directory != "gone" || got[0].Checkpoints == nil || *got[0].Checkpoints != 1 ||
		got[1].Directory != "damaged" {
		t.Fatalf("listed %+v, want %s gone with its checkpoint, and the damaged entry", got, ws.ID)
	}
	back := filepath.Join(base, "back")
	cloneOut := jsonOut(base, "clone", "--from", ws.ID, back)
	check("clone-local", cloneOut)
	if cl := decode(cloneOut); cl.ID != ws.ID || readFile(t, back, "a.txt") != "one\n" {
		t.Fatalf("clone --from %s: %s", ws.ID, cloneOut)
	}
	if err := os.RemoveAll(filepath.Join(back, ".plan")); err != nil {
		t.Fatal(err)
	}
	if got := listed(base); got[0].ID != ws.ID || got[0].Root != back || got[0].Directory != "detached" {
		t.Fatalf("listed %+v, want %s detached in %s", got, ws.ID, back)
	}
	initOut = jsonOut(back, "init")
	check("init", initOut)
	if re := decode(initOut); !re.Reattached || re.ID != ws.ID {
		t.Fatalf("init in a directory that lost its .plan/: %s", initOut)
	}

	// (A damaged entry might be any directory's history: init refuses to start a new one beside it.)
	if err := os.RemoveAll(filepath.Join(data, "workspaces", "0123456789abcdef01234567")); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(base, "in")
	if err := os.Mkdir(in, 0o750); err != nil {
		t.Fatal(err)
	}
	initOut = jsonOut(in, "init", "--store", "workspace")
	check("init", initOut)
	if v := decode(initOut); v.Outside || v.HistoryDir != filepath.Join(in, ".plan") {
		t.Fatalf("init --store workspace keeps the history in .plan/: %s", initOut)
	}
	writeFile(t, in, "b.txt", "two\n")
	jsonOut(in, "checkpoint", "create")
	moved := func() (m struct {
		Files   int  `json:"files"`
		Already bool `json:"already"`
	}) {
		t.Helper()
		doc := jsonOut(in, "store", "move-out")
		check("store-move-out", doc)
		if err := json.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := moved(); m.Already || m.Files == 0 {
		t.Fatalf("move-out moved %+v", m)
	}
	if l := stateOf(t, in); !l.Outside() || !strings.HasPrefix(l.Home(), data+string(filepath.Separator)) {
		t.Fatalf("after move-out the history is in %s", l.Home())
	}
	if m := moved(); !m.Already {
		t.Fatalf("a second move-out: %+v", m)
	}
}
