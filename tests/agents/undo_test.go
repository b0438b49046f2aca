package agents

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// tree is every file, directory and link of a project outside .plan/ and the agents' own
// settings directories, with its mode and the hash of its content: two equal trees hold the same
// bytes.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		switch rel {
		case ".plan", ".claude", ".codex", ".gemini":
			return filepath.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			v += " " + hex.EncodeToString(sum[:])
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			v += " -> " + target
		}
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree fails the test with the differences between two trees.
func sameTree(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	var diffs []string
	for k, v := range want {
		if got[k] != v {
			diffs = append(diffs, k+": "+got[k]+" want "+v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, k+": "+v+" not wanted")
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		if len(diffs) > 10 {
			diffs = append(diffs[:10], "…")
		}
		t.Fatalf("%s: the trees differ:\n%s", what, strings.Join(diffs, "\n"))
	}
}

// applyOps makes the project as the scripted session leaves it after the ops whose numbers (1 to
// 4: write, change 100 files, edit, delete build/) are in ops, computed here without any agent: the
// trees plan must give back.
func applyOps(t *testing.T, ops ...int) map[string]string {
	t.Helper()
	dir := project(t)
	for _, op := range ops {
		var err error
		switch op {
		case 1:
			err = os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("written by the agent\n"), 0o644)
		case 2:
			for i := 1; i <= 100 && err == nil; i++ {
				p := filepath.Join(dir, "data", fmt.Sprintf("f%d.txt", i))
				err = os.WriteFile(p, []byte(fmt.Sprintf("file %d\nchanged %d\n", i, i)), 0o644)
			}
		case 3:
			err = os.WriteFile(filepath.Join(dir, "src", "main.txt"), []byte("first line\nnew line\nlast line\n"), 0o644)
		case 4:
			err = os.RemoveAll(filepath.Join(dir, "build"))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return tree(t, dir)
}

// sessionView is what the test reads of plan sessions --json.
type sessionView struct {
	Sessions []struct {
		Plan    string `json:"plan"`
		Agent   string `json:"agent"`
		Session string `json:"session"`
		Turns   []struct {
			Number    int `json:"number"`
			ToolCalls []struct {
				ID         string `json:"id"`
				Tool       string `json:"tool"`
				Status     string `json:"status"`
				Checkpoint string `json:"checkpoint"`
				Files      []struct {
					Path   string `json:"path"`
					Change string `json:"change"`
				} `json:"files"`
			} `json:"tool_calls"`
		} `json:"turns"`
	} `json:"sessions"`
}

// checkUndo is the part of each agent's test that runs plan itself, once the real agent ran the
// scripted session through plan's installed hooks (plan hook): plan sessions lists the session's
// one turn and its four mutating tool calls, each with the checkpoint taken before it; plan rewind
// to before each call gives back, byte for byte, the tree the session had then, and plan undo of
// that rewind the tree the agent left; a surgical plan revert of the middle call (the 100 files)
// undoes it alone, keeping the calls after it.
func checkUndo(t *testing.T, plan, dir string, env []string, agent string, wantIDs []string) {
	t.Helper()
	t.Cleanup(func() { // before the directory goes (cleanups run last first)
		stop := exec.Command(plan, "-C", dir, "watch", "stop") // #nosec G204 -- the plan under test
		stop.Env = env
		if out, err := stop.CombinedOutput(); err != nil {
			t.Errorf("plan watch stop: %v\n%s", err, out)
		}
	})
	final := tree(t, dir)
	sameTree(t, "after the session", final, applyOps(t, 1, 2, 3, 4))
	// The turn's start started plan watch, and the hooks took their snapshots through it.
	var st struct {
		Running   bool `json:"running"`
		Snapshots int  `json:"snapshots"`
	}
	if out := run(t, dir, env, plan, "--json", "watch", "status"); json.Unmarshal([]byte(out), &st) != nil || !st.Running || st.Snapshots < 2 {
		t.Fatalf("plan watch after the session (the prompt hook starts it, the tool calls' hooks ask it): %s", out)
	}
	out := run(t, dir, env, plan, "--json", "sessions")
	var v sessionView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("plan sessions --json: %v\n%s", err, out)
	}
	if len(v.Sessions) != 1 || v.Sessions[0].Agent != agent || len(v.Sessions[0].Turns) != 1 {
		t.Fatalf("plan sessions: want one %s session of one turn:\n%s", agent, out)
	}
	s := v.Sessions[0]
	calls := s.Turns[0].ToolCalls
	if len(calls) != 4 {
		t.Fatalf("plan sessions: %d tool calls, want the 4 mutating ones:\n%s", len(calls), out)
	}
	wantFiles := []int{1, 100, 1, 20}
	var ids []string
	for i, c := range calls {
		ids = append(ids, c.ID)
		if wantIDs != nil && c.ID != wantIDs[i] {
			t.Errorf("tool call %d: ID %s, want %s", i+1, c.ID, wantIDs[i])
		}
		if c.Checkpoint == "" || c.Status != "succeeded" {
			t.Errorf("tool call %s: checkpoint %q, status %q", c.ID, c.Checkpoint, c.Status)
		}
		if len(c.Files) != wantFiles[i] {
			t.Errorf("tool call %s (%s) changed %d files, want %d", c.ID, c.Tool, len(c.Files), wantFiles[i])
		}
	}
	if t.Failed() {
		t.Fatalf("plan sessions --json:\n%s", out)
	}
	// Before each call: rewind, compare, undo, compare.
	for i, id := range ids {
		run(t, dir, env, plan, "--yes", "rewind", "--session", s.Session, "--tool-call", id)
		before := []int{1, 2, 3, 4}[:i]
		sameTree(t, "rewound to before "+id, tree(t, dir), applyOps(t, before...))
		run(t, dir, env, plan, "--yes", "undo")
		sameTree(t, "the rewind to before "+id+" undone", tree(t, dir), final)
	}
	// The middle call reverted alone: the data files are back, the write, the edit and the
	// deletion after it stay.
	run(t, dir, env, plan, "--yes", "revert", "--plan", s.Plan, "--decision", ids[1], "--reason", "e2e")
	sameTree(t, "call "+ids[1]+" reverted", tree(t, dir), applyOps(t, 1, 3, 4))
}
