package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

// A HEAD that is not a full lower-case hex commit (upper case, a stray character, a short id) is
// not reported as one: a checkpoint labelled with a bogus commit would mislead whoever reads it.
func TestGitHeadRefusesWhatIsNotACommit(t *testing.T) {
	for _, head := range []string{
		"0123456789ABCDEF0123456789abcdef01234567",
		"0123456789abcdef0123456789abcdef0123456g",
		"0123456789abcdef",
	} {
		repo := t.TempDir()
		if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, ".git", "HEAD"), []byte(head+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := NewLayout(repo)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := NewGitHead(l).Head(); ok {
			t.Errorf("HEAD %q reported as commit %q", head, got)
		}
	}
}

// A HEAD that cannot be read, or symbolic refs that loop, yield no commit, and the chase ends.
func TestGitHeadUnreadableOrLooping(t *testing.T) {
	head := func(t *testing.T, repo string) bool {
		t.Helper()
		l, err := NewLayout(repo)
		if err != nil {
			t.Fatal(err)
		}
		_, ok := NewGitHead(l).Head()
		return ok
	}
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, ".git", "HEAD"), 0o755); err != nil {
		t.Fatal(err)
	}
	if head(t, repo) {
		t.Error("a HEAD that is a directory gave a commit")
	}
	repo = t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, ".git", "refs", "heads"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"HEAD":         "ref: refs/heads/a\n",
		"refs/heads/a": "ref: refs/heads/b\n",
		"refs/heads/b": "ref: refs/heads/a\n",
	} {
		if err := os.WriteFile(filepath.Join(repo, ".git", filepath.FromSlash(name)), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if head(t, repo) {
		t.Error("looping symbolic refs gave a commit")
	}
}
