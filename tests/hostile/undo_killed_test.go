package hostile

import (
	"os"
	"testing"
)

// An undo or a redo killed after its rollback changed the workspace, before anything recorded it:
// the next command finishes it, and the operation log says so. Were the log entry written after
// the journaled rollback, the kill would leave the workspace undone but the log not, and the next
// `plan undo` would undo the same operation again instead of the one before it.
func TestUndoAndRedoKilledBeforeTheyAreLogged(t *testing.T) {
	for _, point := range []string{"rollback.applied", "rollback.recorded"} {
		t.Run(point, func(t *testing.T) {
			w := newWorkspace(t, nil)
			w.write("a.txt", "base\n")
			w.checkpoint("base")
			w.must("exec", "--id", "one", "--", "sh", "-c", "echo one > one.txt")
			w.must("exec", "--id", "two", "--", "sh", "-c", "echo two > two.txt")

			res := runPlan(t, w.dir, append(w.env, "PLAN_FAILPOINT="+point), "--yes", "undo")
			if !res.killed {
				t.Fatalf("undo was not killed at %s: %s", point, res)
			}
			w.must("recover")
			ops := withoutRecover(w.history())
			if ops[0].Kind != "undo" || len(ops[0].Args) < 2 || ops[0].Args[len(ops[0].Args)-1] != ops[1].ID || ops[1].UndoneBy == nil || *ops[1].UndoneBy != ops[0].ID {
				t.Fatalf("after the killed undo and recovery the log does not say two was undone: %+v", ops[:2])
			}
			if w.exists("two.txt") || !w.exists("one.txt") {
				t.Fatal("the killed undo did not take two back")
			}

			res = runPlan(t, w.dir, append(w.env, "PLAN_FAILPOINT="+point), "--yes", "redo")
			if !res.killed {
				t.Fatalf("redo was not killed at %s: %s", point, res)
			}
			w.must("recover")
			ops = withoutRecover(w.history())
			if ops[0].Kind != "redo" || ops[1].UndoneBy == nil || *ops[1].UndoneBy != ops[0].ID {
				t.Fatalf("after the killed redo and recovery the log does not say the undo was redone: %+v", ops[:2])
			}
			if !w.exists("two.txt") {
				t.Fatal("the killed redo did not bring two back")
			}

			// The next undo undoes two again (the redo made it stand), and nothing twice.
			w.must("--yes", "undo")
			if w.exists("two.txt") || !w.exists("one.txt") {
				t.Fatal("the undo after the recovered redo did not take two back")
			}
		})
	}
}

// exists says whether a workspace-relative path exists.
func (w *workspace) exists(rel string) bool {
	_, err := os.Lstat(w.path(rel))
	return err == nil
}

// withoutRecover leaves out the entries of `plan recover`, which logs itself.
func withoutRecover(ops []logEntry) []logEntry {
	var out []logEntry
	for _, op := range ops {
		if op.Kind != "recover" {
			out = append(out, op)
		}
	}
	return out
}
