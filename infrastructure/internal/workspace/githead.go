package workspace

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// GitHead reads the HEAD commit of the repository that contains the workspace, by reading files
// only: it never runs git and never writes inside .git.
type GitHead struct{ root string }

// NewGitHead returns a probe for the repository containing root.
func NewGitHead(l Layout) *GitHead { return &GitHead{root: l.Root} }

// Head returns the commit HEAD points at, or ok=false outside a repository or on an unborn branch.
func (g *GitHead) Head() (string, bool) {
	gitDir, ok := findGitDir(g.root)
	if !ok {
		return "", false
	}
	common := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil { // #nosec -- inside .git
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = c
	}
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD")) // #nosec -- inside .git
	if err != nil {
		return "", false
	}
	ref := strings.TrimSpace(string(head))
	for range 10 { // symbolic refs may chain; bound the chase
		name, isRef := strings.CutPrefix(ref, "ref: ")
		if !isRef {
			return ref, isHexCommit(ref)
		}
		name = strings.TrimSpace(name)
		if strings.Contains(name, "..") {
			return "", false
		}
		next, found := readRef(gitDir, common, name)
		if !found {
			return "", false
		}
		ref = next
	}
	return "", false
}

func readRef(gitDir, common, name string) (string, bool) {
	for _, dir := range []string{gitDir, common} {
		if b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))); err == nil { // #nosec -- ref name checked for ".."
			return strings.TrimSpace(string(b)), true
		}
	}
	f, err := os.Open(filepath.Join(common, "packed-refs")) // #nosec -- inside .git
	if err != nil {
		return "", false
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if sha, ref, ok := strings.Cut(line, " "); ok && ref == name {
			return sha, true
		}
	}
	return "", false
}

func findGitDir(start string) (string, bool) {
	dir := start
	for {
		p := filepath.Join(dir, ".git")
		if st, err := os.Stat(p); err == nil {
			if st.IsDir() {
				return p, true
			}
			// A worktree or submodule: .git is a file "gitdir: <path>".
			if b, err := os.ReadFile(p); err == nil { // #nosec -- the .git file itself
				if d, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: "); ok {
					if !filepath.IsAbs(d) {
						d = filepath.Join(dir, d)
					}
					return d, true
				}
			}
			return "", false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func isHexCommit(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
