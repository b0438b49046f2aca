package cli

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/interfaces/view"
	"github.com/planhq/plan/tests/testkit"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// readFixture is a workspace with one checkpoint of a small tree (a file, a nested read-only
// directory, a symlink, a binary file), after which the workspace was changed.
func readFixture(t *testing.T) (dir, id string, saved []tree.Entry) {
	t.Helper()
	dir = newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	writeFile(t, dir, "sub/b.txt", "two\n")
	writeFile(t, dir, "sub/deep/c", "three\n")
	writeFile(t, dir, "bin.dat", "\x00\x01\x02")
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "sub", "deep"), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(dir, "sub", "deep"), 0o755) })
	saved, err := treetest.Read(dir, map[string]bool{".plan": true})
	if err != nil {
		t.Fatal(err)
	}
	id = createCheckpoint(t, dir)
	writeFile(t, dir, "a.txt", "changed\n")
	if err := os.Remove(filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	return dir, id, saved
}

func TestCatPrintsWhatTheCheckpointHolds(t *testing.T) {
	dir, id, _ := readFixture(t)
	if o := mustPlan(t, dir, "cat", id, "a.txt"); o.stdout != "one\n" {
		t.Fatalf("cat a.txt = %q, want the checkpoint's one\\n (the workspace has changed)", o.stdout)
	}
	if o := mustPlan(t, dir, "cat", id, "link"); o.stdout != "a.txt" {
		t.Fatalf("cat of a symlink = %q, want its target", o.stdout)
	}
	if o := mustPlan(t, dir, "cat", id, filepath.Join(dir, "sub", "b.txt")); o.stdout != "two\n" {
		t.Fatalf("cat by absolute path = %q", o.stdout)
	}
	o := mustPlan(t, dir, "--json", "cat", id, "bin.dat")
	var v catView
	if err := json.Unmarshal([]byte(o.stdout), &v); err != nil || v.ContentBase64 == nil {
		t.Fatalf("cat --json: %v\n%v", err, o)
	}
	if b, _ := base64.StdEncoding.DecodeString(*v.ContentBase64); string(b) != "\x00\x01\x02" || v.Size != 3 || v.Kind != "file" {
		t.Fatalf("cat --json of a binary file: %+v", v)
	}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"cat", id, "sub"}, ExitInvalid, "is a directory"},
		{[]string{"cat", id, "missing"}, ExitNotFound, "has no missing"},
		{[]string{"cat", id, "../outside"}, ExitInvalid, "outside the workspace"},
		{[]string{"cat", id, "."}, ExitInvalid, "name a file"},
		{[]string{"cat", id}, ExitUsage, "missing argument PATH"},
		{[]string{"cat"}, ExitUsage, "missing argument REF"},
		{[]string{"cat", id, "a.txt", "b"}, ExitUsage, "unexpected argument"},
		{[]string{"cat", "ffffffffffff", "a.txt"}, ExitNotFound, ""},
	} {
		o := inWorkspace(dir, c.args...)
		if o.code != c.code || !strings.Contains(o.stderr, c.says) {
			t.Errorf("want exit %d saying %q: %v", c.code, c.says, o)
		}
	}
}

func TestLsListsOneLevelOrAll(t *testing.T) {
	dir, id, _ := readFixture(t)
	o := mustPlan(t, dir, "ls", id)
	want := "- 0600          3  bin.dat\n- 0600          4  a.txt\nl 0777          5  link -> a.txt\nd 0750          -  sub/\n"
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		if !strings.Contains(o.stdout, line+"\n") {
			t.Errorf("ls lacks %q:\n%s", line, o.stdout)
		}
	}
	if strings.Contains(o.stdout, "b.txt") {
		t.Errorf("ls without -r listed a nested file:\n%s", o.stdout)
	}
	var v lsView
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "ls", "-r", id, "sub").stdout), &v); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range v.Entries {
		paths = append(paths, e.Path+":"+e.Mode)
	}
	if got := strings.Join(paths, " "); got != "sub/b.txt:0600 sub/deep:0555 sub/deep/c:0600" || v.Path != "sub" {
		t.Fatalf("ls -r sub = %s (path %q)", got, v.Path)
	}
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "ls", id, "a.txt").stdout), &v); err != nil || len(v.Entries) != 1 || v.Entries[0].Path != "a.txt" {
		t.Fatalf("ls of a file lists it alone: %+v %v", v, err)
	}
	if o := inWorkspace(dir, "ls", id, "nope"); o.code != ExitNotFound {
		t.Fatalf("ls of a missing path: %v", o)
	}
	if o := inWorkspace(dir, "ls", id, "a", "b"); o.code != ExitUsage {
		t.Fatalf("ls with two paths: %v", o)
	}
}

