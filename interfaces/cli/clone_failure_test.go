package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// A clone that adopted its checkpoint but failed before materialising anything (here the safety
// checkpoint of the empty directory cannot be stored) takes back what it made: DIR is as it was
// found, new or empty, and takes the next attempt; the data directory keeps no history of it.
func TestCloneThatMaterialisedNothingLeavesDIRAsFound(t *testing.T) {
	data := ownDataDir(t)
	t.Setenv("PLAN_DATA_DIR", data)
	src := t.TempDir()
	store := filepath.Join(t.TempDir(), "store")
	ws := jsonField(t, mustPlan(t, src, "--json", "init", "--store", "file://"+store), "workspace_id")
	writeFile(t, src, "a.txt", "alpha\n")
	createCheckpoint(t, src)
	base := t.TempDir()
	empty := filepath.Join(base, "empty")
	if err := os.Mkdir(empty, 0o750); err != nil {
		t.Fatal(err)
	}
	testkit.Immutable(t, filepath.Join(store, "packs"))
	for _, dir := range []string{filepath.Join(base, "new"), empty} {
		o := invoke(Runner{}, "clone", "--store", "file://"+store, "--workspace", ws, dir)
		if o.code == ExitOK || !strings.Contains(o.stderr, "nothing was materialised: "+dir+" is as it was") {
			t.Fatalf("clone into %s: %v", dir, o)
		}
		if strings.Contains(o.stderr, "warning") {
			t.Errorf("the adopted checkpoint was not taken back: %s", o.stderr)
		}
	}
	if _, err := os.Lstat(filepath.Join(base, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory the clone made is still there: %v", err)
	}
	if entries, err := os.ReadDir(empty); err != nil || len(entries) != 0 {
		t.Errorf("the empty directory holds %v (%v)", entries, err)
	}
	if kept, err := os.ReadDir(filepath.Join(data, "workspaces")); err != nil || len(kept) != 1 || kept[0].Name() != ws {
		t.Errorf("the data directory keeps %v (%v), want only the source's history", kept, err)
	}
	testkit.Mutable(t, filepath.Join(store, "packs"))
	if o := invoke(Runner{}, "clone", "--store", "file://"+store, "--workspace", ws, empty); o.code != ExitOK {
		t.Fatalf("the next attempt: %v", o)
	}
	if readFile(t, empty, "a.txt") != "alpha\n" {
		t.Fatal("the next attempt did not clone")
	}
}

// A checkpoint the clone cannot take back is named in a warning: it stays in the database.
func TestCloneTakeBackWarns(t *testing.T) {
	var errb bytes.Buffer
	h := &handler{r: &Runner{Stderr: &errb}}
	h.takeBack(context.Background(), func(context.Context, string, bool) (*checkpoint.Checkpoint, error) {
		return nil, errors.New("database lost")
	}, "c0ffee", "w1")
	if !strings.Contains(errb.String(), "plan: warning: the clone's checkpoint c0ffee (workspace w1) could not be deleted") ||
		!strings.Contains(errb.String(), "database lost") {
		t.Errorf("warning: %q", errb.String())
	}
}

// cloneSource makes a workspace on a file store holding a.txt, checkpointed, and returns the
// store's directory, the workspace's ID and the checkpoint's root tree.
func cloneSource(t *testing.T) (string, string, tree.Hash) {
	t.Helper()
	src := t.TempDir()
	store := filepath.Join(t.TempDir(), "store")
	ws := jsonField(t, mustPlan(t, src, "--json", "init", "--store", "file://"+store), "workspace_id")
	writeFile(t, src, "a.txt", "alpha\n")
	return store, ws, rootOf(t, src, createCheckpoint(t, src))
}

// rootOf is the root tree of checkpoint id of the workspace in dir.
func rootOf(t *testing.T, dir, id string) tree.Hash {
	t.Helper()
	h, err := tree.ParseHash(jsonField(t, mustPlan(t, dir, "--json", "checkpoint", "show", id), "root_tree"))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A clone killed at any step leaves its record in DIR's state directory, and `plan recover` there
// finishes it: it adopts the checkpoint when the clone was killed before that, and rolls DIR to it
// unless that is recorded already. Commands run there meanwhile say so.
func TestCloneInterruptedIsFinishedByRecover(t *testing.T) {
	store, ws, root := cloneSource(t)
	done := filepath.Join(t.TempDir(), "done")
	o := mustPlan(t, t.TempDir(), "--json", "clone", "--store", "file://"+store, "--workspace", ws, done)
	cloned, source := jsonField(t, o, "checkpoint_id"), jsonField(t, o, "source_checkpoint_id")
	state := filepath.Join(done, ".plan")
	if _, err := os.Stat(filepath.Join(state, cloneMarkerName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a finished clone keeps its record: %v", err)
	}
	if rootOf(t, done, cloned) != root {
		t.Fatal("the clone's checkpoint holds another tree")
	}
	m := cloneMarker{SourceWorkspace: ws, SourceCheckpoint: source, Root: root}

	// Killed before it adopted anything: a workspace on the store, empty, and the record.
	killed := t.TempDir()
	mustPlan(t, killed, "init", "--store", "file://"+store)
	if err := writeCloneMarker(filepath.Join(killed, ".plan"), m); err != nil {
		t.Fatal(err)
	}
	if o := mustPlan(t, killed, "checkpoint", "list"); !strings.Contains(o.stderr, "this workspace is a clone that was interrupted: `plan recover` finishes it") {
		t.Errorf("a command in the interrupted clone does not say so: %v", o)
	}
	o = mustPlan(t, killed, "--json", "recover")
	if jsonField(t, o, "kind") != "clone" || jsonField(t, o, "outcome") != "completed" || readFile(t, killed, "a.txt") != "alpha\n" {
		t.Fatalf("recover of a clone killed before adopting: %v", o)
	}
	if o := mustPlan(t, killed, "recover"); !strings.Contains(o.stdout, "Nothing to recover") {
		t.Errorf("a second recover: %v", o)
	}

	// Killed after its rollback was recorded (the record outlived it): recover only clears it.
	if err := writeCloneMarker(state, m); err != nil {
		t.Fatal(err)
	}
	n := strings.Count(mustPlan(t, done, "checkpoint", "list").stdout, "\n")
	o = mustPlan(t, done, "recover")
	if !strings.Contains(o.stdout, "Finished the interrupted clone of checkpoint "+source+" of workspace "+ws) {
		t.Errorf("recover of a materialised clone: %v", o)
	}
	if got := strings.Count(mustPlan(t, done, "checkpoint", "list").stdout, "\n"); got != n {
		t.Errorf("recover of a materialised clone rolled back again: %d checkpoint lines, %d before", got, n)
	}
}

// What recover refuses of an interrupted clone it cannot finish: a damaged record (exit 6), one it
// cannot read, a checkpoint whose content the store does not hold, a rollback that fails. The
// record stays for the next attempt.
func TestCloneRecoverRefusals(t *testing.T) {
	store, ws, root := cloneSource(t)
	dir := t.TempDir()
	mustPlan(t, dir, "init", "--store", "file://"+store)
	state := filepath.Join(dir, ".plan")
	marker := filepath.Join(state, cloneMarkerName)
	if err := os.WriteFile(marker, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if o := inWorkspace(dir, "recover"); o.code != ExitIntegrity || !strings.Contains(o.stderr, "the record of an interrupted clone, is damaged") {
		t.Errorf("damaged record: %v", o)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(marker, "x"), 0o750); err != nil {
		t.Fatal(err)
	}
	if o := inWorkspace(dir, "recover"); o.code == ExitOK || !strings.Contains(o.stderr, "read the interrupted clone's record") {
		t.Errorf("unreadable record: %v", o)
	}
	if err := clearCloneMarker(state); err == nil || !strings.Contains(err.Error(), "the clone is done, but its record") {
		t.Errorf("clearing a record that cannot be removed: %v", err)
	}
	if err := os.RemoveAll(marker); err != nil {
		t.Fatal(err)
	}
	if err := writeCloneMarker(filepath.Join(dir, "missing"), cloneMarker{}); err == nil || !strings.Contains(err.Error(), "record the clone in") {
		t.Errorf("writing the record where it cannot go: %v", err)
	}
	// A checkpoint whose tree is not in the store cannot be adopted.
	if err := writeCloneMarker(state, cloneMarker{SourceWorkspace: ws, SourceCheckpoint: "c1", Root: tree.Sum([]byte("nothing"))}); err != nil {
		t.Fatal(err)
	}
	if o := inWorkspace(dir, "recover"); o.code == ExitOK || !strings.Contains(o.stderr, "finish the clone of checkpoint c1 of workspace "+ws) {
		t.Errorf("a tree the store does not hold: %v", o)
	}
	// The rollback fails (its safety checkpoint cannot be stored): reported, the record stays, and
	// the next recover finishes the clone it adopted.
	if err := writeCloneMarker(state, cloneMarker{SourceWorkspace: ws, SourceCheckpoint: "c2", Root: root}); err != nil {
		t.Fatal(err)
	}
	packs := filepath.Join(store, "packs")
	testkit.Immutable(t, packs)
	if o := inWorkspace(dir, "recover"); o.code == ExitOK || !strings.Contains(o.stderr, "finish the clone of checkpoint c2 of workspace "+ws) {
		t.Errorf("a failing rollback: %v", o)
	}
	testkit.Mutable(t, packs)
	if o := mustPlan(t, dir, "recover"); !strings.Contains(o.stdout, "Finished the interrupted clone of checkpoint c2") || readFile(t, dir, "a.txt") != "alpha\n" {
		t.Errorf("recover once the cause is gone: %v", o)
	}
}
