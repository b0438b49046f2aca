// Package treetest reads a directory tree with the standard library only, independently of plan's
// scanner, and compares trees, for tests that must check what plan did to a workspace against
// what is really on disk. It lives in non-test files so that every package's tests share one copy.
//
// A tree is read as plan records it: every path but the top-level .plan and .git, with kind, Unix
// mode (0o777 for symlinks), size, SHA-256 and symlink target; entries are ordered by tree.Compare.
// A special file (FIFO, socket, device) is listed with kind 0, so a comparison reports it.
package treetest

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/planhq/plan/domain/tree"
)

// Read returns the tree at root, leaving out the workspace-relative paths in skip (and what is
// under them).
func Read(root string, skip map[string]bool) ([]tree.Entry, error) {
	var out []tree.Entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		if rel == ".plan" || rel == ".git" || skip[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			if !skip[rel] {
				return nil // a .plan or .git file at the top is not workspace content either
			}
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := tree.Entry{Path: rel, Mode: tree.UnixMode(fi.Mode())}
		switch {
		case fi.IsDir():
			e.Kind = tree.KindDir
		case fi.Mode()&fs.ModeSymlink != 0:
			e.Kind, e.Mode = tree.KindSymlink, 0o777
			if e.Target, err = os.Readlink(p); err != nil {
				return err
			}
			e.Size = int64(len(e.Target))
		case fi.Mode().IsRegular():
			if e.Size, e.Hash, err = hashFile(p); err != nil {
				return err
			}
			e.Kind = tree.KindFile
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", root, err)
	}
	slices.SortFunc(out, func(a, b tree.Entry) int { return tree.Compare(a.Path, b.Path) })
	return out, nil
}

func hashFile(p string) (int64, tree.Hash, error) {
	f, err := os.Open(p) // #nosec -- a test's own tree
	if err != nil {
		return 0, tree.Hash{}, err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return n, tree.Hash(h.Sum(nil)), err
}

// Diff lists how got differs from want: path, kind, mode, size, content hash and symlink target
// (directories: kind and mode). Empty means exactly equal.
func Diff(want, got []tree.Entry) []string {
	var out []string
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		var c int
		switch {
		case i == len(want):
			c = 1
		case j == len(got):
			c = -1
		default:
			c = tree.Compare(want[i].Path, got[j].Path)
		}
		switch {
		case c < 0:
			out = append(out, "missing "+Describe(want[i]))
			i++
		case c > 0:
			out = append(out, "unexpected "+Describe(got[j]))
			j++
		default:
			w, g := want[i], got[j]
			same := w.Kind == g.Kind && w.Mode == g.Mode
			switch w.Kind {
			case tree.KindFile:
				same = same && w.Size == g.Size && w.Hash == g.Hash
			case tree.KindSymlink:
				same = same && w.Target == g.Target
			}
			if !same {
				out = append(out, fmt.Sprintf("want %s, got %s", Describe(w), Describe(g)))
			}
			i++
			j++
		}
	}
	return out
}

// Describe names an entry the way Diff reports it.
func Describe(e tree.Entry) string {
	switch e.Kind {
	case tree.KindFile:
		return fmt.Sprintf("file %s %#o %dB %s", e.Path, e.Mode, e.Size, e.Hash.String()[:12])
	case tree.KindSymlink:
		return fmt.Sprintf("symlink %s -> %s", e.Path, e.Target)
	case tree.KindDir:
		return fmt.Sprintf("dir %s %#o", e.Path, e.Mode)
	}
	return "special file " + e.Path
}

// Summary joins differences for a failure message, the first 15 of them.
func Summary(diffs []string) string {
	const show = 15
	if len(diffs) > show {
		return strings.Join(diffs[:show], "\n  ") + fmt.Sprintf("\n  … and %d more", len(diffs)-show)
	}
	return strings.Join(diffs, "\n  ")
}

// TB is the part of testing.TB the helpers need.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// RequireSame fails t unless the tree at root (less skip) is exactly want.
func RequireSame(t TB, root string, skip map[string]bool, want []tree.Entry, context string) {
	t.Helper()
	got, err := Read(root, skip)
	if err != nil {
		t.Fatalf("%s: %v", context, err)
	}
	if d := Diff(want, got); len(d) > 0 {
		t.Fatalf("%s: the tree differs from the expected one in %d ways:\n  %s", context, len(d), Summary(d))
	}
}
