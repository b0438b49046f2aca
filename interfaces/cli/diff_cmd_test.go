package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/tests/testkit"
)

// diff --patch reads the stored content; when that is damaged it fails with exit 6 instead of
// printing a patch of wrong bytes. Without --patch the change list needs no content and still works.
func TestDiffPatchOfDamagedContent(t *testing.T) {
	dir := newWorkspace(t)
	big := string(testkit.Noise(4, 64<<10))
	writeFile(t, dir, "big.bin", "first\n")
	first := createCheckpoint(t, dir)
	writeFile(t, dir, "big.bin", big)
	second := createCheckpoint(t, dir)
	writeFile(t, dir, "big.bin", "third\n")
	testkit.DamageStored(t, filepath.Join(stateOf(t, dir).Objects(), "packs"), []byte(big))

	for _, c := range []struct {
		name string
		args []string
	}{
		{"the old side damaged", []string{"diff", second, "--patch"}},
		{"the new side damaged", []string{"diff", first, second, "--patch"}},
	} {
		o := inWorkspace(dir, c.args...)
		if o.code != ExitIntegrity || o.stdout != "" {
			t.Errorf("%s: want exit 6 and no patch\n%v", c.name, o)
		}
	}
	if o := mustPlan(t, dir, "diff", first, second); o.stdout != "M big.bin\n" {
		t.Errorf("diff without --patch: %v", o)
	}
	if o := mustPlan(t, dir, "diff", first, "--patch"); !strings.Contains(o.stdout, "-first\n+third\n") {
		t.Errorf("diff --patch of intact content: %v", o)
	}
}

// --patch is shaped as git's: added and deleted sides are /dev/null, a mode change and a type
// change are stated in the header (a type change as one change), a symlink's content is its target.
func TestDiffPatchIsGitShaped(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "gone.txt", "bye\n")
	writeFile(t, dir, "mode.sh", "echo\n")
	writeFile(t, dir, "becomes-link", "file\n")
	writeFile(t, dir, "becomes-dir", "file\n")
	if err := os.Symlink("old-target", filepath.Join(dir, "retarget")); err != nil {
		t.Fatal(err)
	}
	first := createCheckpoint(t, dir)
	writeFile(t, dir, "new.txt", "hello\n")
	mustRemove(t, dir, "gone.txt")
	if err := os.Chmod(filepath.Join(dir, "mode.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustRemove(t, dir, "becomes-link")
	if err := os.Symlink("gone.txt", filepath.Join(dir, "becomes-link")); err != nil {
		t.Fatal(err)
	}
	mustRemove(t, dir, "becomes-dir")
	writeFile(t, dir, "becomes-dir/inner", "in\n")
	mustRemove(t, dir, "retarget")
	if err := os.Symlink("new-target", filepath.Join(dir, "retarget")); err != nil {
		t.Fatal(err)
	}
	out := mustPlan(t, dir, "diff", first, "--patch").stdout
	for _, want := range []string{
		"diff --git a/new.txt b/new.txt\nnew file mode 100600\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n",
		"diff --git a/gone.txt b/gone.txt\ndeleted file mode 100600\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n",
		"diff --git a/mode.sh b/mode.sh\nold mode 100600\nnew mode 100755\n",
		"diff --git a/becomes-link b/becomes-link\ntype change: file -> symlink\nold mode 100600\nnew mode 120000\n--- a/becomes-link\n+++ b/becomes-link\n",
		"diff --git a/becomes-dir b/becomes-dir\ntype change: file -> directory\nold mode 100600\nnew mode 040750\n--- a/becomes-dir\n+++ /dev/null\n",
		"diff --git a/becomes-dir/inner b/becomes-dir/inner\nnew file mode 100600\n",
		"--- a/retarget\n+++ b/retarget\n@@ -1 +1 @@\n-old-target\n\\ No newline at end of file\n+new-target\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diff --patch lacks\n%s\nin\n%s", want, out)
		}
	}
	if strings.Contains(out, "diff --git a/mode.sh b/mode.sh\nold mode 100600\nnew mode 100755\n---") {
		t.Errorf("a mode-only change printed a content diff:\n%s", out)
	}
}

func mustRemove(t *testing.T, dir, rel string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, rel)); err != nil {
		t.Fatal(err)
	}
}

