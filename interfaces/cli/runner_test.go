package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/infrastructure/bootstrap"
)

// outcome is one in-process run of the CLI.
type outcome struct {
	args           []string
	code           int
	stdout, stderr string
}

func (o outcome) String() string {
	return fmt.Sprintf("plan %q exited %d\nstdout:\n%s\nstderr:\n%s", o.args, o.code, o.stdout, o.stderr)
}

// invoke runs args through r with fresh output buffers (r's own writers are replaced).
func invoke(r Runner, args ...string) outcome {
	r.Getenv = withDataDir(r.Getenv)
	var out, errOut bytes.Buffer
	r.Stdout, r.Stderr = &out, &errOut
	if r.Stdin == nil {
		r.Stdin = strings.NewReader("")
	}
	code := r.Run(context.Background(), append([]string{"plan"}, args...))
	return outcome{args: args, code: code, stdout: out.String(), stderr: errOut.String()}
}

// inWorkspace runs a non-interactive command in workspace dir.
func inWorkspace(dir string, args ...string) outcome {
	return invoke(Runner{}, append([]string{"-C", dir}, args...)...)
}

// mustPlan runs a command in dir that must succeed.
func mustPlan(t *testing.T, dir string, args ...string) outcome {
	t.Helper()
	o := inWorkspace(dir, args...)
	if o.code != ExitOK {
		t.Fatalf("%v", o)
	}
	return o
}

// newWorkspace returns an initialised workspace.
func newWorkspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mustPlan(t, dir, "init")
	return dir
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jsonField decodes a --json document and returns one top-level string field.
func jsonField(t *testing.T, o outcome, field string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(o.stdout), &m); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%v", err, o)
	}
	s, ok := m[field].(string)
	if !ok {
		t.Fatalf("field %q is %T in %v", field, m[field], o)
	}
	return s
}

func createCheckpoint(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return jsonField(t, mustPlan(t, dir, append([]string{"--json", "checkpoint", "create"}, args...)...), "id")
}

func TestRunVersion(t *testing.T) {
	for _, flag := range []string{"--version", "-v"} {
		o := invoke(Runner{Version: "1.2.3"}, flag)
		if o.code != ExitOK || o.stdout != "plan version 1.2.3\n" || o.stderr != "" {
			t.Errorf("%v", o)
		}
	}
}

func TestRunHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"checkpoint", "--help"}, {"checkpoint", "show", "--help"}} {
		o := invoke(Runner{}, args...)
		if o.code != ExitOK || o.stderr != "" || !strings.Contains(o.stdout, "USAGE:") {
			t.Errorf("%v", o)
		}
	}
	o := invoke(Runner{}, "--help")
	for _, cmd := range []string{"init", "checkpoint", "diff", "rollback", "recover", "demo", "run", "exec", "status",
		"log", "correct", "correction", "verify", "gc", "stats", "doctor"} {
		if !regexp.MustCompile(`(?m)^\s+` + cmd + `\s`).MatchString(o.stdout) {
			t.Errorf("--help does not list %q:\n%s", cmd, o.stdout)
		}
	}
}

