package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plan workspaces retire ID without --store deletes a gone workspace's history only when asked
// to (a prompt, or --yes), never one still in its directory.
func TestRetireALocalWorkspace(t *testing.T) {
	env := map[string]string{"PLAN_DATA_DIR": filepath.Join(t.TempDir(), "data")}
	run := func(stdin string, args ...string) outcome {
		return invoke(Runner{Getenv: func(k string) string { return env[k] }, Stdin: strings.NewReader(stdin), Interactive: stdin != ""}, args...)
	}
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if o := run("", "-C", dir, "--json", "init"); o.code != ExitOK {
		t.Fatalf("%v", o)
	}
	writeFile(t, dir, "a.txt", "alpha\n")
	if o := run("", "-C", dir, "checkpoint", "create"); o.code != ExitOK {
		t.Fatalf("%v", o)
	}
	l := stateOf(t, dir)
	id := filepath.Base(l.Home())
	if o := run("", "--yes", "workspaces", "retire", id); o.code != ExitConflict || !strings.Contains(o.stderr, "in use") {
		t.Fatalf("retire of a workspace in its directory: %v", o)
	}
	if o := run("", "-C", dir, "stats"); o.code != ExitOK || !strings.Contains(o.stdout, "1 workspaces") {
		t.Fatalf("stats: %v", o)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if o := run("", "workspaces", "retire", id); o.code != ExitUsage {
		t.Fatalf("retire without --yes and without a terminal: %v", o)
	}
	if o := run("n\n", "workspaces", "retire", id); o.code == ExitOK {
		t.Fatalf("retire answered no: %v", o)
	}
	if _, err := os.Stat(l.Home()); err != nil {
		t.Fatalf("a refused retire deleted the history: %v", err)
	}
	o := run("", "--json", "--yes", "workspaces", "retire", id)
	var v struct {
		WorkspaceID string `json:"workspace_id"`
		Checkpoints *int   `json:"checkpoints"`
		Bytes       int64  `json:"bytes"`
	}
	if o.code != ExitOK || json.Unmarshal([]byte(o.stdout), &v) != nil || v.WorkspaceID != id || v.Checkpoints == nil || *v.Checkpoints != 1 || v.Bytes == 0 {
		t.Fatalf("retire --yes: %v", o)
	}
	if _, err := os.Stat(l.Home()); !os.IsNotExist(err) {
		t.Fatalf("the retired workspace's history is still there: %v", err)
	}
	if o := run("", "workspaces", "retire", id); o.code != ExitNotFound {
		t.Fatalf("retire again: %v", o)
	}
	if o := run("", "workspaces", "retire", id, "--db", "sqlite:///x.db"); o.code != ExitUsage {
		t.Fatalf("retire with --db alone: %v", o)
	}
	if o := run("", "workspaces"); o.code != ExitOK || !strings.Contains(o.stdout, "keeps no workspace") {
		t.Fatalf("workspaces of an empty data directory: %v", o)
	}
}

// A hook in a directory that lost its .plan/ re-attaches the workspace and records the call; a
// command whose own work deletes .plan/ makes it again and says so.
func TestHooksAndCommandsKeepTheWorkspaceAttached(t *testing.T) {
	env := map[string]string{"PLAN_DATA_DIR": filepath.Join(t.TempDir(), "data"), "PLAN_WATCH": "0"}
	getenv := func(k string) string { return env[k] }
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if o := invoke(Runner{Getenv: getenv}, "-C", dir, "init"); o.code != ExitOK {
		t.Fatalf("%v", o)
	}
	writeFile(t, dir, "a.txt", "alpha\n")
	if err := os.RemoveAll(filepath.Join(dir, ".plan")); err != nil {
		t.Fatal(err)
	}
	payload := `{"session_id":"S","cwd":"` + dir + `","hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"t1","tool_input":{"command":"ls"}}`
	o := invoke(Runner{Getenv: getenv, Stdin: strings.NewReader(payload)}, "hook", "claude", "PreToolUse")
	if o.code != ExitOK || !strings.Contains(o.stderr, "re-attached") {
		t.Fatalf("a hook in a directory that lost its .plan/: %v", o)
	}
	if _, err := os.Stat(filepath.Join(dir, ".plan", "config.yaml")); err != nil {
		t.Fatalf("the hook did not re-attach the workspace: %v", err)
	}
	o = invoke(Runner{Getenv: getenv, Dir: dir}, "exec", "--id", "wipe", "--", "rm", "-rf", ".plan")
	if o.code != ExitOK || !strings.Contains(o.stderr, "made again") {
		t.Fatalf("a decision that deletes .plan/: %v", o)
	}
	if o := invoke(Runner{Getenv: getenv}, "-C", dir, "sessions"); o.code != ExitOK || !strings.Contains(o.stdout, "t1") {
		t.Fatalf("sessions after the re-attach: %v", o)
	}
}

// The text of plan workspaces (each directory state), plan clone --from and plan store move-out.
func TestLocalWorkspacesText(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	env := map[string]string{"PLAN_DATA_DIR": data, "PLAN_WATCH": "0"}
	run := func(args ...string) outcome {
		return invoke(Runner{Getenv: func(k string) string { return env[k] }}, args...)
	}
	base := t.TempDir()
	mk := func(name string, args ...string) string {
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		if o := run(append([]string{"-C", dir, "init"}, args...)...); o.code != ExitOK {
			t.Fatalf("%v", o)
		}
		writeFile(t, dir, "a.txt", name+"\n")
		if o := run("-C", dir, "checkpoint", "create"); o.code != ExitOK {
			t.Fatalf("%v", o)
		}
		return dir
	}
	gone, detached, replaced := mk("gone"), mk("detached"), mk("replaced")
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(detached, ".plan")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(replaced, ".plan")); err != nil {
		t.Fatal(err)
	}
	if o := run("-C", replaced, "init", "--new"); o.code != ExitOK {
		t.Fatalf("%v", o)
	}
	damaged := filepath.Join(data, "workspaces", "dddddddddddddddddddddddd")
	if err := os.Mkdir(damaged, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(damaged, "workspace.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := run("workspaces")
	for _, want := range []string{"WORKSPACE", "gone", "detached", "replaced", "present", "damaged",
		"lost its .plan/: `plan init` there re-attaches it", "brings the workspace back", "cannot be read"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("plan workspaces: no %q in\n%s", want, o.stdout)
		}
	}
	if o := run("-C", replaced, "stats"); !strings.Contains(o.stdout, "no longer in their directory") {
		t.Errorf("stats: %v", o)
	}
	if err := os.RemoveAll(damaged); err != nil {
		t.Fatal(err)
	}
	var goneID string
	for _, line := range strings.Split(o.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[1] == "gone" {
			goneID = f[0]
		}
	}
	back := filepath.Join(base, "back")
	if o := run("clone", "--from", goneID, back); o.code != ExitOK || !strings.Contains(o.stdout, "Brought workspace") {
		t.Fatalf("clone --from: %v", o)
	}
	if got := readFile(t, back, "a.txt"); got != "gone\n" {
		t.Fatalf("the brought-back file: %q", got)
	}
	if o := run("clone", "--from", goneID, filepath.Join(base, "again")); o.code != ExitConflict {
		t.Fatalf("clone --from of a workspace now present: %v", o)
	}
	legacy := mk("legacy", "--store", "workspace")
	if o := run("-C", legacy, "store", "move-out"); o.code != ExitOK || !strings.Contains(o.stdout, "every byte was read back") {
		t.Fatalf("move-out: %v", o)
	}
	if o := run("-C", legacy, "store", "move-out"); o.code != ExitOK || !strings.Contains(o.stdout, "already outside") {
		t.Fatalf("move-out again: %v", o)
	}
	if err := os.MkdirAll(filepath.Join(legacy, ".plan", "objects"), 0o750); err != nil {
		t.Fatal(err)
	}
	if o := run("-C", legacy, "store", "move-out"); o.code != ExitOK || !strings.Contains(o.stdout, "was removed") {
		t.Fatalf("move-out with leftovers: %v", o)
	}
	if o := run("-C", legacy, "store", "move-out", "extra"); o.code != ExitUsage {
		t.Fatalf("move-out with an argument: %v", o)
	}
	if o := run("-C", filepath.Join(base, "nowhere"), "store", "move-out"); o.code == ExitOK {
		t.Fatalf("move-out outside a workspace: %v", o)
	}
}

// The local commands' refusals: an unknown workspace, a target that is not empty, a checkpoint
// the history does not hold (the workspace is attached, and says how to finish), a data directory
// that cannot be named, a bad --limit; retire's text.
func TestLocalCommandsRefusals(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	env := map[string]string{"PLAN_DATA_DIR": data, "PLAN_WATCH": "0"}
	run := func(args ...string) outcome {
		return invoke(Runner{Getenv: func(k string) string { return env[k] }}, args...)
	}
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.txt", "alpha\n")
	if o := run("-C", dir, "init"); o.code != ExitOK {
		t.Fatalf("%v", o)
	}
	if o := run("-C", dir, "checkpoint", "create"); o.code != ExitOK {
		t.Fatalf("%v", o)
	}
	id := filepath.Base(stateOf(t, dir).Home())
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if o := run("clone", "--from", "ffffffffffff", filepath.Join(base, "x")); o.code != ExitNotFound {
		t.Fatalf("clone --from an unknown workspace: %v", o)
	}
	full := filepath.Join(base, "full")
	writeFile(t, full, "mine.txt", "keep me\n")
	if o := run("clone", "--from", id, full); o.code == ExitOK || readFile(t, full, "mine.txt") != "keep me\n" {
		t.Fatalf("clone --from into a directory that is not empty: %v", o)
	}
	back := filepath.Join(base, "back")
	if o := run("clone", "--from", id, "--checkpoint", "nosuchcheckpoint", back); o.code != ExitNotFound || !strings.Contains(o.stderr, "plan rollback --to-checkpoint") {
		t.Fatalf("clone --from at a checkpoint it does not hold: %v", o)
	}
	if o := run("-C", back, "rollback", "--to-checkpoint", "@", "--yes"); o.code != ExitOK || readFile(t, back, "a.txt") != "alpha\n" {
		t.Fatalf("finishing the clone: %v", o)
	}
	if err := os.RemoveAll(back); err != nil {
		t.Fatal(err)
	}
	if o := run("--yes", "workspaces", "retire", id); o.code != ExitOK || !strings.Contains(o.stdout, "Deleted the history of workspace "+id) {
		t.Fatalf("retire: %v", o)
	}
	if o := run("workspaces", "--limit", "-1"); o.code != ExitInvalid {
		t.Fatalf("workspaces --limit -1: %v", o)
	}
	plain := filepath.Join(base, "plain")
	if err := os.Mkdir(plain, 0o750); err != nil {
		t.Fatal(err)
	}
	if o := run("-C", plain, "store", "move-out"); o.code != ExitNotFound {
		t.Fatalf("move-out in a directory that is no workspace: %v", o)
	}
	env["PLAN_DATA_DIR"] = "relative"
	if o := run("workspaces"); o.code != ExitInvalid {
		t.Fatalf("workspaces with a relative PLAN_DATA_DIR: %v", o)
	}
}
