// Package crashtest holds end-to-end tests of plan's rollback guarantees: a model-based random
// workload against the real services (bootstrap.Open), and kill -9 trials against the real binary.
// It has no non-test code.
package crashtest

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
)

// snapshotOf reads a workspace with the standard library only, independently of plan's scanner:
// every path except .plan and .git, with kind, mode, size, SHA-256 and symlink target.
func snapshotOf(t testing.TB, root string) []tree.Entry {
	t.Helper()
	return snapshotExcept(t, root, nil)
}

// snapshotExcept is snapshotOf leaving out the given workspace-relative paths (and what is under
// them): directories the workspace's .planignore excludes.
func snapshotExcept(t testing.TB, root string, skip map[string]bool) []tree.Entry {
	t.Helper()
	var out []tree.Entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		if d.Name() == ".plan" || d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel := filepath.ToSlash(p[len(root)+1:])
		if skip[rel] {
			if d.IsDir() {
				return filepath.SkipDir
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
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.Kind, e.Size, e.Hash = tree.KindFile, int64(len(b)), sha256.Sum256(b)
		default:
			e.Kind = 0 // a special file: reported as a difference by compareTrees
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatalf("read workspace %s: %v", root, err)
	}
	slices.SortFunc(out, func(a, b tree.Entry) int { return tree.Compare(a.Path, b.Path) })
	return out
}

// compareTrees lists how got differs from want: path, kind, mode, size, content hash and symlink
// target (directories: kind and mode). Empty means exactly equal.
func compareTrees(want, got []tree.Entry) []string {
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
			out = append(out, "missing "+describe(want[i]))
			i++
		case c > 0:
			out = append(out, "unexpected "+describe(got[j]))
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
				out = append(out, fmt.Sprintf("want %s, got %s", describe(w), describe(g)))
			}
			i++
			j++
		}
	}
	return out
}

func describe(e tree.Entry) string {
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

func summary(diffs []string) string {
	const show = 15
	if len(diffs) > show {
		return strings.Join(diffs[:show], "\n  ") + fmt.Sprintf("\n  … and %d more", len(diffs)-show)
	}
	return strings.Join(diffs, "\n  ")
}

// requireSame fails unless the workspace at root holds exactly want.
func requireSame(t testing.TB, root string, want []tree.Entry, context string) {
	t.Helper()
	if d := compareTrees(want, snapshotOf(t, root)); len(d) > 0 {
		t.Fatalf("%s: the workspace differs from the expected tree in %d ways:\n  %s", context, len(d), summary(d))
	}
}

// writeFile creates or replaces a regular file with an exact Unix mode, creating parents 0755.
func writeFile(t testing.TB, p string, data []byte, mode uint32) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, tree.GoMode(mode)); err != nil {
		t.Fatal(err)
	}
}
