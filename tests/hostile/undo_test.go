package hostile

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/tests/testkit/treetest"
)

// Where undo, redo and resolve could lose work: every state they leave is one the user had, and
// whatever they replace is kept in a checkpoint first.

var skipState = map[string]bool{".plan": true}

type logEntry struct {
	ID             string   `json:"id"`
	Kind           string   `json:"kind"`
	Args           []string `json:"args"`
	Checkpoints    []string `json:"checkpoints"`
	UndoCheckpoint *string  `json:"undo_checkpoint"`
	UndoneBy       *string  `json:"undone_by"`
}

func (w *workspace) history() []logEntry {
	w.t.Helper()
	var ops []logEntry
	w.mustJSON(&ops, "history")
	return ops
}

// undo --to an entry whose later operations lost their safety checkpoints (pruned, deleted by
// force) restores exactly the state right after that entry, as long as the first later operation's
// checkpoint is left; uncommitted work it replaces is in its own safety checkpoint.
func TestUndoToAcrossPrunedSafetyCheckpoints(t *testing.T) {
	w := newWorkspace(t, nil)
	for i := range 50 {
		w.write(fmt.Sprintf("src/f%02d.txt", i), strings.Repeat("base ", i+1))
	}
	base := w.checkpoint("base")
	w.must("exec", "--id", "one", "--", "sh", "-c", "echo one > one.txt && rm src/f01.txt")
	afterOne, err := treetest.Read(w.dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	one := w.history()[0]
	if one.Kind != "decision" || one.Args[0] != "one" {
		t.Fatalf("newest entry: %+v", one)
	}
	w.must("exec", "--id", "two", "--", "sh", "-c", "echo two > two.txt && echo changed > src/f02.txt")
	w.write("src/f03.txt", "the user's edit")
	w.must("--yes", "rollback", "--to-checkpoint", base)
	w.must("exec", "--id", "three", "--", "sh", "-c", "mkdir -p gen && echo three > gen/three.txt")
	// A prune would take two's pre_decision checkpoint (two was reverted by the rollback) and says
	// so; instead, delete by force every later safety checkpoint but two's.
	var pv struct {
		UndoLost []struct {
			ID string `json:"id"`
		} `json:"undo_lost"`
	}
	w.mustJSON(&pv, "checkpoint", "prune", "--keep", "0", "--dry-run")
	if len(pv.UndoLost) == 0 {
		t.Fatalf("a prune that takes undo's safety checkpoints does not say so: %+v", pv)
	}
	var later []logEntry
	for _, op := range w.history() {
		if op.ID == one.ID {
			break
		}
		if op.UndoCheckpoint != nil {
			later = append(later, op)
		}
	}
	if len(later) != 3 {
		t.Fatalf("operations after one: %+v", later)
	}
	for _, op := range later[:2] {
		if r := w.run("checkpoint", "delete", *op.UndoCheckpoint, "--yes", "--force"); r.code != 0 {
			t.Fatalf("%s", r)
		}
	}
	w.write("scratch.txt", "uncommitted work")
	withScratch, err := treetest.Read(w.dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Operation struct {
			Checkpoints []string `json:"checkpoints"`
		} `json:"operation"`
		All []logEntry `json:"undone_all"`
	}
	w.mustJSON(&res, "--yes", "undo", "--to", one.ID)
	treetest.RequireSame(t, w.dir, skipState, afterOne, "undo --to one")
	if len(res.All) != 3 {
		t.Fatalf("undone: %+v", res.All)
	}
	w.must("--yes", "rollback", "--to-checkpoint", res.Operation.Checkpoints[1])
	treetest.RequireSame(t, w.dir, skipState, withScratch, "rolled back to the undo's safety checkpoint")
}

// undo --to whose first later operation's safety checkpoint is gone refuses: no state right after
// the entry can be had, and the workspace stays byte for byte.
func TestUndoToWithoutItsCheckpointChangesNothing(t *testing.T) {
	w := newWorkspace(t, nil)
	w.write("a.txt", "a")
	w.must("exec", "--id", "one", "--", "sh", "-c", "echo one > one.txt")
	one := w.history()[0]
	w.must("exec", "--id", "two", "--", "sh", "-c", "echo two > two.txt")
	two := w.history()[0]
	w.must("exec", "--id", "three", "--", "sh", "-c", "rm one.txt")
	w.must("checkpoint", "delete", *two.UndoCheckpoint, "--yes", "--force")
	before, err := treetest.Read(w.dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	r := w.expect(5, "conflict", "--yes", "undo", "--to", one.ID)
	if !strings.Contains(r.stderr, "was deleted") {
		t.Fatalf("%s", r)
	}
	treetest.RequireSame(t, w.dir, skipState, before, "a refused undo --to")
	for _, op := range w.history() {
		if op.UndoneBy != nil {
			t.Fatalf("a refused undo marked %+v undone", op)
		}
	}
}

// Redo after a new operation is refused and the new work stays; redo over uncommitted edits keeps
// them in its safety checkpoint.
func TestRedoNeverThrowsWorkAway(t *testing.T) {
	w := newWorkspace(t, nil)
	w.write("a.txt", "a")
	w.must("exec", "--id", "one", "--", "sh", "-c", "echo one > one.txt")
	w.must("--yes", "undo")
	w.must("exec", "--id", "two", "--", "sh", "-c", "echo two > two.txt")
	w.write("notes.txt", "typed after two")
	before, err := treetest.Read(w.dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	w.expect(5, "conflict", "--yes", "redo")
	treetest.RequireSame(t, w.dir, skipState, before, "a refused redo")

	// Undo two, edit, redo: the edit is in the redo's safety checkpoint.
	w.must("--yes", "undo")
	w.write("notes.txt", "typed between undo and redo")
	edited, err := treetest.Read(w.dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Operation struct {
			Checkpoints []string `json:"checkpoints"`
		} `json:"operation"`
	}
	out := w.must("--json", "--yes", "redo")
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Operation.Checkpoints) != 2 {
		t.Fatalf("redo: %v\n%s", err, out)
	}
	if w.read("two.txt") != "two\n" {
		t.Fatal("redo did not bring two back")
	}
	w.must("--yes", "rollback", "--to-checkpoint", res.Operation.Checkpoints[1])
	treetest.RequireSame(t, w.dir, skipState, edited, "rolled back to the redo's safety checkpoint")
}

// resolve never writes the workspace: refused with markers left (nothing marked), and --force marks
// the file as it is, markers and all.
func TestResolveWithMarkersLeftWritesNothing(t *testing.T) {
	w := newWorkspace(t, nil)
	w.write("cfg.txt", "a\nb\nc\n")
	w.must("exec", "--id", "two", "--", "sh", "-c", `printf 'A\nb\nc\n' > cfg.txt`)
	w.must("exec", "--id", "three", "--", "sh", "-c", `printf 'AA\nb\nc\n' > cfg.txt`)
	w.must("--yes", "revert", "--decision", "two", "--reason", "r", "--conflicts", "markers")
	marked, err := treetest.Read(w.dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	w.expect(5, "conflict", "resolve", "cfg.txt")
	treetest.RequireSame(t, w.dir, skipState, marked, "a refused resolve")
	var open []struct {
		Path string `json:"path"`
	}
	w.mustJSON(&open, "conflicts")
	if len(open) != 1 {
		t.Fatalf("conflicts after a refused resolve: %+v", open)
	}
	// A marker line deep in a long file is found too.
	w.write("cfg.txt", strings.Repeat("x", 200_000)+"\n"+w.read("cfg.txt"))
	w.expect(5, "conflict", "resolve", "cfg.txt")
	long, err := treetest.Read(w.dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	w.must("resolve", "--force", "cfg.txt")
	treetest.RequireSame(t, w.dir, skipState, long, "resolve --force")
	w.mustJSON(&open, "conflicts")
	if len(open) != 0 {
		t.Fatalf("conflicts after resolve --force: %+v", open)
	}
	// A checkpoint --validate now passes: nothing is pending.
	w.must("checkpoint", "create", "--validate")
}

// plan undo and plan redo killed at any moment: once recovered (the next command finishes or takes
// back the journaled rollback), the workspace is the state before or the state after, never a mix;
// a second undo (or redo) then gets to the state after, and nothing the user had is lost.
func TestUndoAndRedoKilledAtAnyMoment(t *testing.T) {
	for trial := range trials(3) {
		w := newWorkspace(t, nil)
		for i := range 1200 {
			w.write(fmt.Sprintf("d%02d/f%04d", i%20, i), strings.Repeat(fmt.Sprint(i), 150))
		}
		w.checkpoint("base")
		w.must("exec", "--id", "rewrite", "--", "sh", "-c", "for f in d0*/*; do echo rewritten >> $f; done; rm -r d19")
		after, err := treetest.Read(w.dir, skipState)
		if err != nil {
			t.Fatal(err)
		}
		w.must("--yes", "undo")
		before, err := treetest.Read(w.dir, skipState)
		if err != nil {
			t.Fatal(err)
		}
		w.must("--yes", "redo")
		treetest.RequireSame(t, w.dir, skipState, after, "redo")

		// Undo killed, recovered: before or after.
		p := startPlan(t, w.dir, nil, "--yes", "undo")
		time.Sleep(time.Duration(30+trial*120) * time.Millisecond)
		p.kill(t)
		w.must("recover")
		got, err := treetest.Read(w.dir, skipState)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case len(treetest.Diff(before, got)) == 0:
		case len(treetest.Diff(after, got)) == 0:
			w.must("--yes", "undo") // the killed one never got that far: do it now
		default:
			t.Fatalf("trial %d: a killed undo left neither state:\n  %s", trial, treetest.Summary(treetest.Diff(before, got)))
		}
		treetest.RequireSame(t, w.dir, skipState, before, "undo after a killed one")

		// Redo killed, recovered: before or after; a redo then gets there (or has nothing to do).
		p = startPlan(t, w.dir, nil, "--yes", "redo")
		time.Sleep(time.Duration(30+trial*120) * time.Millisecond)
		p.kill(t)
		w.must("recover")
		if got, err = treetest.Read(w.dir, skipState); err != nil {
			t.Fatal(err)
		}
		switch {
		case len(treetest.Diff(after, got)) == 0:
		case len(treetest.Diff(before, got)) == 0:
			// The killed redo never changed the workspace (or recovery took it back): the undo
			// above is logged whatever moment it was killed at (its log entry commits with its
			// rollback), so a redo gets there now.
			if r := w.run("--yes", "redo"); r.code != 0 {
				t.Fatalf("trial %d: redo after a killed one: %s", trial, r)
			}
			treetest.RequireSame(t, w.dir, skipState, after, "redo after a killed one")
		default:
			t.Fatalf("trial %d: a killed redo left neither state:\n  %s", trial, treetest.Summary(treetest.Diff(after, got)))
		}
	}
}