// Usage errors are exit 2 and come before anything looks at the workspace (which here is not even
// initialised, so a command that opened it would exit 4).
func TestRunUsageErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args   []string
		stderr string
	}{
		{[]string{"checkpoint"}, `missing subcommand for "checkpoint"`},
		{[]string{"correction"}, `missing subcommand for "correction"`},
		{[]string{"checkpoint", "frob"}, `unknown command "frob"`},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"status", "--bogus"}, "unknown flag --bogus (see `plan status --help`)"},
		{[]string{"--bogus", "status"}, "unknown flag --bogus (see `plan --help`)"},
		{[]string{"status", "-x"}, "unknown flag -x (see `plan status --help`)"},
		{[]string{"status", "--jsno"}, "unknown flag --jsno: did you mean --json? (see `plan status --help`)"},
		{[]string{"rollback", "--to-chekpoint", "x"}, "unknown flag --to-chekpoint: did you mean --to-checkpoint? (see `plan rollback --help`)"},
		{[]string{"checkpoint", "prune", "--kep", "3"}, "unknown flag --kep: did you mean --keep? (see `plan checkpoint prune --help`)"},
		{[]string{"checkpoint", "show"}, "missing argument ID (see `plan "},
		{[]string{"checkpoint", "delete"}, "missing argument ID (see `plan "},
		{[]string{"checkpoint", "show", "aaaa", "bbbb"}, `unexpected argument "bbbb"`},
		{[]string{"checkpoint", "list", "extra"}, `unexpected argument "extra"`},
		{[]string{"checkpoint", "prune"}, "missing --keep N"},
		{[]string{"diff", "aaaa", "bbbb", "cccc", "--", "path"}, `unexpected argument "cccc": diff compares at most two checkpoints`},
		{[]string{"rollback"}, "missing --to-checkpoint ID"},
		{[]string{"rollback", "extra"}, "missing --to-checkpoint ID or --at TIME"},
		{[]string{"recover", "extra"}, `unexpected argument "extra"`},
		{[]string{"demo", "extra"}, `unexpected argument "extra"`},
		{[]string{"init", "extra"}, `unexpected argument "extra"`},
		{[]string{"run"}, "missing argument FILE"},
		{[]string{"run", "a.yaml", "b.yaml"}, `unexpected argument "b.yaml"`},
		{[]string{"exec"}, "missing command: plan exec [--id ID] -- CMD"},
		{[]string{"exec", "--id", "x"}, "missing command: plan exec [--id ID] -- CMD"},
		{[]string{"status", "extra"}, `unexpected argument "extra"`},
		{[]string{"log", "a", "b"}, `unexpected argument "b"`},
		{[]string{"correct"}, "missing --decision ID"},
		{[]string{"correct", "--decision", "d"}, "missing --reason TEXT"},
		{[]string{"correct", "extra"}, `unexpected argument "extra"`},
		{[]string{"correction", "show"}, "missing argument ID"},
		{[]string{"correction", "list", "extra"}, `unexpected argument "extra"`},
		{[]string{"verify", "a", "b"}, `unexpected argument "b"`},
		{[]string{"gc", "extra"}, `unexpected argument "extra"`},
		{[]string{"stats", "extra"}, `unexpected argument "extra"`},
		{[]string{"doctor", "extra"}, `unexpected argument "extra"`},
		{[]string{"checkpoint", "create", "extra"}, `unexpected argument "extra"`},
		{[]string{"checkpoint", "prune", "--keep", "1", "extra"}, `unexpected argument "extra"`},
		{[]string{"checkpoint", "delete", "aaaa", "extra"}, `unexpected argument "extra"`},
		{[]string{"correction", "show", "aaaa", "extra"}, `unexpected argument "extra"`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			o := inWorkspace(dir, c.args...)
			if o.code != ExitUsage || !strings.Contains(o.stderr, c.stderr) {
				t.Errorf("want exit %d and %q on stderr\n%v", ExitUsage, c.stderr, o)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, ".plan")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a usage error created .plan/: %v", err)
	}
}

func TestRunWithoutCommand(t *testing.T) {
	o := invoke(Runner{})
	if o.code != ExitUsage || !strings.Contains(o.stdout, "COMMANDS:") {
		t.Fatalf("plan without a command: want exit 2 and the command list\n%v", o)
	}
}

// groupAction means to say "missing command" when no command is given at all, but urfave/cli v2.27
// gives the root context a Command named after the app, so the branch never runs.
func TestRunWithoutCommandSaysMissingCommand(t *testing.T) {
	o := invoke(Runner{})
	if !strings.Contains(o.stderr, "plan: missing command (see `plan --help`)\n") {
		t.Fatalf("%v", o)
	}
}

func TestUsageHintNamesTheCommandOnce(t *testing.T) {
	for _, c := range []struct {
		args []string
		hint string
	}{
		{[]string{"checkpoint", "show"}, "(see `plan checkpoint show --help`)"},
		{[]string{"status", "extra"}, "(see `plan status --help`)"},
	} {
		o := inWorkspace(t.TempDir(), c.args...)
		if !strings.Contains(o.stderr, c.hint) || strings.Contains(o.stderr, "plan plan") {
			t.Errorf("want the hint %q\n%v", c.hint, o)
		}
	}
}

func TestRunJSONErrorDocument(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args    []string
		code    int
		kind    string
		message string
	}{
		{[]string{"--json", "-C", dir, "status"}, ExitNotFound, "not_found", "run `plan init`"},
		{[]string{"-C", dir, "status", "--json"}, ExitNotFound, "not_found", "run `plan init`"},
		{[]string{"--json", "-C", dir, "checkpoint", "show"}, ExitUsage, "usage", "missing argument ID"},
		{[]string{"--json", "-C", dir, "frobnicate"}, ExitUsage, "usage", `unknown command "frobnicate"`},
		{[]string{"--json", "-C", filepath.Join(dir, "missing"), "init"}, ExitNotFound, "not_found", "does not exist"},
	}
	for _, c := range cases {
		o := invoke(Runner{}, c.args...)
		if o.code != c.code {
			t.Errorf("exit %d, want %d\n%v", o.code, c.code, o)
			continue
		}
		if o.stdout != "" {
			t.Errorf("a failure printed on stdout\n%v", o)
		}
		lines := strings.Split(strings.TrimSuffix(o.stderr, "\n"), "\n")
		if len(lines) != 1 {
			t.Errorf("stderr is not exactly one line\n%v", o)
			continue
		}
		var doc struct {
			Error struct {
				Kind    string `json:"kind"`
				Message string `json:"message"`
			} `json:"error"`
			Code int `json:"code"`
		}
		dec := json.NewDecoder(strings.NewReader(lines[0]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil {
			t.Errorf("stderr is not the error document: %v\n%v", err, o)
			continue
		}
		if doc.Code != c.code || doc.Error.Kind != c.kind || !strings.Contains(doc.Error.Message, c.message) {
			t.Errorf("document %+v, want code %d kind %q and a message with %q", doc, c.code, c.kind, c.message)
		}
	}
}

func TestRunWorkspaceErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	writeFile(t, dir, "file", "x")
	if o := inWorkspace(file, "init"); o.code != ExitInvalid || !strings.Contains(o.stderr, "is not a directory") {
		t.Errorf("init on a file: want exit 3\n%v", o)
	}
	if o := inWorkspace(file, "status"); o.code != ExitInvalid {
		t.Errorf("status on a file: want exit 3\n%v", o)
	}
	if o := inWorkspace(filepath.Join(dir, "missing"), "doctor"); o.code != ExitNotFound {
		t.Errorf("doctor on a missing directory: want exit 4\n%v", o)
	}
	if o := inWorkspace(dir, "doctor"); o.code != ExitNotFound || !strings.Contains(o.stderr, "run `plan init`") {
		t.Errorf("doctor outside a workspace: want exit 4 and the init hint\n%v", o)
	}
}

