package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// legacyWorkspace is a workspace whose history is in .plan/ (as every workspace made before the
// data directory), with three checkpoints of different trees.
func legacyWorkspace(t *testing.T) (*workspace, []string, [][]tree.Entry) {
	t.Helper()
	w := newWorkspace(t, dataEnv(t), "--store", "workspace")
	var ids []string
	var trees [][]tree.Entry
	for i := range 3 {
		w.write(fmt.Sprintf("f%d.txt", i), strings.Repeat(fmt.Sprintf("version %d\n", i), 1000))
		w.write("shared.txt", fmt.Sprintf("shared at %d\n", i))
		ids = append(ids, w.checkpoint(fmt.Sprint("v", i)))
		tr, err := treetest.Read(w.dir, map[string]bool{".plan": true})
		if err != nil {
			t.Fatal(err)
		}
		trees = append(trees, tr)
	}
	return w, ids, trees
}

// stateDirOf is the state_dir .plan/config.yaml names ("" for a history in .plan/).
func stateDirOf(t *testing.T, w *workspace) string {
	t.Helper()
	b, err := os.ReadFile(w.path(".plan/config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "state_dir: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// requireWhole checks that the workspace lists its three checkpoints and rolls back to each
// exactly, and that verify reads every byte clean.
func requireWhole(t *testing.T, w *workspace, ids []string, trees [][]tree.Entry, when string) {
	t.Helper()
	var list []struct {
		ID string `json:"id"`
	}
	w.mustJSON(&list, "checkpoint", "list")
	listed := map[string]bool{}
	for _, c := range list {
		listed[c.ID] = true
	}
	for _, id := range ids {
		if !listed[id] {
			t.Fatalf("%s: checkpoint %s is not listed any more", when, id)
		}
	}
	for i, id := range ids {
		w.must("--yes", "rollback", "--to-checkpoint", id)
		treetest.RequireSame(t, w.dir, map[string]bool{".plan": true}, trees[i], fmt.Sprintf("%s: rolled back to %s", when, id))
	}
	verifyClean(t, w.dir, w.env)
}

// `plan store move-out` killed (SIGKILL) at each of its steps leaves the workspace whole, on its
// old history or on the new one, never a mix; run again, it finishes, and the old copy is gone.
func TestHostileMoveOutKilledAtEveryStep(t *testing.T) {
	mixed := 0
	for _, fp := range []string{"move.copied", "move.verified", "move.committed", "move.removing"} {
		t.Run(fp, func(t *testing.T) {
			w, ids, trees := legacyWorkspace(t)
			r := runPlan(t, w.dir, append(w.env, "PLAN_FAILPOINT="+fp), "store", "move-out")
			if !r.killed {
				t.Fatalf("the failpoint %s did not kill the move: %s", fp, r)
			}
			state := stateDirOf(t, w)
			_, dbInside := os.Stat(w.path(".plan/plan.db"))
			switch {
			case state == "" && dbInside == nil: // before the commit: the old history, whole
			case state != "": // after it: the new one
				if _, err := os.Stat(filepath.Join(state, "plan.db")); err != nil {
					mixed++
					t.Fatalf("committed to %s, which holds no database: %v", state, err)
				}
			default:
				mixed++
				t.Fatalf("killed at %s: no state_dir and no .plan/plan.db", fp)
			}
			requireWhole(t, w, ids, trees, "killed at "+fp)
			var res struct {
				To      string `json:"to"`
				Already bool   `json:"already"`
			}
			w.mustJSON(&res, "store", "move-out")
			if got := stateDirOf(t, w); got == "" || got != res.To {
				t.Fatalf("after the second move-out: state_dir %q, moved to %q", got, res.To)
			}
			for _, old := range []string{"plan.db", "objects", "archive", "logs"} {
				if _, err := os.Stat(w.path(".plan/" + old)); !os.IsNotExist(err) {
					t.Errorf(".plan/%s still there after the move finished: %v", old, err)
				}
			}
			if _, err := os.Stat(filepath.Join(res.To, ".moving")); !os.IsNotExist(err) {
				t.Errorf("the move's marker stayed: %v", err)
			}
			requireWhole(t, w, ids, trees, "after the move")
		})
	}
	if mixed != 0 {
		t.Errorf("%d mixed states", mixed)
	}
}

// A move-out of a workspace whose history is already outside says so and changes nothing; one
// refused (an operation pending) moves nothing.
func TestHostileMoveOutRefusals(t *testing.T) {
	w := newWorkspace(t, dataEnv(t))
	var res struct {
		Already bool `json:"already"`
	}
	w.mustJSON(&res, "store", "move-out")
	if !res.Already {
		t.Fatalf("move-out of a workspace already outside: %+v", res)
	}
	l, ids, trees := legacyWorkspace(t)
	if err := os.WriteFile(l.path(".plan/journal.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := l.expect(5, "conflict", "store", "move-out")
	if !strings.Contains(r.stderr, "plan recover") || stateDirOf(t, l) != "" {
		t.Fatalf("move-out with an operation pending: %s", r)
	}
	if err := os.Remove(l.path(".plan/journal.json")); err != nil {
		t.Fatal(err)
	}
	requireWhole(t, l, ids, trees, "after a refused move")
}

// Re-attaching killed at each step: the next init re-attaches, the history whole.
func TestHostileReattachKilledAtEveryStep(t *testing.T) {
	for _, fp := range []string{"reattach.dirs", "reattach.config"} {
		t.Run(fp, func(t *testing.T) {
			w, cp, want := project(t)
			id := w.workspaceID()
			if err := os.RemoveAll(w.path(".plan")); err != nil {
				t.Fatal(err)
			}
			if r := runPlan(t, w.dir, append(w.env, "PLAN_FAILPOINT="+fp), "init"); !r.killed {
				t.Fatalf("the failpoint did not kill init: %s", r)
			}
			var v struct {
				WorkspaceID string `json:"workspace_id"`
			}
			w.mustJSON(&v, "init")
			if v.WorkspaceID != id {
				t.Fatalf("init after a re-attach killed at %s: workspace %s, want %s", fp, v.WorkspaceID, id)
			}
			w.must("--yes", "rollback", "--to-checkpoint", cp)
			treetest.RequireSame(t, w.dir, outsideSkip, want, "re-attached after a kill")
			verifyClean(t, w.dir, w.env)
		})
	}
}
