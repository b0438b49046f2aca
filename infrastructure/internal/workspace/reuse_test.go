package workspace

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// freshScan scans the workspace with no stat cache at all: every file read, every tree encoded.
func (w *testWS) freshScan() []tree.Entry {
	w.t.Helper()
	aside := w.l.StatCache() + ".aside"
	moved := os.Rename(w.l.StatCache(), aside) == nil
	defer func() {
		if moved {
			if err := os.Rename(aside, w.l.StatCache()); err != nil {
				w.t.Fatal(err)
			}
		}
	}()
	entries, err := w.sc.Scan(w.t.Context(), nil)
	if err != nil {
		w.t.Fatal(err)
	}
	return entries
}

// requireSnapshotExact fails unless the snapshot's tree is what a scan without any cache sees,
// directory hashes included (so a reused tree is the one the directory really has), and what the
// standard library reads.
func (w *testWS) requireSnapshotExact(root tree.Hash, skip map[string]bool, context string) {
	w.t.Helper()
	got := w.flatten(root)
	want := w.freshScan()
	if len(got) != len(want) {
		w.t.Fatalf("%s: the snapshot has %d entries, a fresh scan %d:\n  %s", context, len(got), len(want),
			treetest.Summary(treetest.Diff(want, got)))
	}
	for i := range got {
		if got[i] != want[i] {
			w.t.Fatalf("%s: entry %d: snapshot %+v, fresh scan %+v", context, i, got[i], want[i])
		}
	}
	treetest.RequireSame(w.t, w.root, skip, got, context)
}