func TestRollbackConfirmation(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	id := createCheckpoint(t, dir)
	changed := func() {
		t.Helper()
		writeFile(t, dir, "a.txt", "two\n")
		writeFile(t, dir, "b.txt", "new\n")
	}
	unchanged := func(o outcome) {
		t.Helper()
		if got := readFile(t, dir, "a.txt"); got != "two\n" {
			t.Errorf("a.txt = %q after a refused rollback\n%v", got, o)
		}
		if _, err := os.Stat(filepath.Join(dir, "b.txt")); err != nil {
			t.Errorf("b.txt is gone after a refused rollback: %v\n%v", err, o)
		}
	}
	changed()

	o := inWorkspace(dir, "rollback", "--to-checkpoint", id)
	if o.code != ExitUsage || !strings.Contains(o.stderr, "rollback needs confirmation and there is no terminal to ask on: pass --yes") {
		t.Errorf("without a terminal: want exit 2 and the --yes hint\n%v", o)
	}
	unchanged(o)

	for _, answer := range []string{"n\n", "no\n", ""} {
		o := invoke(Runner{Interactive: true, Stdin: strings.NewReader(answer)}, "-C", dir, "rollback", "--to-checkpoint", id)
		if o.code != ExitDeclined || !strings.Contains(o.stderr, "rollback cancelled: nothing was changed") {
			t.Errorf("answer %q: want exit 2 and cancelled\n%v", answer, o)
		}
		for _, want := range []string{"Rolling back to " + id, "would change 2 files (0 added, 1 modified, 1 deleted)", "  M a.txt\n", "  D b.txt\n", "Continue? [y/N] "} {
			if !strings.Contains(o.stderr, want) {
				t.Errorf("answer %q: the prompt lacks %q\n%v", answer, want, o)
			}
		}
		unchanged(o)
	}

	for _, answer := range []string{"y\n", "yes\n"} {
		changed()
		o := invoke(Runner{Interactive: true, Stdin: strings.NewReader(answer)}, "-C", dir, "rollback", "--to-checkpoint", id)
		if o.code != ExitOK {
			t.Fatalf("answer %q: %v", answer, o)
		}
		if got := readFile(t, dir, "a.txt"); got != "one\n" {
			t.Errorf("answer %q: a.txt = %q after the rollback", answer, got)
		}
		if _, err := os.Stat(filepath.Join(dir, "b.txt")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("answer %q: b.txt survived the rollback: %v", answer, err)
		}
		if !strings.Contains(o.stdout, "Rolled back to "+id+": 0 added, 1 modified, 1 deleted.") ||
			!strings.Contains(o.stdout, "Undo with: plan rollback --to-checkpoint ") {
			t.Errorf("answer %q: the report is incomplete\n%v", answer, o)
		}
	}
}

func TestCorrectionConfirmationWithoutTerminal(t *testing.T) {
	dir := newWorkspace(t)
	mustPlan(t, dir, "exec", "--id", "one", "--", "sh", "-c", "echo 1 > one.txt")
	o := inWorkspace(dir, "correct", "--decision", "one", "--reason", "wrong")
	if o.code != ExitUsage || !strings.Contains(o.stderr, "correction needs confirmation") {
		t.Fatalf("want exit 2 and the --yes hint\n%v", o)
	}
	if got := readFile(t, dir, "one.txt"); got != "1\n" {
		t.Errorf("one.txt = %q after a refused correction", got)
	}
	o = invoke(Runner{Interactive: true, Stdin: strings.NewReader("n\n")}, "-C", dir, "correct", "--decision", "one", "--reason", "wrong")
	if o.code != ExitDeclined || !strings.Contains(o.stderr, "Correcting one would revert one (attempt 1)") ||
		!strings.Contains(o.stderr, "then re-execute from one.") {
		t.Fatalf("answer n: want the summary and exit 8\n%v", o)
	}
	o = invoke(Runner{Interactive: true, Stdin: strings.NewReader("n\n")}, "-C", dir, "correct", "--decision", "one",
		"--reason", "wrong", "--no-reexecute")
	if !strings.Contains(o.stderr, "and not re-execute anything (--no-reexecute).") {
		t.Errorf("--no-reexecute is not in the summary\n%v", o)
	}
}