// plan diff [FROM [TO]] [--] PATH… keeps the changes at or under the paths, which are relative to
// where the command runs (as git's are); "--" separates checkpoints from paths, and without it an
// argument that is no checkpoint must be a path of the workspace.
func TestDiffLimitedToPaths(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "src/a.go", "a\n")
	writeFile(t, dir, "src/b.go", "b\n")
	writeFile(t, dir, "doc.md", "d\n")
	writeFile(t, dir, "gone.txt", "g\n")
	first := createCheckpoint(t, dir)
	writeFile(t, dir, "src/a.go", "a2\n")
	writeFile(t, dir, "doc.md", "d2\n")
	mustRemove(t, dir, "gone.txt")
	second := createCheckpoint(t, dir)
	writeFile(t, dir, "src/b.go", "b2\n")
	sub := filepath.Join(dir, "src")

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"a checkpoint and a path", []string{"-C", dir, "diff", first, "doc.md"}, "M doc.md\n"},
		{"a directory, from inside it", []string{"-C", sub, "diff", first, "."}, "M src/a.go\nM src/b.go\n"},
		{"a path relative to a subdirectory", []string{"-C", sub, "diff", first, second, "a.go"}, "M src/a.go\n"},
		{"two paths, one unchanged", []string{"-C", dir, "diff", second, "src/b.go", "doc.md"}, "M src/b.go\n"},
		{"-- before paths only a checkpoint holds", []string{"-C", dir, "diff", first, second, "--", "gone.txt"}, "D gone.txt\n"},
		{"-- first: the workspace against @", []string{"-C", dir, "diff", "--", "src"}, "M src/b.go\n"},
		{"no checkpoint: @", []string{"-C", dir, "diff", "doc.md"}, ""},
		{"the workspace itself", []string{"-C", dir, "diff", first, second, "--", "."}, "M doc.md\nD gone.txt\nM src/a.go\n"},
		{"flags before the paths", []string{"-C", dir, "diff", first, "--name-only", "--", "doc.md"}, "doc.md\n"},
	} {
		o := invoke(Runner{}, c.args...)
		if o.code != ExitOK || o.stdout != c.want {
			t.Errorf("%s: want exit 0 and %q\n%v", c.name, c.want, o)
		}
	}
	if o := mustPlan(t, dir, "diff", first, "--stat", "--", "doc.md"); !strings.Contains(o.stdout, "doc.md | 2 +-\n") || strings.Contains(o.stdout, "a.go") {
		t.Errorf("--stat limited to a path: %v", o)
	}

	// A file named as a checkpoint could be is ambiguous without "--".
	writeFile(t, dir, second, "x\n")
	for _, c := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"neither a checkpoint nor a path", []string{"diff", "nosuch.txt"}, ExitInvalid, `"nosuch.txt" is not a path in the workspace, nor a checkpoint`},
		{"a second argument that is neither", []string{"diff", first, "nosuch.txt"}, ExitInvalid, `"nosuch.txt" is not a path in the workspace, nor a checkpoint`},
		{"a path after two checkpoints that does not exist", []string{"diff", first, "@", "nosuch.txt"}, ExitNotFound, "nosuch.txt: no such path in the workspace (a path that only a checkpoint holds goes after --)"},
		{"after --, a path that names nothing on either side", []string{"diff", first, second, "--", "nosuch.txt"}, ExitNotFound, "nosuch.txt names nothing in " + first},
		{"against the workspace, a path that names nothing", []string{"diff", first, "--", "nosuch"}, ExitNotFound, "nosuch names nothing in " + first + " or the workspace"},
		{"a path outside the workspace", []string{"diff", first, "--", "../elsewhere"}, ExitInvalid, "is outside the workspace"},
		{"a path outside the workspace, no --", []string{"diff", "../elsewhere"}, ExitInvalid, `"../elsewhere" is not a path in the workspace`},
		{"a name that is both", []string{"diff", second}, ExitInvalid, "names both a checkpoint and a path of the workspace"},
	} {
		o := inWorkspace(dir, c.args...)
		if o.code != c.code || !strings.Contains(o.stderr, c.msg) || o.stdout != "" {
			t.Errorf("%s: want exit %d and %q\n%v", c.name, c.code, c.msg, o)
		}
	}
	if o := mustPlan(t, dir, "diff", second, "--", "src"); o.stdout != "M src/b.go\n" {
		t.Errorf("-- says which: %v", o)
	}
	if o := mustPlan(t, dir, "diff", "--", second); o.stdout != "A "+second+"\n" {
		t.Errorf("-- first says it is a path: %v", o)
	}
}