func TestRestoreIntoAnotherDirectoryIsByteExactAndLeavesTheWorkspace(t *testing.T) {
	dir, id, saved := readFixture(t)
	before, err := treetest.Read(dir, map[string]bool{".plan": true})
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "new", "copy")
	o := mustPlan(t, dir, "--json", "restore", id, "--target", target)
	var v restoreToView
	if err := json.Unmarshal([]byte(o.stdout), &v); err != nil || v.Files != 4 || v.Symlinks != 1 || v.Dirs != 2 || v.Target != target {
		t.Fatalf("restore --json: %+v %v", v, err)
	}
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(target, "sub", "deep"), 0o755) })
	treetest.RequireSame(t, target, nil, saved, "the copy")
	treetest.RequireSame(t, dir, map[string]bool{".plan": true}, before, "the workspace after restore --target")

	// Only some paths, given relative to the workspace, into an existing empty directory.
	part := t.TempDir()
	mustPlan(t, dir, "restore", id, "--target", part, "--", "sub/deep", "link")
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(part, "sub", "deep"), 0o755) })
	var want []tree.Entry
	for _, e := range saved {
		if e.Path == "link" || e.Path == "sub" || strings.HasPrefix(e.Path, "sub/deep") {
			want = append(want, e)
		}
	}
	// The directories above a chosen path are made for the layout, with the checkpoint's modes.
	treetest.RequireSame(t, part, nil, want, "the partial copy")
}

func TestRestoreRefusesWhatItMustNotWrite(t *testing.T) {
	dir, id, _ := readFixture(t)
	full := t.TempDir()
	writeFile(t, full, "keep.txt", "mine")
	file := filepath.Join(t.TempDir(), "f")
	writeFile(t, filepath.Dir(file), "f", "x")
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"restore", id, "--target", full}, ExitConflict, "is not empty"},
		{[]string{"restore", id, "--target", file}, ExitInvalid, "is not a directory"},
		{[]string{"restore", id, "--target", filepath.Join(dir, ".plan", "x")}, ExitInvalid, "state directory"},
		{[]string{"restore", id, "--target", filepath.Join(stateOf(t, dir).Home(), "x")}, ExitInvalid, "state directory " + stateOf(t, dir).Home()},
		{[]string{"restore", id, "--target", filepath.Join(t.TempDir(), "x"), "--", "missing"}, ExitNotFound, "has no missing"},
		{[]string{"restore", id, "--target", filepath.Join(t.TempDir(), "x"), "--", "/etc"}, ExitInvalid, "outside the workspace"},
		{[]string{"restore", id}, ExitUsage, "missing --target DIR"},
		{[]string{"restore", id, "--target", ""}, ExitUsage, "--target needs a directory"},
	} {
		o := inWorkspace(dir, c.args...)
		if o.code != c.code || !strings.Contains(o.stderr, c.says) {
			t.Errorf("want exit %d saying %q: %v", c.code, c.says, o)
		}
	}
	if readFile(t, full, "keep.txt") != "mine" {
		t.Fatal("a refused restore changed the directory")
	}
	// A relative target is taken from where the command starts (as git -C): the current
	// directory, or -C DIR; never from the workspace root the command found above it.
	cwd := t.TempDir()
	if o := invoke(Runner{Dir: cwd}, "-C", dir, "restore", id, "--target", filepath.Join(cwd, "abs"), "--", "a.txt"); o.code != ExitOK {
		t.Fatalf("%v", o)
	} else if readFile(t, cwd, "abs/a.txt") != "one\n" {
		t.Fatal("an absolute target was not used as it is")
	}
	sub := filepath.Join(dir, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if o := invoke(Runner{Dir: sub}, "restore", id, "--target", "rel", "--", "../a.txt"); o.code != ExitOK {
		t.Fatalf("%v", o)
	}
	if readFile(t, sub, "rel/a.txt") != "one\n" {
		t.Fatal("the relative target was not taken from the directory the command started in")
	}
	if o := invoke(Runner{Dir: cwd}, "-C", sub, "restore", id, "--target", "rel2", "--", "../a.txt"); o.code != ExitOK {
		t.Fatalf("%v", o)
	}
	if readFile(t, sub, "rel2/a.txt") != "one\n" {
		t.Fatal("the relative target was not taken from -C DIR")
	}
}