func TestDemo(t *testing.T) {
	tmp, data := t.TempDir(), ownDataDir(t)
	t.Setenv("TMPDIR", tmp)
	t.Setenv("PLAN_DATA_DIR", data)
	o := invoke(Runner{Version: "test"}, "demo")
	if o.code != ExitOK {
		t.Fatalf("%v", o)
	}
	for _, want := range []string{
		"# 1. Run it.",
		"$ plan run plan.yaml\n",
		"plan: configure succeeded",
		"$ plan correct --decision configure --reason 'deleted a page and set production' --dry-run\n",
		"Correcting configure would revert configure (attempt 1), build (attempt 1),",
		"corrected command:   printf 'env=development\\nminify=false\\n' > site.conf",
		"/configure/site.conf:\nenv=production\nminify=true\n",
		"Reverted decisions: configure, build",
		"# No differences: the workspace is exactly as it was before the correction.",
	} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("the narrative lacks %q\n%v", want, o)
		}
	}
	if strings.Contains(o.stdout, "--keep") {
		t.Errorf("without --keep the demo says it kept the workspace\n%v", o)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the demo left %d entries in TMPDIR (first %q)", len(left), left[0].Name())
	}
	requireNoHistories(t, data, "the demo")

	o = invoke(Runner{}, "demo", "--keep")
	if o.code != ExitOK {
		t.Fatalf("%v", o)
	}
	m := regexp.MustCompile(`# The workspace is kept in (\S+) \(--keep\)\.`).FindStringSubmatch(o.stdout)
	if m == nil {
		t.Fatalf("--keep does not say where the workspace is\n%v", o)
	}
	defer func() { _ = os.RemoveAll(m[1]) }()
	// The demo ends by undoing the correction, so the kept workspace is as before it.
	if got := readFile(t, m[1], "site.conf"); got != "env=production\nminify=true\n" {
		t.Errorf("the kept workspace does not hold the state before the correction: %q", got)
	}
	if o := inWorkspace(m[1], "correction", "list"); o.code != ExitOK || !strings.Contains(o.stdout, "configure") {
		t.Errorf("the kept workspace lost its correction record\n%v", o)
	}
}

func TestDemoFailsOnUnwritableTempDir(t *testing.T) {
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	if o := invoke(Runner{}, "demo"); o.code != ExitInternal {
		t.Fatalf("want exit 1 when the demo cannot create its workspace\n%v", o)
	}
}

