package cli

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit/treetest"
)

var skipState = map[string]bool{".plan": true}

// mtimes records every path's modification time under root (outside .plan).
func mtimes(t *testing.T, root string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == ".plan" {
			return filepath.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = fi.ModTime()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func under(p string, paths ...string) bool {
	for _, q := range paths {
		if tree.Under(p, q) {
			return true
		}
	}
	return false
}

// The promise: restoring two paths of a 10k-file workspace touches only those paths (the
// rest byte-identical, mtimes unchanged), leaves decision states alone, and is undone exactly by
// its pre_rollback checkpoint.
func TestRestorePathsTouchesOnlyThem(t *testing.T) {
	dir := newWorkspace(t)
	for i := range 10_000 {
		writeFile(t, dir, fmt.Sprintf("d%02d/f%05d.txt", i%100, i), fmt.Sprintf("file %d\n", i))
	}
	writeFile(t, dir, "plan.yaml", "name: p\ndecisions:\n  - id: touch\n    run: echo ran > ran.txt\n")
	mustPlan(t, dir, "run", "plan.yaml")
	cp := createCheckpoint(t, dir, "--note", "base")
	atCheckpoint, err := treetest.Read(dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	// Work after the checkpoint, inside and outside the paths to restore.
	writeFile(t, dir, "d01/f00001.txt", "changed\n")
	writeFile(t, dir, "d01/new.txt", "new\n")
	if err := os.Remove(filepath.Join(dir, "d02", "f00002.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "d03")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "d04/f00004.txt", "kept change\n")
	writeFile(t, dir, "outside.txt", "kept\n")
	status := decisionStates(t, dir)
	before, err := treetest.Read(dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	times := mtimes(t, dir)

	o := mustPlan(t, dir, "--json", "rollback", "--to-checkpoint", cp, "--yes", "--", "d01", "d02/f00002.txt", "d03")
	var res struct {
		Backup   string   `json:"backup_checkpoint_id"`
		Paths    []string `json:"paths"`
		Mode     string   `json:"mode"`
		Added    int      `json:"added"`
		Modified int      `json:"modified"`
		Deleted  int      `json:"deleted"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.Mode != "files" || strings.Join(res.Paths, ",") != "d01,d02/f00002.txt,d03" || res.Added != 101 || res.Modified != 1 || res.Deleted != 1 {
		t.Fatalf("result %+v", res)
	}
	after, err := treetest.Read(dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	// Under the paths: the checkpoint's state; elsewhere: what was there, with its mtime.
	restored := []string{"d01", "d02/f00002.txt", "d03"}
	var want []tree.Entry
	for _, e := range before {
		if !under(e.Path, restored...) {
			want = append(want, e)
		}
	}
	for _, e := range atCheckpoint {
		if under(e.Path, restored...) {
			want = append(want, e)
		}
	}
	if d := treetest.Diff(sortEntries(want), after); len(d) > 0 {
		t.Fatalf("after the restore:\n%s", treetest.Summary(d))
	}
	for p, mt := range mtimes(t, dir) {
		if under(p, restored...) || p == "." || p == "d02" {
			continue // restored, or a directory whose listing changed
		}
		if !times[p].Equal(mt) {
			t.Errorf("%s was touched (mtime %v, was %v)", p, mt, times[p])
		}
	}
	if got := decisionStates(t, dir); got != status {
		t.Errorf("decision states changed:\n%s\nwas\n%s", got, status)
	}
	// The safety checkpoint undoes it exactly.
	mustPlan(t, dir, "rollback", "--to-checkpoint", res.Backup, "--yes")
	undone, err := treetest.Read(dir, skipState)
	if err != nil {
		t.Fatal(err)
	}
	if d := treetest.Diff(before, undone); len(d) > 0 {
		t.Fatalf("after undoing the restore:\n%s", treetest.Summary(d))
	}
}

func sortEntries(es []tree.Entry) []tree.Entry {
	out := append([]tree.Entry(nil), es...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && tree.Compare(out[j-1].Path, out[j].Path) > 0; j-- {
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}

// Bad paths are refused before anything happens: no safety checkpoint, nothing changed.
func TestRestorePathsRefusals(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a/b.txt", "b\n")
	writeFile(t, dir, "f", "file\n")
	cp := createCheckpoint(t, dir)
	if err := os.Remove(filepath.Join(dir, "f")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a", "now a file\n")
	count := func() int {
		var cps []json.RawMessage
		if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "checkpoint", "list").stdout), &cps); err != nil {
			t.Fatal(err)
		}
		return len(cps)
	}
	n := count()
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"../outside"}, ExitInvalid, "outside the workspace"},
		{[]string{"/etc/passwd"}, ExitInvalid, "outside the workspace"},
		{[]string{"."}, ExitInvalid, "whole workspace"},
		{[]string{".plan/plan.db"}, ExitInvalid, "never in a checkpoint"},
		{[]string{""}, ExitInvalid, "empty path"},
		{[]string{"nowhere"}, ExitNotFound, "neither in the checkpoint nor in the workspace"},
		{[]string{"a/b.txt"}, ExitConflict, "restore a itself"},
		{[]string{"--mode", "state", "f"}, ExitInvalid, "takes no paths"},
	} {
		o := inWorkspace(dir, append([]string{"rollback", "--to-checkpoint", cp, "--yes", "--"}, c.args...)...)
		if c.args[0] == "--mode" {
			o = inWorkspace(dir, append([]string{"rollback", "--to-checkpoint", cp, "--yes"}, c.args...)...)
		}
		if o.code != c.code || !strings.Contains(o.stderr, c.msg) {
			t.Errorf("%v: %v", c.args, o)
		}
	}
	if got := count(); got != n {
		t.Errorf("%d checkpoints after the refusals, %d before", got, n)
	}
	if readFile(t, dir, "a") != "now a file\n" {
		t.Error("a refused restore changed the workspace")
	}
	// Restoring the file's parent works: the file becomes the directory again.
	mustPlan(t, dir, "rollback", "--to-checkpoint", cp, "--yes", "a", "f")
	if readFile(t, dir, "a/b.txt") != "b\n" || readFile(t, dir, "f") != "file\n" {
		t.Fatal("a and f were not restored")
	}
	// A dry run names the changes and changes nothing.
	writeFile(t, dir, "f", "again\n")
	o := mustPlan(t, dir, "--json", "rollback", "--to-checkpoint", cp, "--dry-run", "f")
	if !strings.Contains(o.stdout, `"dry_run": true`) || !strings.Contains(o.stdout, `"path": "f"`) || readFile(t, dir, "f") != "again\n" {
		t.Fatalf("dry run: %v", o)
	}
}