// reusedDirs snapshots the workspace and returns the directories whose trees were reused and the
// root hash.
func (w *testWS) reusedDirs() (map[string]bool, tree.Hash) {
	w.t.Helper()
	sc, root, err := w.sc.run(w.t.Context(), nil, true, nil, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	h, err := sc.buildTrees(root)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := sc.batch.Commit(); err != nil {
		w.t.Fatal(err)
	}
	if !root.reused {
		if err := saveStatCache(w.l.StatCache(), encodeNodes(root, root.files, tree.Hash{})); err != nil {
			w.t.Fatal(err)
		}
	}
	out := map[string]bool{}
	var visit func(n *node)
	visit = func(n *node) {
		if n.reused {
			out[n.rel] = true
		}
		for i := range n.children {
			if c := &n.children[i]; c.dir != nil && !c.gone {
				visit(c.dir)
			}
		}
	}
	visit(root)
	return out, h
}

// reuseWS is a small nested workspace whose stat cache is settled (no racy entry left).
func reuseWS(t *testing.T) *testWS {
	w := newTestWS(t)
	w.write("a/x/f1", "one", 0o644)
	w.write("a/x/f2", "two", 0o644)
	w.write("a/y/g", "gee", 0o755)
	w.write("b/h", "aitch", 0o644)
	w.symlink("b/link", "../a/x/f1")
	w.write("top", "top level", 0o600)
	w.mkdir("empty", 0o700)
	w.write(".planignore", "*.log\n", 0o644)
	w.write("b/noise.log", "ignored", 0o644)
	old := time.Now().Add(-time.Hour)
	err := filepath.Walk(w.root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || strings.Contains(p, "/"+StateDir) || fi.Mode()&os.ModeSymlink != 0 {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Observed well after every timestamp (ctime is now): no entry is racy.
	w.sc.clock = func() time.Time { return time.Now().Add(time.Second) }
	w.snapshot()
	w.sc.clock = time.Now
	return w
}

func TestTreeReuseWhenNothingChanged(t *testing.T) {
	w := reuseWS(t)
	reused, h := w.reusedDirs()
	for _, d := range []string{"", "a", "a/x", "a/y", "b", "empty"} {
		if !reused[d] {
			t.Errorf("directory %q was encoded again though nothing in it changed (reused: %v)", d, reused)
		}
	}
	w.requireSnapshotExact(h, map[string]bool{"b/noise.log": true}, "no change")
}

// TestTreeReuseSeesEveryChange: a directory's tree is reused only when nothing in it changed;
// each change below must be recorded, and only the directories on its path encoded again.
func TestTreeReuseSeesEveryChange(t *testing.T) {
	sameSizeSameMtime := func(w *testWS) {
		fi, err := os.Stat(w.abs("a/x/f1"))
		if err != nil {
			t.Fatal(err)
		}
		w.write("a/x/f1", "ONE", 0o644)
		if err := os.Chtimes(w.abs("a/x/f1"), fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name    string
		change  func(w *testWS)
		encoded []string // directories that must be encoded again; all others reused
	}{
		{"same size, mtime restored", sameSizeSameMtime, []string{"", "a", "a/x"}},
		{"new file", func(w *testWS) { w.write("a/y/new", "n", 0o644) }, []string{"", "a", "a/y"}},
		{"file removed", func(w *testWS) { w.remove("a/x/f2") }, []string{"", "a", "a/x"}},
		{"file renamed", func(w *testWS) {
			if err := os.Rename(w.abs("a/x/f2"), w.abs("a/x/f3")); err != nil {
				t.Fatal(err)
			}
		}, []string{"", "a", "a/x"}},
		{"file mode", func(w *testWS) {
			if err := os.Chmod(w.abs("b/h"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, []string{"", "b"}},
		// A directory's mode lives in its parent's listing: the directory itself is reused.
		{"directory mode", func(w *testWS) {
			if err := os.Chmod(w.abs("a/y"), 0o700); err != nil {
				t.Fatal(err)
			}
		}, []string{"", "a"}},
		{"directory replaced by a file", func(w *testWS) {
			w.remove("a/y")
			w.write("a/y", "now a file", 0o644)
		}, []string{"", "a"}},
		{"file replaced by a directory", func(w *testWS) {
			w.remove("top")
			w.write("top/inside", "x", 0o644)
		}, []string{"", "top"}},
		{"symlink retargeted (same length)", func(w *testWS) {
			w.remove("b/link")
			w.symlink("b/link", "../a/x/f2")
		}, []string{"", "b"}},
		{"symlink replaced by a file", func(w *testWS) {
			w.remove("b/link")
			w.write("b/link", "../a/x/f1", 0o644)
		}, []string{"", "b"}},
		{"empty directory gains a file", func(w *testWS) { w.write("empty/f", "", 0o644) }, []string{"", "empty"}},
		// Ignored entries and special files are in no tree: adding one changes nothing.
		{"ignored file added", func(w *testWS) { w.write("a/x/debug.log", "noise", 0o644) }, nil},
		{"special file added", func(w *testWS) { mkfifo(t, w.abs("a/x/fifo")) }, nil},
		{"ignore rule excludes a recorded file", func(w *testWS) {
			w.write(".planignore", "*.log\nf2\n", 0o644)
		}, []string{"", "a", "a/x"}},
		{"ignored file removed", func(w *testWS) { w.remove("b/noise.log") }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := reuseWS(t)
			c.change(w)
			reused, h := w.reusedDirs()
			skip := map[string]bool{"b/noise.log": true, "a/x/debug.log": true, "a/x/fifo": true}
			if strings.HasPrefix(c.name, "ignore rule") {
				skip["a/x/f2"] = true
			}
			w.requireSnapshotExact(h, skip, c.name)
			for _, d := range []string{"", "a", "a/x", "a/y", "b", "empty", "top"} {
				if _, err := os.Lstat(w.abs(d)); err != nil || !dirExists(w, d) {
					continue
				}
				if want := !slices.Contains(c.encoded, d); reused[d] != want {
					t.Errorf("directory %q: reused %v, want %v", d, reused[d], want)
				}
			}
		})
	}
}

func dirExists(w *testWS, rel string) bool {
	fi, err := os.Lstat(w.abs(rel))
	return err == nil && fi.IsDir()
}

// TestTreeReuseAfterRestore: a restore patches the stat cache; the directories it touched are
// encoded again at the next snapshot (their records are no longer exact), the others reused.
func TestTreeReuseAfterRestore(t *testing.T) {
	w := reuseWS(t)
	before := w.snapshot()
	w.write("a/x/f1", "changed", 0o644)
	w.write("b/new", "new", 0o644)
	after := w.snapshot()
	if _, err := w.r.Apply(t.Context(), after.Root, before.Root, nil); err != nil {
		t.Fatal(err)
	}
	reused, h := w.reusedDirs()
	if h != before.Root {
		t.Fatalf("after restoring, the snapshot is %s, want %s", h, before.Root)
	}
	for d, want := range map[string]bool{"": false, "a": false, "a/x": false, "b": false, "a/y": true, "empty": true} {
		if reused[d] != want {
			t.Errorf("directory %q: reused %v, want %v", d, reused[d], want)
		}
	}
	w.requireSnapshotExact(h, map[string]bool{"b/noise.log": true}, "after a restore")
}

// TestSnapshotModel applies random changes, many within one timestamp tick, and checks every
// snapshot against a scan without cache and against the standard library's reading.
func TestSnapshotModel(t *testing.T) {
	w := newTestWS(t)
	r := rand.New(rand.NewPCG(11, 12))
	runModel(t, w, r, 60, func() tree.Hash { return w.snapshot().Root })
}

// runModel makes steps random changes to w, taking a snapshot (with snap) after each, and
// requires each to be exact.
func runModel(t *testing.T, w *testWS, r *rand.Rand, steps int, snap func() tree.Hash) {
	t.Helper()
	dirs := []string{"", "d1", "d1/e", "d2", "d2/f/g"}
	path := func() string {
		d := dirs[r.IntN(len(dirs))]
		return join(d, fmt.Sprintf("n%d", r.IntN(6)))
	}
	for step := range steps {
		for range 1 + r.IntN(6) {
			p := path()
			switch r.IntN(9) {
			case 0, 1, 2: // write, often the same size
				if dirExists(w, p) {
					w.remove(p)
				}
				w.write(p, fmt.Sprintf("v%d", r.IntN(3)), []uint32{0o644, 0o755}[r.IntN(2)])
			case 3:
				w.remove(p)
			case 4:
				if dirExists(w, p) || r.IntN(2) == 0 {
					w.remove(p)
					w.mkdir(p, 0o755)
				}
			case 5:
				w.remove(p)
				w.symlink(p, fmt.Sprintf("t%d", r.IntN(3)))
			case 6:
				if _, err := os.Lstat(w.abs(p)); err == nil {
					if fi, _ := os.Lstat(w.abs(p)); fi.Mode()&os.ModeSymlink == 0 {
						_ = os.Chmod(w.abs(p), []os.FileMode{0o700, 0o755, 0o600}[r.IntN(3)])
					}
				}
			case 7:
				q := path()
				if _, err := os.Lstat(w.abs(p)); err == nil && !strings.HasPrefix(q+"/", p+"/") {
					w.remove(q)
					_ = os.MkdirAll(filepath.Dir(w.abs(q)), 0o755)
					if err := os.Rename(w.abs(p), w.abs(q)); err != nil && err.(*os.LinkError).Err != syscall.ENOTDIR {
						t.Fatal(err)
					}
				}
			case 8: // in place, same size, timestamps put back
				if fi, err := os.Lstat(w.abs(p)); err == nil && fi.Mode().IsRegular() {
					b, _ := os.ReadFile(w.abs(p))
					if len(b) > 0 {
						b[0] ^= 1
						if err := os.WriteFile(w.abs(p), b, 0o600); err != nil {
							t.Fatal(err)
						}
						_ = os.Chtimes(w.abs(p), fi.ModTime(), fi.ModTime())
					}
				}
			}
		}
		h := snap()
		w.requireSnapshotExact(h, nil, fmt.Sprintf("step %d", step))
	}
}
