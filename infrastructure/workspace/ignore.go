package workspace

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// IgnoreFile is the name of the ignore file at the workspace root.
const IgnoreFile = ".planignore"

// Ignore decides which paths are outside every snapshot.
type Ignore struct {
	matcher gitignore.Matcher
}

// LoadIgnore reads <root>/.planignore (gitignore syntax). A missing file means no extra rules.
func LoadIgnore(root string) (*Ignore, error) {
	f, err := os.Open(filepath.Join(root, IgnoreFile)) // #nosec -- fixed name under the workspace root
	if errors.Is(err, fs.ErrNotExist) {
		return &Ignore{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", IgnoreFile, err)
	}
	defer func() { _ = f.Close() }()
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, nil))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", IgnoreFile, err)
	}
	return &Ignore{matcher: gitignore.NewMatcher(ps)}, nil
}

// Skip reports whether the entry at rel (slash-separated; name is its last component) is excluded.
// .plan and .git are excluded at every depth.
func (ig *Ignore) Skip(rel, name string, isDir bool) bool {
	if name == StateDir || name == ".git" {
		return true
	}
	if ig == nil || ig.matcher == nil {
		return false
	}
	return ig.matcher.Match(strings.Split(rel, "/"), isDir)
}
