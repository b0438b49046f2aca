package hostile

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// Out of the damage's reach: whatever a process in the workspace deletes (.plan/, the whole
// workspace, or moves it away), no checkpoint is lost and one documented command brings the
// tree back byte-exact. Each deletion is made by hand between commands, by a plan decision, and
// by an agent's tool call through the hooks.

// dataEnv is an environment whose data directory is the test's own.
func dataEnv(t *testing.T) []string {
	return []string{"PLAN_DATA_DIR=" + filepath.Join(t.TempDir(), "data")}
}

// outsideSkip is what a tree comparison leaves out: plan's own .plan/ and git's .git/.
var outsideSkip = map[string]bool{".plan": true, ".git": true}

// project makes a workspace with a few files, a nested directory, a symlink and an executable,
// checkpointed; it returns the workspace, the checkpoint and the tree it holds.
func project(t *testing.T) (*workspace, string, []tree.Entry) {
	t.Helper()
	w := newWorkspace(t, dataEnv(t))
	w.write("src/main.go", "package main\n")
	w.write("src/lib/util.go", "package lib\n")
	w.write("README.md", "# project\n")
	w.write("build/out.bin", "\x00\x01\x02 built\n")
	if err := os.Chmod(w.path("src/main.go"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src/main.go", w.path("main")); err != nil {
		t.Fatal(err)
	}
	cp := w.checkpoint("before the damage")
	want, err := treetest.Read(w.dir, outsideSkip)
	if err != nil {
		t.Fatal(err)
	}
	return w, cp, want
}

// workspaceID is the workspace's ID, from `plan init --json` (idempotent).
func (w *workspace) workspaceID() string {
	w.t.Helper()
	var v struct {
		WorkspaceID string `json:"workspace_id"`
		HistoryDir  string `json:"history_dir"`
		Outside     bool   `json:"outside"`
	}
	w.mustJSON(&v, "init")
	if v.WorkspaceID == "" || !v.Outside {
		w.t.Fatalf("init --json: %+v, want a workspace whose history is outside it", v)
	}
	return v.WorkspaceID
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// verifyClean requires `plan verify --read-data` to pass in dir.
func verifyClean(t *testing.T, dir string, env []string) {
	t.Helper()
	if r := runPlan(t, dir, env, "verify", "--read-data"); r.code != 0 {
		t.Fatalf("verify after the damage: %s", r)
	}
}

// Deleting .plan/ (git clean -fdx, git clean -fdX, rm -rf .plan) keeps the workspace: every
// command says which workspace the directory was, `plan init` re-attaches its history (the same
// ID), and a rollback gives the tree back exactly.
func TestHostileDeletedStateDirIsReattached(t *testing.T) {
	for _, damage := range []struct {
		name string
		do   func(t *testing.T, w *workspace)
	}{
		{"git clean -fdx", func(t *testing.T, w *workspace) {
			git(t, w.dir, "init", "-q")
			git(t, w.dir, "clean", "-fdxq")
		}},
		{"git clean -fdX", func(t *testing.T, w *workspace) {
			git(t, w.dir, "init", "-q")
			w.write(".gitignore", "build/\n")
			git(t, w.dir, "clean", "-fdXq")
			if err := os.Remove(w.path(".gitignore")); err != nil {
				t.Fatal(err)
			}
		}},
		{"rm -rf .plan", func(t *testing.T, w *workspace) {
			if err := os.RemoveAll(w.path(".plan")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(damage.name, func(t *testing.T) {
			w, cp, want := project(t)
			id := w.workspaceID()
			damage.do(t, w)
			if _, err := os.Stat(w.path(".plan")); !os.IsNotExist(err) {
				t.Fatalf("%s left .plan/: %v", damage.name, err)
			}
			r := w.expect(4, "not_found", "status")
			if !strings.Contains(r.stderr, id) || !strings.Contains(r.stderr, "plan init") {
				t.Fatalf("status in a directory that lost its .plan/ does not say which workspace it was: %s", r)
			}
			var v struct {
				WorkspaceID string `json:"workspace_id"`
				Reattached  bool   `json:"reattached"`
			}
			w.mustJSON(&v, "init")
			if v.WorkspaceID != id || !v.Reattached {
				t.Fatalf("init after %s: %+v, want workspace %s re-attached", damage.name, v, id)
			}
			w.must("--yes", "rollback", "--to-checkpoint", cp)
			treetest.RequireSame(t, w.dir, outsideSkip, want, "the tree after re-attaching and rolling back")
			verifyClean(t, w.dir, w.env)
		})
	}
}

// `plan init --new` in a directory that lost its .plan/ starts an unrelated history; the old one
// stays listed.
func TestHostileInitNewStartsAnUnrelatedHistory(t *testing.T) {
	w, _, _ := project(t)
	id := w.workspaceID()
	if err := os.RemoveAll(w.path(".plan")); err != nil {
		t.Fatal(err)
	}
	var v struct {
		WorkspaceID string `json:"workspace_id"`
		Created     bool   `json:"created"`
	}
	w.mustJSON(&v, "init", "--new")
	if v.WorkspaceID == id || !v.Created {
		t.Fatalf("init --new: %+v, want a new workspace (not %s)", v, id)
	}
	listed := localWorkspaces(t, w.dir, w.env)
	if len(listed) != 2 || listed[id].Directory != "replaced" || listed[v.WorkspaceID].Directory != "present" {
		t.Fatalf("plan workspaces after init --new: %+v", listed)
	}
}

type listedWorkspace struct {
	Root        string `json:"root"`
	Directory   string `json:"directory"`
	Checkpoints *int   `json:"checkpoints"`
	Bytes       int64  `json:"bytes"`
}

func localWorkspaces(t *testing.T, dir string, env []string) map[string]listedWorkspace {
	t.Helper()
	r := runPlan(t, dir, env, "--json", "workspaces")
	if r.code != 0 {
		t.Fatalf("%s", r)
	}
	var list []struct {
		ID string `json:"workspace_id"`
		listedWorkspace
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("workspaces --json: %v\n%s", err, r.stdout)
	}
	out := map[string]listedWorkspace{}
	for _, l := range list {
		out[l.ID] = l.listedWorkspace
	}
	return out
}

// `rm -rf` of the whole workspace: `plan workspaces` lists it as gone, with its checkpoints, and
// `plan clone --from ID DIR` brings it back whole; a new project made later at the same path is
// a new workspace, never the deleted one.
func TestHostileDeletedWorkspaceIsBroughtBack(t *testing.T) {
	w, cp, want := project(t)
	id := w.workspaceID()
	if err := os.RemoveAll(w.dir); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	listed := localWorkspaces(t, elsewhere, w.env)
	if got := listed[id]; got.Directory != "gone" || got.Checkpoints == nil || *got.Checkpoints != 1 || got.Bytes == 0 {
		t.Fatalf("plan workspaces after rm -rf of the workspace: %+v", listed)
	}
	// A new project at the same path is not the deleted workspace.
	if err := os.Mkdir(w.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := w.expect(4, "not_found", "status")
	if strings.Contains(r.stderr, id) {
		t.Fatalf("a new directory at the deleted workspace's path was taken for it: %s", r)
	}
	r = w.run("--json", "init")
	if r.code != 0 || strings.Contains(r.stdout, id) || !strings.Contains(r.stderr, id) {
		t.Fatalf("init of a new project at the deleted workspace's path: want a new workspace and a notice naming %s: %s", id, r)
	}
	back := filepath.Join(t.TempDir(), "back")
	if r := runPlan(t, elsewhere, w.env, "clone", "--from", id[:len(id)-2], back); r.code != 0 {
		t.Fatalf("%s", r)
	}
	treetest.RequireSame(t, back, outsideSkip, want, "the workspace brought back by clone --from")
	verifyClean(t, back, w.env)
	if r := runPlan(t, back, w.env, "--json", "checkpoint", "show", cp); r.code != 0 {
		t.Fatalf("the brought-back workspace lost checkpoint %s: %s", cp, r)
	}
	// Its history is whole, and deleting a present workspace's history is refused.
	if r := runPlan(t, elsewhere, w.env, "--yes", "workspaces", "retire", id); r.code != 5 {
		t.Fatalf("retire of a workspace in use: %s", r)
	}
}

// A moved workspace is found at its new path (and the registry follows it); a copy (cp -a) is
// told apart and refused until it is made a workspace of its own.
func TestHostileMovedAndCopiedWorkspaces(t *testing.T) {
	w, cp, want := project(t)
	id := w.workspaceID()
	moved := filepath.Join(filepath.Dir(w.dir), "moved")
	if err := os.Rename(w.dir, moved); err != nil {
		t.Fatal(err)
	}
	w.dir = moved
	w.write("src/main.go", "changed after the move\n")
	w.must("--yes", "rollback", "--to-checkpoint", cp)
	treetest.RequireSame(t, w.dir, outsideSkip, want, "the moved workspace rolled back")
	if got := localWorkspaces(t, w.dir, w.env)[id]; got.Root != moved || got.Directory != "present" {
		t.Fatalf("the registry after the move: %+v", got)
	}

	cpy := filepath.Join(filepath.Dir(w.dir), "copy")
	if out, err := exec.Command("cp", "-a", w.dir, cpy).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
	c := &workspace{t: t, dir: cpy, env: w.env}
	r := c.expect(5, "conflict", "status")
	if !strings.Contains(r.stderr, "copy") {
		t.Fatalf("a copied workspace: %s", r)
	}
	if err := os.RemoveAll(c.path(".plan")); err != nil {
		t.Fatal(err)
	}
	var v struct {
		WorkspaceID string `json:"workspace_id"`
	}
	c.mustJSON(&v, "init")
	if v.WorkspaceID == id {
		t.Fatal("the copy's init took the original's history")
	}
	treetest.RequireSame(t, w.dir, outsideSkip, want, "the original after its copy was made a workspace")
	verifyClean(t, w.dir, w.env)
}

// A plan decision that deletes .plan/ is on record with its pre_decision checkpoint: the run goes
// on, .plan/ is made again, and a rollback to before the decision gives the tree back exactly.
func TestHostileDecisionThatDeletesTheStateDir(t *testing.T) {
	for _, cmd := range []string{"rm -rf .plan", "git init -q && git clean -fdxq"} {
		t.Run(cmd, func(t *testing.T) {
			if strings.HasPrefix(cmd, "git") {
				if _, err := exec.LookPath("git"); err != nil {
					t.Skip("no git")
				}
			}
			w, _, want := project(t)
			plan := filepath.Join(t.TempDir(), "plan.yaml")
			body := "name: p\ndecisions:\n  - id: damage\n    run: echo said-before && " + cmd + "\n  - id: after\n    run: echo after > after.txt\n"
			if err := os.WriteFile(plan, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			r := w.run("run", plan)
			if r.code != 0 || !strings.Contains(r.stderr, "made again") {
				t.Fatalf("a run whose decision deletes .plan/: %s", r)
			}
			if _, err := os.Stat(w.path(".plan/config.yaml")); err != nil {
				t.Fatalf(".plan/ not made again after the run: %v", err)
			}
			// The decision's output is kept with the history, not in the .plan/ it deleted.
			if out := w.must("log", "damage"); !strings.Contains(out, "said-before") {
				t.Fatalf("plan log of the decision that deleted .plan/: %q", out)
			}
			w.must("--yes", "rollback", "--to-checkpoint", "damage^")
			treetest.RequireSame(t, w.dir, map[string]bool{".plan": true, ".git": true}, want, "rolled back to before the decision")
			verifyClean(t, w.dir, w.env)
		})
	}
}

// A decision that deletes the whole workspace: the run fails, and the workspace comes back with
// `plan clone --from ID DIR --checkpoint DECISION^`.
func TestHostileDecisionThatDeletesTheWorkspace(t *testing.T) {
	w, _, want := project(t)
	id := w.workspaceID()
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	body := "name: p\ndecisions:\n  - id: wipe\n    run: rm -rf \"$PWD\"\n"
	if err := os.WriteFile(plan, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r := w.run("run", plan)
	if _, err := os.Stat(w.dir); !os.IsNotExist(err) {
		t.Fatalf("the decision did not delete the workspace (%v): %s", err, r)
	}
	back := filepath.Join(t.TempDir(), "back")
	elsewhere := t.TempDir()
	if r := runPlan(t, elsewhere, w.env, "clone", "--from", id, "--checkpoint", "wipe^", back); r.code != 0 {
		t.Fatalf("%s", r)
	}
	treetest.RequireSame(t, back, outsideSkip, want, "the workspace brought back to before the decision")
	verifyClean(t, back, w.env)
}

// An agent's tool call that deletes .plan/ (through the hooks, as Claude Code runs them): the
// after-call hook re-attaches the workspace and records the call, `plan sessions` shows it, and a
// rewind to before it gives the tree back exactly.
func TestHostileAgentCallThatDeletesTheStateDir(t *testing.T) {
	for _, damage := range []string{"rm -rf .plan", "git clean -fdx", "git clean -fdX", "rm -rf the workspace", "mv the workspace", "cp -a the workspace"} {
		t.Run(damage, func(t *testing.T) {
			w, _, want := project(t)
			id := w.workspaceID()
			hook := func(event, call string) result {
				payload, _ := json.Marshal(map[string]any{"session_id": "S1", "cwd": w.dir, "hook_event_name": event,
					"tool_name": "Bash", "tool_use_id": call, "tool_input": map[string]string{"command": damage}})
				cmd := command(t, "", w.env, string(payload), "hook", "claude", event)
				cmd.Dir = filepath.Dir(w.dir)
				out, err := cmd.Output()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				}
				return result{args: []string{"hook", event}, stdout: string(out), code: code}
			}
			if r := hook("PreToolUse", "t1"); r.code != 0 {
				t.Fatalf("%s", r)
			}
			switch damage {
			case "rm -rf .plan":
				if err := os.RemoveAll(w.path(".plan")); err != nil {
					t.Fatal(err)
				}
			case "git clean -fdx":
				git(t, w.dir, "init", "-q")
				git(t, w.dir, "clean", "-fdxq")
			case "git clean -fdX":
				git(t, w.dir, "init", "-q")
				git(t, w.dir, "clean", "-fdXq")
			case "mv the workspace":
				if err := os.Rename(w.dir, w.dir+"-moved"); err != nil {
					t.Fatal(err)
				}
			case "cp -a the workspace":
				if out, err := exec.Command("cp", "-a", w.dir, w.dir+"-copy").CombinedOutput(); err != nil {
					t.Fatalf("cp -a: %v\n%s", err, out)
				}
				c := &workspace{t: t, dir: w.dir + "-copy", env: w.env}
				c.expect(5, "conflict", "status")
			default:
				if err := os.RemoveAll(w.dir); err != nil {
					t.Fatal(err)
				}
			}
			r := hook("PostToolUse", "t1")
			if r.code != 0 {
				t.Fatalf("%s", r)
			}
			dir := w.dir
			if damage == "mv the workspace" {
				dir = w.dir + "-moved"
			} else if damage == "rm -rf the workspace" {
				dir = filepath.Join(t.TempDir(), "back")
				if r := runPlan(t, t.TempDir(), w.env, "clone", "--from", id, dir); r.code != 0 {
					t.Fatalf("%s", r)
				}
			} else if _, err := os.Stat(filepath.Join(dir, ".plan", "config.yaml")); err != nil {
				t.Fatalf("the after-call hook did not re-attach the workspace: %v (%s)", err, r)
			}
			s := runPlan(t, dir, w.env, "--json", "sessions")
			if s.code != 0 || !strings.Contains(s.stdout, "t1") {
				t.Fatalf("the call is not on record after the deletion: %s", s)
			}
			if r := runPlan(t, dir, w.env, "--yes", "rewind", "--session", "S1", "--tool-call", "t1"); r.code != 0 {
				t.Fatalf("%s", r)
			}
			treetest.RequireSame(t, dir, outsideSkip, want, "rewound to before the call")
			verifyClean(t, dir, w.env)
		})
	}
}

// A decision that moves the workspace away, or copies it: the moved workspace is found at its new
// path with its history (rolled back there exactly), and the copy is told apart and refused.
func TestHostileDecisionThatMovesOrCopiesTheWorkspace(t *testing.T) {
	t.Run("mv", func(t *testing.T) {
		w, _, want := project(t)
		moved := w.dir + "-moved"
		plan := filepath.Join(t.TempDir(), "plan.yaml")
		body := "name: p\ndecisions:\n  - id: move\n    run: mv \"$PWD\" \"$PWD-moved\"\n"
		if err := os.WriteFile(plan, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		r := w.run("run", plan)
		if _, err := os.Stat(moved); err != nil {
			t.Fatalf("the decision did not move the workspace (%v): %s", err, r)
		}
		m := &workspace{t: t, dir: moved, env: w.env}
		m.must("--yes", "rollback", "--to-checkpoint", "move^")
		treetest.RequireSame(t, m.dir, outsideSkip, want, "the moved workspace rolled back to before the decision")
		verifyClean(t, m.dir, m.env)
	})
	t.Run("cp -a", func(t *testing.T) {
		w, _, want := project(t)
		plan := filepath.Join(t.TempDir(), "plan.yaml")
		body := "name: p\ndecisions:\n  - id: copy\n    run: cp -a \"$PWD\" \"$PWD-copy\" && echo changed > README.md\n"
		if err := os.WriteFile(plan, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		w.must("run", plan)
		c := &workspace{t: t, dir: w.dir + "-copy", env: w.env}
		c.expect(5, "conflict", "status")
		w.must("--yes", "rollback", "--to-checkpoint", "copy^")
		treetest.RequireSame(t, w.dir, outsideSkip, want, "the original rolled back to before the decision")
		verifyClean(t, w.dir, w.env)
	})
}