// plan init --store workspace keeps the whole history in .plan/, where `git clean -fdx` destroys
// it: init says so (and how to move it out), and what names the store names .plan/objects. The
// data directory keeps nothing of it.
func TestInWorkspaceHistoryIsInPlanDir(t *testing.T) {
	data := ownDataDir(t)
	t.Setenv("PLAN_DATA_DIR", data)
	dir := t.TempDir()
	state := filepath.Join(dir, ".plan")
	history := "history: " + state + " (inside the workspace: `git clean -fdx` or `rm -rf .plan` destroys it; `plan store move-out` moves it out)\n"
	if o := mustPlan(t, dir, "init", "--store", "workspace"); !strings.Contains(o.stdout, "Initialised plan workspace in "+dir) || !strings.Contains(o.stdout, history) {
		t.Errorf("%v", o)
	}
	if o := mustPlan(t, dir, "init"); !strings.Contains(o.stdout, "is already initialised") || !strings.Contains(o.stdout, history) {
		t.Errorf("%v", o)
	}
	writeFile(t, dir, "a.txt", "alpha\n")
	createCheckpoint(t, dir)
	mustPlan(t, dir, "exec", "--id", "d", "--", "sh", "-c", "echo beta > a.txt")
	if l := stateOf(t, dir); l.Outside() || l.Home() != state {
		t.Errorf("the history of a --store workspace workspace is in %s", l.Home())
	}
	for _, p := range []string{"plan.db", "objects/packs", "archive", "logs/plans/adhoc/d.1.log"} {
		if _, err := os.Stat(filepath.Join(state, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if o := mustPlan(t, dir, "verify", "--read-data"); !strings.HasSuffix(o.stdout, " (content re-hashed, read from "+filepath.Join(state, "objects")+").\n") {
		t.Errorf("verify --read-data: %v", o)
	}
	requireNoHistories(t, data, "a --store workspace workspace")
}

// TestTextOutput walks the commands a person runs, without --json, and checks what they are told.
func TestTextOutput(t *testing.T) {
	dir := t.TempDir()
	o := mustPlan(t, dir, "init")
	history := "history: " + stateOf(t, dir).Home() + " (outside the workspace)\n"
	if !strings.Contains(o.stdout, "Initialised plan workspace in ") || !strings.Contains(o.stdout, history) {
		t.Errorf("%v", o)
	}
	if o := mustPlan(t, dir, "init"); !strings.Contains(o.stdout, "is already initialised") || !strings.Contains(o.stdout, history) {
		t.Errorf("%v", o)
	}
	if o := mustPlan(t, dir, "checkpoint", "list"); !strings.Contains(o.stdout, "No checkpoints yet") {
		t.Errorf("%v", o)
	}
	if o := mustPlan(t, dir, "correction", "list"); !strings.Contains(o.stdout, "No corrections yet.") {
		t.Errorf("%v", o)
	}
	if o := mustPlan(t, dir, "recover"); !strings.Contains(o.stdout, "Nothing to recover") {
		t.Errorf("%v", o)
	}

	writeFile(t, dir, "a.txt", "alpha\n")
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	o = mustPlan(t, dir, "checkpoint", "create", "--note", "first")
	m := regexp.MustCompile(`^Created checkpoint ([0-9a-f]{24}) \([k-z]{4,12}, manual\): 2 files, `).FindStringSubmatch(o.stdout)
	if m == nil {
		t.Fatalf("create: %v", o)
	}
	first := m[1]

	o = mustPlan(t, dir, "checkpoint", "list")
	if !regexp.MustCompile(`(?m)^SHORT\s+ID\s+TYPE\s+CREATED\s+FILES\s+SIZE\s+NOTE$`).MatchString(o.stdout) ||
		!regexp.MustCompile(`(?m)^[k-z]{4,12}\s+`+first+`\s+manual\s+\S+ \S+ [+-]\d{4}\s+2\s+11 B\s+@ head first$`).MatchString(o.stdout) {
		t.Errorf("list: %v", o)
	}

	o = mustPlan(t, dir, "checkpoint", "show", first[:8], "--files")
	for _, re := range []string{
		`(?m)^checkpoint ` + first + ` \([k-z]{4,12}\)$`,
		`(?m)^note:        first$`,
		`(?m)^decision:    -$`,
		`(?m)^0600\s+file\s+6\s+[0-9a-f]{16}\s+a\.txt$`,
		`(?m)^0777\s+symlink\s+5\s+-> a\.txt\s+link$`,
	} {
		if !regexp.MustCompile(re).MatchString(o.stdout) {
			t.Errorf("show --files lacks %s\n%v", re, o)
		}
	}

	// More than 20 changes: the rollback preview lists 20 and counts the rest.
	for i := range 25 {
		writeFile(t, dir, fmt.Sprintf("many/f%02d", i), "x")
	}
	o = mustPlan(t, dir, "rollback", "--to-checkpoint", first, "--dry-run")
	if !strings.Contains(o.stdout, "would change 25 files (0 added, 0 modified, 25 deleted):") || !strings.Contains(o.stdout, "  … and 6 more\n") {
		t.Errorf("rollback --dry-run: %v", o)
	}
	if strings.Count(o.stdout, "\n  D ") != 20 {
		t.Errorf("rollback --dry-run lists %d changes, want 20\n%v", strings.Count(o.stdout, "\n  D "), o)
	}
	if _, err := os.Stat(filepath.Join(dir, "many", "f00")); err != nil {
		t.Errorf("--dry-run changed the workspace: %v", err)
	}

	// A large file is not rendered by --patch; a symlink retargeted has no patch.
	writeFile(t, dir, "big.bin", strings.Repeat("b", 1<<20+1))
	if err := os.Remove(filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("big.bin", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.txt", "beta\n")
	o = mustPlan(t, dir, "diff", first, "--patch")
	for _, want := range []string{"A big.bin\n", "M a.txt\n", "M link\n", "Binary or large file big.bin differs\n", "-alpha\n+beta\n"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("diff --patch lacks %q\n%v", want, o)
		}
	}
	if strings.Contains(o.stdout, "bbbbbbbb") {
		t.Errorf("diff --patch printed the large file")
	}

	second := createCheckpoint(t, dir, "--note", "second")
	o = mustPlan(t, dir, "diff", first, second, "--patch")
	if !strings.Contains(o.stdout, "-alpha\n+beta\n") || !strings.Contains(o.stdout, "Binary or large file big.bin differs\n") {
		t.Errorf("diff --patch between checkpoints: %v", o)
	}

	o = mustPlan(t, dir, "checkpoint", "prune", "--keep", "1", "--dry-run")
	if !strings.Contains(o.stdout, "Would delete 1 checkpoints, kept 1.") || strings.Contains(o.stdout, "plan gc") {
		t.Errorf("prune --dry-run: %v", o)
	}
	o = mustPlan(t, dir, "checkpoint", "prune", "--keep", "0", "--older-than", "7d")
	if !strings.Contains(o.stdout, "Deleted 0 checkpoints, kept 2.") ||
		!strings.Contains(o.stdout, "  kept "+first+": newer than --older-than\n") {
		t.Errorf("prune --older-than: %v", o)
	}
	o = mustPlan(t, dir, "checkpoint", "prune", "--keep", "1")
	if !strings.Contains(o.stdout, "Deleted 1 checkpoints, kept 1.") || !strings.Contains(o.stdout, "`plan gc` reclaims their space.") {
		t.Errorf("prune: %v", o)
	}
	if o := inWorkspace(dir, "checkpoint", "show", first); o.code != ExitNotFound {
		t.Errorf("the pruned checkpoint is still there: %v", o)
	}
	if o := inWorkspace(dir, "checkpoint", "prune", "--keep", "1", "--older-than", "soon"); o.code != ExitInvalid {
		t.Errorf("prune with a bad --older-than: want exit 3\n%v", o)
	}

	if o := mustPlan(t, dir, "gc"); !regexp.MustCompile(`^Reclaimed \d+(\.\d)? (B|KiB|MiB) \(\d+ packs deleted, \d+ rewritten; \d+ live objects kept\)\.\n$`).MatchString(o.stdout) {
		t.Errorf("gc: %v", o)
	}
	if o := mustPlan(t, dir, "verify", "--read-data"); o.stdout != "Checked 1 checkpoints, 5 objects (content re-hashed, read from "+stateOf(t, dir).Objects()+").\n" {
		t.Errorf("verify --read-data: %v", o)
	}
	if o := mustPlan(t, dir, "verify", second[:6]); o.stdout != "Checked 1 checkpoints, 5 objects.\n" {
		t.Errorf("verify ID: %v", o)
	}
	o = mustPlan(t, dir, "stats")
	for _, re := range []string{`(?m)^checkpoints\s+1$`, `(?m)^dedup ratio\s+\d+\.\dx$`, `(?m)^checkpoint success\s+100\.0% \(0 failed\)$`, `(?m)^\s+\d{4}-\d\d-\d\d\s+1 checkpoints, \+`} {
		if !regexp.MustCompile(re).MatchString(o.stdout) {
			t.Errorf("stats lacks %s\n%v", re, o)
		}
	}
	o = mustPlan(t, dir, "doctor")
	for _, want := range []string{"ok   database\n", "ok   pack indexes\n", "ok   store\n", "ok   journal\n"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("doctor lacks %q\n%v", want, o)
		}
	}
	if o := mustPlan(t, dir, "checkpoint", "delete", second); !strings.Contains(o.stdout, "Deleted checkpoint "+second+"; `plan gc` reclaims its data.") {
		t.Errorf("delete: %v", o)
	}
}

func TestTextOutputOfDecisions(t *testing.T) {
	dir := newWorkspace(t)
	o := mustPlan(t, dir, "exec", "--id", "one", "--name", "First one", "--", "sh", "-c", "echo first; echo 1 > one.txt")
	if !regexp.MustCompile(`plan: running one \(attempt 1, checkpoint [0-9a-f]{24}\): sh -c 'echo first; echo 1 > one.txt'\n`).MatchString(o.stderr) ||
		strings.Contains(o.stderr, "plan: one succeeded") || !strings.Contains(o.stderr, "first\n") {
		t.Errorf("exec narrates on stderr: %v", o)
	}
	if !regexp.MustCompile(`^one succeeded on plan adhoc \(1 file changed; checkpoint [0-9a-f]{24} before it, [0-9a-f]{24} after it\)\n$`).MatchString(o.stdout) {
		t.Errorf("exec ends with one line, not the status table: %v", o)
	}
	o = mustPlan(t, dir, "exec", "--id", "two", "--", "sh", "-c", "echo second\necho more")
	if !strings.Contains(o.stderr, "plan: running two (attempt 1, checkpoint ") || !strings.Contains(o.stderr, "sh -c 'echo second …\n") {
		t.Errorf("a multi-line command is shown by its first line: %v", o)
	}
	o = inWorkspace(dir, "exec", "--id", "three", "--", "sh", "-c", "exit 7")
	if o.code != 7 || !strings.Contains(o.stderr, `plan: decision "three" failed with exit code 7 (checkpoint `) ||
		strings.Contains(o.stderr, "DECISION") {
		t.Errorf("a failed decision says so in one line on stderr and exits with its status: %v", o)
	}
	if o.stdout != "" {
		t.Errorf("a failed exec printed on stdout: %v", o)
	}
	if o := inWorkspace(dir, "--json", "exec", "--id", "four", "--", "false"); o.code != ExitInternal || o.stdout != "" ||
		!strings.Contains(o.stderr, `"kind":"decision_failed"`) {
		t.Errorf("a failed decision with --json: %v", o)
	}
	if o := inWorkspace(dir, "exec", "--id", "Bad ID", "--", "true"); o.code != ExitInvalid {
		t.Errorf("a malformed decision ID: want exit 3\n%v", o)
	}

	o = mustPlan(t, dir, "log")
	for _, want := range []string{"==> one (attempt 1, succeeded) <==\nfirst\n", "==> two (attempt 1, succeeded) <==\nsecond\nmore\n", "==> three (attempt 1, failed) <=="} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("log lacks %q\n%v", want, o)
		}
	}
	if o := mustPlan(t, dir, "log", "one"); o.stdout != "first\n" {
		t.Errorf("log one: %v", o)
	}
	var logs []struct {
		Decision, Status, LogPath, Output string
		Attempt                           int
	}
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "log", "two", "--attempt", "1").stdout), &logs); err != nil || len(logs) != 1 ||
		logs[0].Output != "second\nmore\n" || logs[0].Attempt != 1 {
		t.Errorf("log --json: %+v, %v", logs, err)
	}
	if o := inWorkspace(dir, "log", "one", "--attempt", "-1"); o.code != ExitInvalid {
		t.Errorf("log --attempt -1: want exit 3\n%v", o)
	}
	if o := inWorkspace(dir, "log", "one", "--attempt", "2"); o.code != ExitNotFound || !strings.Contains(o.stderr, `decision "one" has 1 attempts, not 2`) {
		t.Errorf("log --attempt 2: want exit 4\n%v", o)
	}
	if o := inWorkspace(dir, "log", "nope"); o.code != ExitNotFound {
		t.Errorf("log of an unknown decision: want exit 4\n%v", o)
	}

	o = mustPlan(t, dir, "status")
	if !strings.Contains(o.stdout, "\nplan adhoc (checkpoints on)\n") || !regexp.MustCompile(`(?m)^two\s+succeeded\s+1\s+0\s`).MatchString(o.stdout) {
		t.Errorf("status: %v", o)
	}

	o = mustPlan(t, dir, "--yes", "correct", "--decision", "two", "--reason", "wrong", "--no-reexecute")
	m := regexp.MustCompile(`(?m)^correction ([0-9a-f]{24}) of two: reverted$`).FindStringSubmatch(o.stdout)
	if m == nil || !strings.Contains(o.stdout, "reverted:            two, three, four\n") {
		t.Fatalf("correct: %v", o)
	}
	o = mustPlan(t, dir, "correction", "list")
	if !regexp.MustCompile(`(?m)^` + m[1] + `\s+two\s+reverted\s+\S+ \S+ [+-]\d{4}\s+wrong$`).MatchString(o.stdout) {
		t.Errorf("correction list: %v", o)
	}
	if o := inWorkspace(dir, "correction", "show", "zz"); o.code != ExitInvalid {
		t.Errorf("correction show with a malformed ID: want exit 3\n%v", o)
	}
}

