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