func TestDiffStatNameOnlyAndExitCode(t *testing.T) {
	dir, id, _ := readFixture(t)
	o := mustPlan(t, dir, "diff", id, "--stat")
	for _, want := range []string{" a.txt | 2 +-\n", " link  | 1 -\n", " 2 files changed, 1 insertion(+), 2 deletions(-)\n"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("diff --stat lacks %q:\n%s", want, o.stdout)
		}
	}
	if o := mustPlan(t, dir, "diff", id, "--name-only"); o.stdout != "a.txt\nlink\n" {
		t.Errorf("diff --name-only = %q", o.stdout)
	}
	if o := inWorkspace(dir, "diff", id, "--exit-code"); o.code != ExitInternal || o.stderr != "" || !strings.Contains(o.stdout, "M a.txt") {
		t.Errorf("diff --exit-code with differences: %v", o)
	}
	if o := inWorkspace(dir, "--json", "diff", id, id, "--exit-code"); o.code != ExitOK {
		t.Errorf("diff --exit-code without differences: %v", o)
	}
	if o := inWorkspace(dir, "diff", id, "--name-only", "--stat"); o.code != ExitUsage {
		t.Errorf("--name-only with --stat: %v", o)
	}
	writeFile(t, dir, "big.bin", "\x00binary")
	var v view.Diff
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "diff", id, "--stat").stdout), &v); err != nil || v.Stat == nil {
		t.Fatalf("diff --json --stat: %v", err)
	}
	if v.Stat.Files != 3 || v.Stat.Insertions != 1 || v.Stat.Deletions != 2 {
		t.Errorf("stat totals %+v", *v.Stat)
	}
	for _, ch := range v.Changes {
		if ch.Path == "big.bin" && !ch.Binary {
			t.Errorf("a binary file is not marked binary: %+v", ch)
		}
	}
	if o := mustPlan(t, dir, "diff", id, "--stat"); !strings.Contains(o.stdout, " big.bin | Bin (added)\n") {
		t.Errorf("binary in --stat:\n%s", o.stdout)
	}
}

// Reading damaged content fails with the integrity error and writes nothing: cat stops, ls still
// lists (it reads trees only), restore --target leaves no copy behind.
func TestReadingDamagedContentIsAnIntegrityError(t *testing.T) {
	dir := newWorkspace(t)
	big := string(testkit.Noise(7, 64<<10))
	writeFile(t, dir, "big.bin", big)
	id := createCheckpoint(t, dir)
	testkit.DamageStored(t, filepath.Join(stateOf(t, dir).Objects(), "packs"), []byte(big))
	if o := inWorkspace(dir, "cat", id, "big.bin"); o.code != ExitIntegrity {
		t.Fatalf("cat of damaged content: %v", o)
	}
	if o := inWorkspace(dir, "--json", "cat", id, "big.bin"); o.code != ExitIntegrity {
		t.Fatalf("cat --json of damaged content: %v", o)
	}
	mustPlan(t, dir, "ls", id)
	target := filepath.Join(t.TempDir(), "copy")
	if o := inWorkspace(dir, "restore", id, "--target", target); o.code != ExitIntegrity {
		t.Fatalf("restore --target of damaged content: %v", o)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Fatalf("a failed restore --target left %s", target)
	}
	if o := inWorkspace(dir, "diff", id, "--stat"); o.code != ExitOK {
		// The workspace still holds big.bin as it was: nothing differs, nothing is read.
		t.Fatalf("diff --stat: %v", o)
	}
}

func TestShowIsWhatOneDecisionChanged(t *testing.T) {
	dir := newWorkspace(t)
	plan := filepath.Join(t.TempDir(), "p.yaml")
	writeFile(t, filepath.Dir(plan), "p.yaml", "name: demo\ndecisions:\n  - id: one\n    run: echo hello > a.txt\n  - id: two\n    run: echo bye >> a.txt && ln -s a.txt l\n")
	mustPlan(t, dir, "run", plan)
	o := mustPlan(t, dir, "show", "two", "--patch")
	for _, want := range []string{"decision two of plan demo, attempt 1 (succeeded)\n", "command: echo bye >> a.txt && ln -s a.txt l\n",
		"M a.txt\nA l\n", "@@ -1 +1,2 @@\n hello\n+bye\n", "new file mode 120000\n"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("show two --patch lacks %q:\n%s", want, o.stdout)
		}
	}
	if strings.Contains(o.stdout, "one") {
		t.Errorf("show two printed decision one's change:\n%s", o.stdout)
	}
	if o := mustPlan(t, dir, "show", "one", "--name-only"); o.stdout != "a.txt\n" {
		t.Errorf("show one --name-only = %q", o.stdout)
	}
	var v showView
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "show", "two", "--stat", "--plan", "demo", "--attempt", "1").stdout), &v); err != nil {
		t.Fatal(err)
	}
	if v.Decision != "two" || v.Plan != "demo" || v.Stat == nil || v.Stat.Insertions != 2 || len(v.Changes) != 2 || v.CheckpointID == "" {
		t.Fatalf("show --json --stat: %+v", v)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"show"}, ExitUsage},
		{[]string{"show", "one", "two"}, ExitUsage},
		{[]string{"show", "one", "--name-only", "--patch"}, ExitUsage},
		{[]string{"show", "one", "--attempt", "-1"}, ExitInvalid},
		{[]string{"show", "three"}, ExitNotFound},
		{[]string{"show", "one", "--plan", "other"}, ExitNotFound},
	} {
		if o := inWorkspace(dir, c.args...); o.code != c.code {
			t.Errorf("want exit %d: %v", c.code, o)
		}
	}
}