func TestRunPlanFile(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "plan.yaml", "name: p\ndecisions:\n  - id: a\n    run: echo a > a.txt\n")
	if o := inWorkspace(dir, "run", "plan.yaml", "--on-failure", "sometimes"); o.code != ExitInvalid || !strings.Contains(o.stderr, "--on-failure must be stop, rollback or continue") {
		t.Errorf("a bad --on-failure: want exit 3\n%v", o)
	}
	if o := inWorkspace(dir, "run", "missing.yaml"); o.code != ExitNotFound {
		t.Errorf("a missing plan file: want exit 4\n%v", o)
	}
	// -C DIR: a relative plan file is found in DIR, like git -C.
	o := mustPlan(t, dir, "run", "plan.yaml")
	if got := readFile(t, dir, "a.txt"); got != "a\n" {
		t.Errorf("a.txt = %q", got)
	}
	o = mustPlan(t, dir, "run", filepath.Join(dir, "plan.yaml"))
	if !strings.Contains(o.stderr, "plan: a already succeeded; skipping it\n") {
		t.Errorf("a second run skips what succeeded: %v", o)
	}
}

// A retention policy in .plan/config.yaml runs after each successful run.
func TestRunAppliesRetention(t *testing.T) {
	dir := newWorkspace(t)
	configure(t, dir, "retention:\n  keep: 1\n")
	writeFile(t, dir, "plan.yaml", "name: p\ndecisions:\n  - id: a\n    run: echo a > a.txt\n  - id: b\n    run: echo b > b.txt\n")
	createCheckpoint(t, dir)
	createCheckpoint(t, dir)
	o := mustPlan(t, dir, "run", "plan.yaml")
	if !strings.Contains(o.stderr, "plan: retention policy pruned 2 checkpoints\n") {
		t.Errorf("run with a retention policy: %v", o)
	}
	var cps []map[string]any
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "checkpoint", "list").stdout), &cps); err != nil || len(cps) != 3 {
		t.Errorf("after retention: %d checkpoints (%v), want the newest (the run's end) plus a's and b's protected pre_decision ones", len(cps), err)
	}

	configure(t, dir, "retention:\n  keep: 0\n")
	writeFile(t, dir, "plan.yaml", "name: p\ndecisions:\n  - id: a\n    run: echo a > a.txt\n  - id: b\n    run: echo b > b.txt\n  - id: c\n    run: 'true'\n")
	o = mustPlan(t, dir, "run", "plan.yaml")
	if !strings.Contains(o.stderr, "plan: warning: retention policy: ") || !strings.Contains(o.stderr, "retention.keep must be at least 1") {
		t.Errorf("a bad retention policy is a warning, not a failure: %v", o)
	}
}

