package workspace

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/config"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// IgnoreFile is the name of the ignore file at the workspace root.
const IgnoreFile = ".planignore"

// Ignore decides which paths are outside every snapshot. It may hold several rule sets (the live
// .planignore and the one a rollback's target recorded): a path any of them excludes is excluded,
// so during a rollback across a .planignore change nothing either side excludes is stored,
// overwritten or deleted.
type Ignore struct {
	matchers []gitignore.Matcher
	// skipNestedGit leaves out .git directories below the top (recording them is the default: a
	// vendored repository is workspace content a decision can destroy).
	skipNestedGit bool
	// fp identifies the rules: the SHA-256 of each .planignore's bytes they come from (which is the
	// hash a tree records for it), sorted, and the settings. A tracked snapshot reuses a tree only if
	// it was taken with the same rules.
	fp string
}

// LoadIgnore reads <root>/.planignore (gitignore syntax). A missing file means no extra rules.
//
// It must be a regular file: opened without following a symlink and without blocking, so a FIFO
// (or a device) named .planignore is refused at once instead of hanging a command that holds the
// workspace lock.
func LoadIgnore(root string) (*Ignore, error) {
	f, err := os.OpenFile(filepath.Join(root, IgnoreFile), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0) // #nosec -- fixed name under the workspace root
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &Ignore{}, nil
	case errors.Is(err, syscall.ELOOP):
		return nil, fault.Invalid("%s is a symbolic link: it must be a regular file", IgnoreFile)
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", IgnoreFile, err)
	}
	defer func() { _ = f.Close() }()
	if fi, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("read %s: %w", IgnoreFile, err)
	} else if !fi.Mode().IsRegular() {
		return nil, fault.Invalid("%s is not a regular file (%s): it must be one", IgnoreFile, fi.Mode().Type())
	}
	h := sha256.New()
	ig, err := parseIgnore(io.TeeReader(f, h))
	if err != nil {
		return nil, err
	}
	ig.fp = tree.Hash(h.Sum(nil)).String()
	return ig, nil
}

// maxIgnoreLine bounds one line of ignore rules.
const maxIgnoreLine = 64 << 10

// parseIgnore reads gitignore rules.
func parseIgnore(r io.Reader) (*Ignore, error) {
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxIgnoreLine)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, nil))
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fault.Invalid("%s: line %d is longer than %d KiB", IgnoreFile, n+1, maxIgnoreLine>>10)
	} else if err != nil {
		return nil, fmt.Errorf("read %s: %w", IgnoreFile, err)
	}
	if len(ps) == 0 {
		return &Ignore{}, nil
	}
	return &Ignore{matchers: []gitignore.Matcher{gitignore.NewMatcher(ps)}}, nil
}

// ignoreOfTree reads the .planignore that a stored tree recorded at its root; none means no rules.
func ignoreOfTree(store *objectstore.Store, root tree.Hash) (*Ignore, error) {
	if root.IsZero() {
		return &Ignore{}, nil
	}
	t, err := store.ReadTree(root)
	if err != nil {
		return nil, fmt.Errorf("read the ignore rules of tree %s: %w", root, err)
	}
	for _, e := range t {
		if e.Name != IgnoreFile || e.Kind != tree.KindFile {
			continue
		}
		r, err := store.OpenBlob(e.Hash)
		if err != nil {
			return nil, fmt.Errorf("read the %s of tree %s: %w", IgnoreFile, root, err)
		}
		defer func() { _ = r.Close() }()
		ig, err := parseIgnore(r)
		if err != nil {
			return nil, err
		}
		ig.fp = e.Hash.String()
		return ig, nil
	}
	return &Ignore{}, nil
}

// With returns the union of ig and others: a path any of them excludes is excluded.
func (ig *Ignore) With(others ...*Ignore) *Ignore {
	u := &Ignore{}
	var fps []string
	for _, x := range append([]*Ignore{ig}, others...) {
		if x != nil {
			u.matchers = append(u.matchers, x.matchers...)
			u.skipNestedGit = u.skipNestedGit || x.skipNestedGit
			if x.fp != "" {
				fps = append(fps, strings.Split(x.fp, "+")...)
			}
		}
	}
	slices.Sort(fps)
	u.fp = strings.Join(slices.Compact(fps), "+")
	return u
}

// Skip reports whether the entry at rel (slash-separated; name is its last component) is excluded.
// .plan is excluded at every depth, the workspace's own .git at the top; a nested .git only when
// the configuration says so (record_nested_git: false).
func (ig *Ignore) Skip(rel, name string, isDir bool) bool {
	if name == StateDir || rel == ".git" {
		return true
	}
	if ig == nil {
		return false
	}
	if name == ".git" && ig.skipNestedGit {
		return true
	}
	parts := strings.Split(rel, "/")
	for _, m := range ig.matchers {
		if m.Match(parts, isDir) {
			return true
		}
	}
	return false
}

// skipChild is Skip for the entry name of directory parent: it builds the entry's path only when a
// rule needs it, which is what a walk of a workspace without .planignore rules is spared per entry.
func (ig *Ignore) skipChild(parent, name string, isDir bool) bool {
	if name == StateDir || (parent == "" && name == ".git") {
		return true
	}
	if ig == nil {
		return false
	}
	if name == ".git" && ig.skipNestedGit {
		return true
	}
	if len(ig.matchers) == 0 {
		return false
	}
	return ig.Skip(join(parent, name), name, isDir)
}

// SkipPath reports whether rel, or a directory above it, is excluded: what a rule excludes takes
// everything under it along, as git does.
func (ig *Ignore) SkipPath(rel string, isDir bool) bool {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		if ig.Skip(strings.Join(parts[:i], "/"), parts[i-1], true) {
			return true
		}
	}
	return ig.Skip(rel, parts[len(parts)-1], isDir)
}

// loadScanConfig reads the scanner's settings from .plan/config.yaml: record_nested_git (default
// true). The file's other keys belong to other readers, which validate them.
func loadScanConfig(l Layout) (skipNestedGit bool, err error) {
	c, err := config.Load(config.Path(l.State()))
	if err != nil {
		return false, err
	}
	return c.RecordNestedGit != nil && !*c.RecordNestedGit, nil
}
