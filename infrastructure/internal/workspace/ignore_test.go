package workspace

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestIgnoreNestedGitAndNoRules: with record_nested_git off, a nested .git is skipped at any
// depth (by Skip, which the restorer asks, as by the walk); with no rules at all only .plan and
// the top .git are.
func TestIgnoreNestedGitAndNoRules(t *testing.T) {
	ig := &Ignore{skipNestedGit: true}
	if !ig.Skip("a/b/.git", ".git", true) {
		t.Error("a nested .git is not skipped with record_nested_git off")
	}
	if (&Ignore{}).Skip("a/b/.git", ".git", true) {
		t.Error("a nested .git is skipped with record_nested_git on")
	}
	var none *Ignore
	if none.skipChild("a", "f", false) || none.skipChild("a", ".git", true) {
		t.Error("no rules skipped an ordinary entry or a nested .git")
	}
	if !none.skipChild("a", StateDir, true) || !none.skipChild("", ".git", true) {
		t.Error("no rules: .plan or the top .git not skipped")
	}
}

// TestLoadIgnoreUnreadable: a .planignore that cannot be opened (its workspace path is not a
// directory) is an error naming the file, not an empty rule set.
func TestLoadIgnoreUnreadable(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if ig, err := LoadIgnore(f); err == nil || !strings.Contains(err.Error(), "read "+IgnoreFile) {
		t.Fatalf("LoadIgnore under a file: %v %v", ig, err)
	}
}

// TestSpecialFileTypeNames: the warning for a skipped special file names its type; a type the
// scanner does not know is an "irregular file".
func TestSpecialFileTypeNames(t *testing.T) {
	for m, want := range map[uint32]string{
		unix.S_IFIFO:  "named pipe",
		unix.S_IFSOCK: "socket",
		unix.S_IFCHR:  "device",
		unix.S_IFBLK:  "device",
		0:             "irregular file",
	} {
		if got := typeName(unixType(m)); got != want {
			t.Errorf("type %#o: %q, want %q", m, got, want)
		}
	}
	if unixType(0) != fs.ModeIrregular {
		t.Error("an unknown type is not irregular")
	}
}

// TestGitHeadRefMissingFromPackedRefs: a branch that is neither a loose ref nor in packed-refs
// (an unborn branch) yields no commit.
func TestGitHeadRefMissingFromPackedRefs(t *testing.T) {
	repo := t.TempDir()
	git := filepath.Join(repo, ".git")
	if err := os.MkdirAll(git, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"HEAD":        "ref: refs/heads/unborn\n",
		"packed-refs": "# pack-refs with: peeled\n0123456789abcdef0123456789abcdef01234567 refs/heads/main\n",
	} {
		if err := os.WriteFile(filepath.Join(git, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := NewLayout(repo)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := NewGitHead(l).Head(); ok {
		t.Fatalf("an unborn branch gave commit %q", got)
	}
	if err := os.WriteFile(filepath.Join(git, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, ok := NewGitHead(l).Head(); !ok || got != "0123456789abcdef0123456789abcdef01234567" {
		t.Fatalf("a packed branch: %q %v", got, ok)
	}
}

// A symlink .planignore matches is not recorded, like an ignored file.
func TestSnapshotHonoursPlanignoreForSymlinks(t *testing.T) {
	w := newTestWS(t)
	w.write(IgnoreFile, "secret-link\n", 0o644)
	w.write("f", "x", 0o644)
	w.symlink("secret-link", "f")
	w.symlink("link", "f")
	var paths []string
	for _, e := range w.flatten(w.snapshot().Root) {
		paths = append(paths, e.Path)
	}
	if strings.Join(paths, ",") != IgnoreFile+",f,link" {
		t.Fatalf("snapshot holds %v", paths)
	}
}
