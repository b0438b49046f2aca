package workspace

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/objectstore"
)

// testWS is a workspace in a temp directory with a real object store, scanner and restorer.
type testWS struct {
	t     *testing.T
	root  string
	l     Layout
	store *objectstore.Store
	sc    *Scanner
	r     *Restorer
}

func newTestWS(t *testing.T) *testWS {
	t.Helper()
	l, err := NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	store, err := objectstore.Open(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	sc := NewScanner(l, store)
	r := NewRestorer(l, store, sc)
	r.Failpoint = func(string) error { return nil } // never read PLAN_FAILPOINT in unit tests
	return &testWS{t: t, root: l.Root, l: l, store: store, sc: sc, r: r}
}

func (w *testWS) abs(rel string) string { return filepath.Join(w.root, filepath.FromSlash(rel)) }

// write creates or replaces a regular file with an exact Unix mode (chmod, so the umask does not
// matter; special bits included).
func (w *testWS) write(rel, content string, mode uint32) {
	w.t.Helper()
	p := w.abs(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Chmod(p, tree.GoMode(mode)); err != nil {
		w.t.Fatal(err)
	}
}

func (w *testWS) mkdir(rel string, mode uint32) {
	w.t.Helper()
	p := w.abs(rel)
	if err := os.MkdirAll(p, 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Chmod(p, tree.GoMode(mode)); err != nil {
		w.t.Fatal(err)
	}
}

func (w *testWS) symlink(rel, target string) {
	w.t.Helper()
	p := w.abs(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		w.t.Fatal(err)
	}
}

func (w *testWS) remove(rel string) {
	w.t.Helper()
	if err := os.RemoveAll(w.abs(rel)); err != nil {
		w.t.Fatal(err)
	}
}

// clear removes everything in the workspace except .plan.
func (w *testWS) clear() {
	w.t.Helper()
	des, err := os.ReadDir(w.root)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, de := range des {
		if de.Name() != StateDir {
			w.remove(de.Name())
		}
	}
}

func (w *testWS) snapshot() application.Snapshot {
	w.t.Helper()
	s, err := w.sc.Snapshot(w.t.Context(), nil)
	if err != nil {
		w.t.Fatalf("Snapshot: %v", err)
	}
	return s
}

func (w *testWS) flatten(h tree.Hash) []tree.Entry {
	w.t.Helper()
	e, err := w.store.Flatten(h)
	if err != nil {
		w.t.Fatalf("Flatten: %v", err)
	}
	return e
}

// live reads the workspace with the standard library only (independently of the scanner): every
// path but .plan and .git, with kind, mode, size, content hash and symlink target.
func (w *testWS) live() []tree.Entry {
	w.t.Helper()
	return readTree(w.t, w.root)
}

func readTree(t testing.TB, root string) []tree.Entry {
	t.Helper()
	var out []tree.Entry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		if d.Name() == StateDir || d.Name() == ".git" {
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
			e.Size = int64(len(e.Target))
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.Kind, e.Size, e.Hash = tree.KindFile, int64(len(b)), sha256.Sum256(b)
		default:
			return nil // special files are not part of a tree
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b tree.Entry) int { return tree.Compare(a.Path, b.Path) })
	return out
}

// treeDiff describes how got differs from want, comparing path, kind, mode, size, content hash and
// symlink target (directories: kind and mode). Empty means equal.
func treeDiff(want, got []tree.Entry) []string {
	var out []string
	for _, c := range tree.Diff(want, got) {
		switch {
		case c.From == nil:
			out = append(out, "unexpected "+describe(*c.To))
		case c.To == nil:
			out = append(out, "missing "+describe(*c.From))
		default:
			out = append(out, fmt.Sprintf("want %s, got %s", describe(*c.From), describe(*c.To)))
		}
	}
	// Same ignores a symlink's mode and a directory's size; compare sizes of files too.
	for i, j := 0, 0; i < len(want) && j < len(got); {
		switch c := tree.Compare(want[i].Path, got[j].Path); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			if want[i].Kind == tree.KindFile && got[j].Kind == tree.KindFile && want[i].Size != got[j].Size {
				out = append(out, fmt.Sprintf("%s: size %d, want %d", want[i].Path, got[j].Size, want[i].Size))
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
		return fmt.Sprintf("file %s %#o %d %s", e.Path, e.Mode, e.Size, e.Hash.String()[:12])
	case tree.KindSymlink:
		return fmt.Sprintf("symlink %s -> %s", e.Path, e.Target)
	}
	return fmt.Sprintf("dir %s %#o", e.Path, e.Mode)
}

// requireTree fails unless the workspace holds exactly want.
func (w *testWS) requireTree(want []tree.Entry, context string) {
	w.t.Helper()
	if d := treeDiff(want, w.live()); len(d) > 0 {
		w.t.Fatalf("%s: the workspace differs from the expected tree:\n  %s", context, strings.Join(d, "\n  "))
	}
}

// requireNoStaging fails if a restore left staged files behind.
func (w *testWS) requireNoStaging() {
	w.t.Helper()
	if _, err := os.Lstat(filepath.Join(w.root, filepath.FromSlash(w.l.Staging()))); err == nil {
		w.t.Error("the staging directory was left behind")
	}
}

// listDir returns the names and contents of everything under dir (for checking a directory
// outside the workspace was not touched).
func listDir(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[p] = string(b)
		} else {
			out[p] = d.Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mkfifo(t testing.TB, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}
