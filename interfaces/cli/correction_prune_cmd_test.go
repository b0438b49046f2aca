package cli

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// correctedTwice returns a workspace with three corrections, newest first: an unfinished one
// (reverted, not re-executed) and two finished ones, each with its archive.
func correctedTwice(t *testing.T) (dir string, ids []string) {
	t.Helper()
	dir = newWorkspace(t)
	mustPlan(t, dir, "exec", "--id", "one", "--", "sh", "-c", "echo 1 > one.txt")
	for _, reason := range []string{"first fix", "second fix"} {
		ids = append([]string{jsonField(t, mustPlan(t, dir, "--json", "--yes", "correct", "--decision", "one", "--reason", reason), "correction_id")}, ids...)
	}
	mustPlan(t, dir, "exec", "--id", "two", "--", "sh", "-c", "echo 2 > two.txt")
	ids = append([]string{jsonField(t, mustPlan(t, dir, "--json", "--yes", "correct", "--decision", "two", "--reason", "undo",
		"--no-reexecute"), "correction_id")}, ids...)
	for _, id := range ids {
		if _, err := os.Stat(filepath.Join(stateOf(t, dir).Archive(), id)); err != nil {
			t.Fatalf("correction %s has no archive: %v", id, err)
		}
	}
	return dir, ids
}

// correction prune removes the archives of finished corrections beyond the newest N, never an
// unfinished correction's, and keeps every correction record.
func TestCorrectionPruneRemovesOnlyOldFinishedArchives(t *testing.T) {
	dir, ids := correctedTwice(t)
	unfinished, newer, older := ids[0], ids[1], ids[2]
	archive := func(id string) string { return filepath.Join(stateOf(t, dir).Archive(), id) }

	// A dry run measures nothing, so it must not claim a size (it used to say "0 B").
	o := mustPlan(t, dir, "correction", "prune", "--keep", "1", "--dry-run")
	if !strings.HasPrefix(o.stdout, "Would remove the archives of 1 correction(s); 2 kept.\n") ||
		!strings.Contains(o.stdout, "  kept "+unfinished+": unfinished correction (reverted)\n") {
		t.Errorf("prune --dry-run: %v", o)
	}
	if strings.Contains(o.stdout, "kept "+newer) {
		t.Errorf("a correction kept by --keep is given a reason: %v", o)
	}
	if _, err := os.Stat(archive(older)); err != nil {
		t.Fatalf("--dry-run removed an archive: %v", err)
	}

	var dry archivePruneView
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "correction", "prune", "--keep", "1", "--dry-run").stdout), &dry); err != nil {
		t.Fatal(err)
	}
	if !dry.DryRun || !slices.Equal(dry.Deleted, []string{older}) || !slices.Equal(dry.Kept, []string{unfinished, newer}) ||
		dry.Reasons[unfinished] == "" {
		t.Errorf("prune --dry-run --json: %+v", dry)
	}

	held := treeBytes(t, archive(older))
	var done archivePruneView
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "correction", "prune", "--keep", "1").stdout), &done); err != nil {
		t.Fatal(err)
	}
	if done.DryRun || !slices.Equal(done.Deleted, []string{older}) || done.BytesFreed != held {
		t.Errorf("prune --json: %+v (want the older archive's %d bytes freed)", done, held)
	}
	if _, err := os.Stat(archive(older)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the pruned archive is still there: %v", err)
	}
	for _, id := range []string{unfinished, newer} {
		if _, err := os.Stat(archive(id)); err != nil {
			t.Errorf("a kept archive is gone: %v", err)
		}
	}
	if o := mustPlan(t, dir, "correction", "show", older); !strings.Contains(o.stdout, "correction "+older+" of one: succeeded") {
		t.Errorf("the correction record went with its archive: %v", o)
	}

	held = treeBytes(t, archive(newer))
	o = mustPlan(t, dir, "correction", "prune", "--keep", "0")
	if !strings.HasPrefix(o.stdout, "Removed the archives of ") || !strings.Contains(o.stdout, ", "+humanBytes(held)+"; 1 kept.\n") ||
		!strings.HasSuffix(o.stdout, "\n  kept "+unfinished+": unfinished correction (reverted)\n") {
		t.Errorf("prune --keep 0: %v", o)
	}
	if _, err := os.Stat(archive(newer)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the newer finished archive survived --keep 0: %v", err)
	}
	if _, err := os.Stat(archive(unfinished)); err != nil {
		t.Errorf("the unfinished correction's archive was removed: %v", err)
	}
}

// treeBytes sums the sizes of the regular files under dir.
func treeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	if err != nil || n == 0 {
		t.Fatalf("%s holds %d bytes: %v", dir, n, err)
	}
	return n
}

func TestCorrectionPruneOlderThan(t *testing.T) {
	dir, ids := correctedTwice(t)
	o := mustPlan(t, dir, "correction", "prune", "--keep", "0", "--older-than", "7d")
	if !strings.HasPrefix(o.stdout, "Removed the archives of 0 correction(s), 0 B; 3 kept.\n") {
		t.Errorf("prune --older-than 7d of fresh corrections: %v", o)
	}
	for _, id := range ids[1:] {
		if !strings.Contains(o.stdout, "  kept "+id+": newer than --older-than\n") {
			t.Errorf("%s is kept without saying why: %v", id, o)
		}
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"correction", "prune"}, ExitUsage, "missing --keep N (see `plan correction prune --help`)"},
		{[]string{"correction", "prune", "--keep", "1", "extra"}, ExitUsage, `unexpected argument "extra"`},
		{[]string{"correction", "prune", "--keep", "1", "--older-than", "soon"}, ExitInvalid, `--older-than "soon" is not a positive duration`},
		{[]string{"correction", "prune", "--keep", "1", "--older-than", ""}, ExitInvalid, "is not a positive duration"},
		{[]string{"correction", "prune", "--keep", "-2"}, ExitInvalid, "--keep must be zero or more"},
	} {
		if o := inWorkspace(dir, c.args...); o.code != c.code || !strings.Contains(o.stderr, c.msg) {
			t.Errorf("want exit %d and %q\n%v", c.code, c.msg, o)
		}
	}
	for _, id := range ids {
		if _, err := os.Stat(filepath.Join(stateOf(t, dir).Archive(), id)); err != nil {
			t.Errorf("a refused prune removed an archive: %v", err)
		}
	}
}