func TestProgressTerminalQuickCommandsDrawNothing(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a")
	o := invoke(Runner{ProgressTerminal: true}, "-C", dir, "checkpoint", "create")
	if o.code != ExitOK || o.stderr != "" {
		t.Errorf("a quick checkpoint on a terminal drew something: %v", o)
	}
	if h := (&handler{r: &Runner{ProgressTerminal: true}}); h.progress() == nil {
		t.Error("no progress on a terminal")
	}
	if h := (&handler{r: &Runner{ProgressTerminal: true}, json: true}); h.progress() != nil {
		t.Error("progress with --json")
	}
	if h := (&handler{r: &Runner{}}); h.progress() != nil {
		t.Error("progress without a terminal")
	}
}

func TestVerifyReportsDamage(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", strings.Repeat("data ", 100))
	id := createCheckpoint(t, dir)
	packs, err := filepath.Glob(filepath.Join(stateOf(t, dir).Objects(), "packs", "*.pack"))
	if err != nil || len(packs) == 0 {
		t.Fatalf("no packs: %v", err)
	}
	for _, p := range packs {
		if err := os.Truncate(p, 20); err != nil {
			t.Fatal(err)
		}
	}
	o := inWorkspace(dir, "verify")
	if o.code != ExitIntegrity || !strings.Contains(o.stderr, "problems in 1 checkpoints") ||
		!strings.Contains(o.stdout, "  "+id+" .: ") {
		t.Errorf("verify of a truncated pack: want exit 6 and the damaged tree\n%v", o)
	}
	o = inWorkspace(dir, "--json", "verify")
	var doc struct {
		OK       bool `json:"ok"`
		Problems []struct {
			CheckpointID string `json:"checkpoint_id"`
			Path         string `json:"path"`
			Problem      string `json:"problem"`
		} `json:"problems"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &doc); err != nil || doc.OK || len(doc.Problems) == 0 || doc.Problems[0].CheckpointID != id {
		t.Errorf("verify --json: %+v %v\n%v", doc, err, o)
	}
}

// decisionStates is `plan status --json` without its workspace part (whose latest checkpoint and
// pending changes move with every checkpoint): the plan and its decisions, to compare.
func decisionStates(t *testing.T, dir string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "status").stdout), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "workspace")
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withDataDir is getenv with the test run's data directory (PLAN_DATA_DIR, which make sets to a
// directory of the run's own) where getenv has none: a test's environment of its own never sends
// its workspaces' history into the user's data directory.
func withDataDir(getenv func(string) string) func(string) string {
	if getenv == nil {
		return nil
	}
	return func(k string) string {
		if v := getenv(k); v != "" || k != "PLAN_DATA_DIR" {
			return v
		}
		return os.Getenv(k)
	}
}

// stateOf is the layout of the workspace at root with its state directory resolved: where its
// history (database, store, journal, archive, logs) is kept, in the data directory for a
// workspace plan init made, in .plan/ itself for one made with --store workspace.
func stateOf(t *testing.T, root string) bootstrap.Layout {
	t.Helper()
	l, err := bootstrap.LayoutAt(root)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// configure writes the workspace's .plan/config.yaml anew with the settings yaml, keeping what
// plan init wrote there to name the workspace, its state directory and its store: a file written
// without them would lose the workspace its history.
func configure(t *testing.T, dir, yaml string) {
	t.Helper()
	var kept strings.Builder
	for _, line := range strings.SplitAfter(readFile(t, dir, ".plan/config.yaml"), "\n") {
		if key, _, ok := strings.Cut(line, ":"); ok && slices.Contains([]string{"workspace_id", "state_dir", "store", "db"}, key) {
			kept.WriteString(line)
		}
	}
	writeFile(t, dir, ".plan/config.yaml", kept.String()+yaml)
}

// ownDataDir is a data directory of the test's own, for PLAN_DATA_DIR (not made yet: plan makes
// it private).
func ownDataDir(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "plan-data")
}
