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
