package workspace

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/tests/testkit/treetest"
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

func (w *testWS) snapshot() port.Snapshot {
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

// requireTree fails unless the workspace holds exactly want.
func (w *testWS) requireTree(want []tree.Entry, context string) {
	w.t.Helper()
	treetest.RequireSame(w.t, w.root, nil, want, context)
}

// readTree reads root with the standard library only (see package treetest).
func readTree(t testing.TB, root string) []tree.Entry {
	t.Helper()
	entries, err := treetest.Read(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	return entries
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
