package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/tests/testkit"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// buildA and buildB lay out two trees that differ in every way a restore must handle.
func buildA(w *testWS) {
	w.write("keep.txt", "same in both", 0o644)
	w.write("mod.txt", "old content", 0o644)
	w.write("modeonly.sh", "#!/bin/sh\necho hi\n", 0o644)
	w.write("gone.txt", "deleted in B", 0o600)
	w.write("f2d", "a file that becomes a directory", 0o644)
	w.write("d2f/a", "a", 0o644)
	w.write("d2f/b/c", "c", 0o644)
	w.symlink("link2file", "keep.txt")
	w.write("file2link", "a file that becomes a symlink", 0o644)
	w.symlink("linkchg", "a")
	w.write("dir2link/x", "x", 0o644)
	w.write("dirmode/inner", "inner", 0o644)
	w.mkdir("dirmode", 0o755)
	w.mkdir("olddir/nested/empty", 0o755)
	w.write("src/pkg/x.go", "package pkg // v1\n", 0o644)
	w.write("src/pkg/y.go", "package pkg\n", 0o644)
	w.write("shrink", strings.Repeat("long ", 1000), 0o644)
	w.write("setuid", "s", 0o4755)
}

func buildB(w *testWS) {
	w.write("keep.txt", "same in both", 0o644)
	w.write("mod.txt", "new content!", 0o644)
	w.write("modeonly.sh", "#!/bin/sh\necho hi\n", 0o755)
	w.write("f2d/inner.txt", "now inside", 0o640)
	w.write("f2d/sub/deeper", "deeper", 0o644)
	w.write("d2f", "a directory that became a file", 0o644)
	w.write("link2file", "a symlink that became a file", 0o644)
	w.symlink("file2link", "keep.txt")
	w.symlink("linkchg", "b")
	w.symlink("dir2link", "keep.txt")
	w.write("dirmode/inner", "inner", 0o644)
	w.mkdir("dirmode", 0o700)
	w.mkdir("newdir/empty", 0o755)
	w.write("new/a/b/c.txt", "brand new", 0o644)
	w.write("a-b", "ordering", 0o644)
	w.write("a/b", "ordering", 0o644)
	w.write("zero", "", 0o644)
	w.write("src/pkg/x.go", "package pkg // v2\n", 0o644)
	w.write("src/pkg/y.go", "package pkg\n", 0o644)
	w.write("shrink", "short", 0o644)
	w.write("setuid", "s", 0o755)
}

// twoTrees records A and B and leaves the workspace holding B.
func twoTrees(t *testing.T) (w *testWS, a, b port.Snapshot, wantA, wantB []tree.Entry) {
	t.Helper()
	w = newTestWS(t)
	buildA(w)
	a = w.snapshot()
	wantA = w.live()
	if d := treetest.Diff(wantA, w.flatten(a.Root)); len(d) > 0 {
		t.Fatalf("snapshot A differs from the workspace: %q", d)
	}
	w.clear()
	buildB(w)
	b = w.snapshot()
	wantB = w.live()
	if d := treetest.Diff(wantB, w.flatten(b.Root)); len(d) > 0 {
		t.Fatalf("snapshot B differs from the workspace: %q", d)
	}
	return w, a, b, wantA, wantB
}

func TestApplyRoundTrip(t *testing.T) {
	w, a, b, wantA, wantB := twoTrees(t)
	ctx := t.Context()
	stats, err := w.r.Apply(ctx, b.Root, a.Root, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.requireTree(wantA, "after Apply B→A")
	w.requireNoStaging()
	if stats.Written == 0 || stats.Removed == 0 || stats.Dirs == 0 || stats.Chmods == 0 || len(stats.Kept) != 0 {
		t.Errorf("stats %+v", stats)
	}
	// The restored workspace snapshots to exactly the target root, storing nothing new.
	if s := w.snapshot(); s.Root != a.Root || s.StoredBytes != 0 {
		t.Errorf("snapshot after restore: same root %v, stored %d", s.Root == a.Root, s.StoredBytes)
	}
	if _, err := w.r.Apply(ctx, a.Root, b.Root, nil); err != nil {
		t.Fatal(err)
	}
	w.requireTree(wantB, "after Apply A→B")
	if s := w.snapshot(); s.Root != b.Root {
		t.Error("snapshot after restoring B is not B")
	}
	// Applying a tree onto itself changes nothing.
	stats, err = w.r.Apply(ctx, b.Root, b.Root, nil)
	if err != nil || stats.Written+stats.Removed+stats.Dirs+stats.Chmods != 0 {
		t.Errorf("no-op apply: %+v, %v", stats, err)
	}
	w.requireTree(wantB, "after a no-op apply")
}

func TestReconcileFromAnyState(t *testing.T) {
	w, a, b, wantA, wantB := twoTrees(t)
	ctx := t.Context()
	// A mess: part of A, part of B, junk, wrong modes.
	w.remove("mod.txt")
	w.remove("f2d")
	w.write("f2d", "junk", 0o600)
	w.write("junk/deep/file", "junk", 0o644)
	w.mkdir("junkdir", 0o700)
	if err := os.Chmod(w.abs("keep.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.remove("linkchg")
	w.symlink("linkchg", "elsewhere")
	if _, err := w.r.Reconcile(ctx, a.Root); err != nil {
		t.Fatal(err)
	}
	w.requireTree(wantA, "Reconcile(A) from a mixed state")
	stats, err := w.r.Reconcile(ctx, a.Root)
	if err != nil || stats.Written+stats.Removed+stats.Dirs+stats.Chmods != 0 {
		t.Errorf("second Reconcile(A) did something: %+v, %v", stats, err)
	}
	w.clear()
	if _, err := w.r.Reconcile(ctx, b.Root); err != nil {
		t.Fatal(err)
	}
	w.requireTree(wantB, "Reconcile(B) from an empty workspace")
	emptyRoot, _, err := objectstore.HashTree(nil)
	if err != nil {
		t.Fatal(err)
	}
	bt := w.store.NewBatch()
	if _, _, err := bt.PutTree(nil); err != nil {
		t.Fatal(err)
	}
	if err := bt.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.r.Reconcile(ctx, emptyRoot); err != nil {
		t.Fatal(err)
	}
	w.requireTree(nil, "Reconcile(empty tree)")
	if _, err := os.Stat(w.l.State()); err != nil {
		t.Fatalf(".plan removed by a restore: %v", err)
	}
}

// TestRestoreRandomTrees restores between random trees, many times.
func TestRestoreRandomTrees(t *testing.T) {
	w := newTestWS(t)
	r := rand.New(rand.NewPCG(11, 12))
	type rec struct {
		root tree.Hash
		want []tree.Entry
	}
	var recs []rec
	for range 8 {
		w.clear()
		randomWorkspace(w, r)
		s := w.snapshot()
		recs = append(recs, rec{s.Root, w.live()})
	}
	cur := len(recs) - 1
	for i := range 40 {
		next := r.IntN(len(recs))
		var err error
		if i%3 == 0 {
			_, err = w.r.Reconcile(t.Context(), recs[next].root)
		} else {
			_, err = w.r.Apply(t.Context(), recs[cur].root, recs[next].root, nil)
		}
		if err != nil {
			t.Fatalf("step %d: %d→%d: %v", i, cur, next, err)
		}
		w.requireTree(recs[next].want, fmt.Sprintf("step %d: %d→%d", i, cur, next))
		cur = next
	}
}

// randomWorkspace fills the workspace with a random tree over a small name space, so that trees
// collide on paths with different kinds.
func randomWorkspace(w *testWS, r *rand.Rand) {
	names := []string{"a", "b", "a-b", "a.b", "c"}
	fileModes := []uint32{0o644, 0o755, 0o600, 0o400}
	dirModes := []uint32{0o755, 0o700, 0o750}
	var fill func(dir string, depth int)
	fill = func(dir string, depth int) {
		for _, n := range names {
			p := n
			if dir != "" {
				p = dir + "/" + n
			}
			switch r.IntN(6) {
			case 0, 1:
				w.write(p, strings.Repeat(string(rune('a'+r.IntN(3))), r.IntN(3)*r.IntN(2000)), fileModes[r.IntN(len(fileModes))])
			case 2:
				w.symlink(p, []string{"a", "../a", "/nonexistent", "b/c"}[r.IntN(4)])
			case 3:
				if depth < 3 {
					w.mkdir(p, 0o755)
					fill(p, depth+1)
					w.mkdir(p, dirModes[r.IntN(len(dirModes))])
				}
			}
		}
	}
	fill("", 0)
}

func TestRestoreNeverWritesThroughASymlink(t *testing.T) {
	w := newTestWS(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "victim"), []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := listDir(t, outside)

	// Target: d is a real directory with content.
	w.write("d/x", "payload", 0o644)
	w.write("d/sub/y", "payload", 0o644)
	w.write("e/keep", "keep", 0o644)
	target := w.snapshot()
	want := w.live()

	// Live: d is a symlink to a directory outside the workspace.
	w.remove("d")
	w.symlink("d", outside)
	if _, err := w.r.Reconcile(t.Context(), target.Root); err != nil {
		t.Fatal(err)
	}
	w.requireTree(want, "after Reconcile over d -> outside")
	if fi, err := os.Lstat(w.abs("d")); err != nil || !fi.IsDir() {
		t.Fatalf("d is not a real directory: %v %v", fi, err)
	}
	if after := listDir(t, outside); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the directory outside the workspace changed:\nbefore %v\nafter  %v", before, after)
	}

	// Live: d is a symlink to another directory inside the workspace.
	w.remove("d")
	w.symlink("d", "e")
	if _, err := w.r.Reconcile(t.Context(), target.Root); err != nil {
		t.Fatal(err)
	}
	w.requireTree(want, "after Reconcile over d -> e")
}

func TestApplyRefusesASymlinkedParent(t *testing.T) {
	w := newTestWS(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "x"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.write("d/x", "old", 0o644)
	from := w.snapshot()
	wantFrom := w.live()
	w.write("d/x", "new", 0o644)
	to := w.snapshot()
	// Put the source back, then swap d for a symlink behind the store's back: the stored diff
	// (d/x modified) would write through it.
	w.write("d/x", "old", 0o644)
	w.remove("d")
	w.symlink("d", outside)

	_, err := w.r.Apply(t.Context(), from.Root, to.Root, nil)
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Apply = %v, want a conflict naming the symlinked parent", err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "x")); string(b) != "outside" {
		t.Fatalf("wrote through the symlink: outside/x = %q", b)
	}
	// The failed apply put the source tree back.
	w.requireTree(wantFrom, "after the refused apply")
	w.requireNoStaging()
}

func TestCheckParents(t *testing.T) {
	w := newTestWS(t)
	w.mkdir("real/dir", 0o755)
	w.symlink("link", "real")
	w.write("file", "f", 0o644)
	root, err := os.OpenRoot(w.root)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	a := &applier{root: root, verified: map[string]bool{}}
	if err := a.checkParents("real/dir/x"); err != nil {
		t.Errorf("real parents: %v", err)
	}
	if !a.verified["real"] || !a.verified["real/dir"] {
		t.Errorf("verified %v", a.verified)
	}
	if err := a.checkParents("top-level"); err != nil {
		t.Errorf("no parents: %v", err)
	}
	for _, p := range []string{"link/x", "link/dir/x", "file/x"} {
		if err := a.checkParents(p); !errors.Is(err, fault.ErrConflict) {
			t.Errorf("checkParents(%q) = %v, want ErrConflict", p, err)
		}
	}
	if err := a.checkParents("missing/x"); err == nil || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing parent: %v", err)
	}
}

// craftTree stores raw bytes as an object and returns its name: the store does not care what a blob
// holds, so this is how a damaged or malicious tree encoding gets into a store.
func craftTree(t *testing.T, s *objectstore.Store, raw []byte) tree.Hash {
	t.Helper()
	h := sha256.Sum256(raw)
	b := s.NewBatch()
	if _, err := b.PutBlob(bytes.NewReader(raw), h, int64(len(raw))); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestRestoreRefusesEscapingPaths(t *testing.T) {
	w := newTestWS(t)
	w.write("victim", "keep me", 0o644)
	before := w.live()
	content := sha256.Sum256([]byte("x"))
	good, err := objectstore.EncodeTree(objectstore.Tree{{Name: "xx", Kind: tree.KindFile, Mode: 0o644, Size: 1, Hash: content}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"..", "./", "/x", "a\x00"} {
		bad := bytes.Replace(bytes.Clone(good), []byte("xx"), []byte(name[:2]), 1)
		badRoot := craftTree(t, w.store, bad)
		if _, err := w.store.Flatten(badRoot); !errors.Is(err, fault.ErrIntegrity) {
			t.Errorf("%q: Flatten = %v, want ErrIntegrity", name, err)
		}
		if _, err := w.r.Reconcile(t.Context(), badRoot); !errors.Is(err, fault.ErrIntegrity) {
			t.Errorf("%q: Reconcile = %v, want ErrIntegrity", name, err)
		}
		// The bad name nested one level down is refused too.
		outer, err := objectstore.EncodeTree(objectstore.Tree{{Name: "sub", Kind: tree.KindDir, Mode: 0o755, Hash: badRoot}})
		if err != nil {
			t.Fatal(err)
		}
		nested := craftTree(t, w.store, outer)
		if _, err := w.r.Reconcile(t.Context(), nested); !errors.Is(err, fault.ErrIntegrity) {
			t.Errorf("%q nested: Reconcile = %v, want ErrIntegrity", name, err)
		}
	}
	w.requireTree(before, "after refusing damaged trees")

	// Defence in depth: even a change list naming an escaping path is refused before any write.
	parent := filepath.Dir(w.root)
	for _, p := range []string{"../escaped", "/tmp/escaped", "a/../../escaped", "", "ok/./x"} {
		e := tree.Entry{Path: p, Kind: tree.KindFile, Mode: 0o644, Size: 1, Hash: content}
		_, touched, err := w.r.apply(t.Context(), []tree.Change{{Path: p, Type: tree.Added, To: &e}}, nil, noFailpoint)
		if !errors.Is(err, fault.ErrIntegrity) || touched {
			t.Errorf("apply(%q) = touched %v, %v; want untouched, ErrIntegrity", p, touched, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(parent, "escaped")); err == nil {
		t.Fatal("a file was written outside the workspace")
	}
	w.requireTree(before, "after refusing escaping paths")
}

func TestRestoreMissingObjectTouchesNothing(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "current", 0o644)
	before := w.live()
	missing := sha256.Sum256([]byte("content the store never saw"))
	enc, err := objectstore.EncodeTree(objectstore.Tree{
		{Name: "f", Kind: tree.KindFile, Mode: 0o644, Size: 9, Hash: missing},
		{Name: "g", Kind: tree.KindFile, Mode: 0o644, Size: 1, Hash: sha256.Sum256([]byte("g"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	root := craftTree(t, w.store, enc)
	if _, err := w.r.Reconcile(t.Context(), root); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("Reconcile = %v, want ErrIntegrity", err)
	}
	w.requireTree(before, "after a restore that needed a missing object")
	w.requireNoStaging()
}

func TestRestoreKeepsIgnoredData(t *testing.T) {
	w := newTestWS(t)
	w.write("p", "stored", 0o644)
	w.write("dir/tracked", "t", 0o644)
	target := w.snapshot()

	// Now p and dir/*.log are ignored, and hold data that is in no snapshot.
	w.write(IgnoreFile, "p\n*.log\n", 0o644)
	w.write("p", "precious", 0o644)
	w.write("dir/build.log", "precious log", 0o644)
	w.remove("dir/tracked")
	stats, err := w.r.Reconcile(t.Context(), target.Root)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(w.abs("p")); string(b) != "precious" {
		t.Errorf("ignored file p overwritten with %q", b)
	}
	if b, _ := os.ReadFile(w.abs("dir/build.log")); string(b) != "precious log" {
		t.Errorf("ignored dir/build.log = %q", b)
	}
	if len(stats.Kept) != 1 || stats.Kept[0] != "p" {
		t.Errorf("Kept = %q, want [p]", stats.Kept)
	}
	if b, _ := os.ReadFile(w.abs("dir/tracked")); string(b) != "t" {
		t.Errorf("dir/tracked not restored: %q", b)
	}

	// A directory the target does not have is kept while it holds ignored files.
	w.write("gone/x.log", "log", 0o644)
	w.write("gone/tracked", "t", 0o644)
	w.remove(IgnoreFile)
	w.write(IgnoreFile, "*.log\n", 0o644)
	withGone := w.snapshot()
	w.remove("gone/tracked")
	stats, err = w.r.Apply(t.Context(), withGone.Root, target.Root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(w.abs("gone/x.log")); string(b) != "log" {
		t.Errorf("ignored file in a removed directory lost: %q", b)
	}
	if !strings.Contains(strings.Join(stats.Kept, ","), "gone") {
		t.Errorf("Kept = %q, want gone", stats.Kept)
	}
}

func TestRestoreRefusesReplacingDirectoryWithIgnoredFiles(t *testing.T) {
	w := newTestWS(t)
	w.write("x", "x is a file", 0o644)
	fileTree := w.snapshot()
	w.remove("x")
	w.write(IgnoreFile, "*.log\n", 0o644)
	w.write("x/tracked", "t", 0o644)
	w.write("x/data.log", "ignored", 0o644)
	dirTree := w.snapshot()
	want := w.live()
	_, err := w.r.Apply(t.Context(), dirTree.Root, fileTree.Root, nil)
	if !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("Apply = %v, want ErrConflict", err)
	}
	w.requireTree(want, "after the refused replacement")
	if b, _ := os.ReadFile(w.abs("x/data.log")); string(b) != "ignored" {
		t.Errorf("ignored file = %q", b)
	}
}

func TestApplyFailureRestoresSource(t *testing.T) {
	for _, fp := range []string{"restore.staged", "restore.removed", "restore.write", "restore.applied"} {
		t.Run(fp, func(t *testing.T) {
			w, a, b, _, wantB := twoTrees(t)
			var hits []string
			w.r.Failpoint = func(name string) error {
				hits = append(hits, name)
				if name == fp {
					return errors.New("injected failure at " + name)
				}
				return nil
			}
			_, err := w.r.Apply(t.Context(), b.Root, a.Root, nil)
			if err == nil || !strings.Contains(err.Error(), fp) {
				t.Fatalf("Apply = %v, want the injected failure", err)
			}
			var ie *port.IncompleteUndoError
			if errors.As(err, &ie) {
				t.Fatalf("undo failed: %v", err)
			}
			w.requireTree(wantB, "after a failed apply")
			w.requireNoStaging()
			if s := w.snapshot(); s.Root != b.Root {
				t.Error("the workspace does not snapshot to the source tree")
			}
		})
	}
}

func TestApplyIncompleteUndo(t *testing.T) {
	w, a, b, _, wantB := twoTrees(t)
	// Once the forward pass has removed what A does not have, make the workspace root immutable:
	// the forward pass fails, and so does the undo, which must put root-level files back.
	var armed bool
	w.r.Failpoint = func(name string) error {
		if name == "restore.removed" && !armed {
			armed = true
			testkit.Immutable(t, w.root)
			return errors.New("injected failure after removals")
		}
		return nil
	}
	_, err := w.r.Apply(t.Context(), b.Root, a.Root, nil)
	var ie *port.IncompleteUndoError
	if !errors.As(err, &ie) {
		t.Fatalf("Apply = %v, want *IncompleteUndoError", err)
	}
	if ie.Cause == nil || !errors.Is(ie.Undo, fs.ErrPermission) {
		t.Errorf("causes: %+v", ie)
	}
	// Once the cause is gone, recovery (Reconcile to the source) completes the undo.
	testkit.Mutable(t, w.root)
	if _, err := w.r.Reconcile(t.Context(), b.Root); err != nil {
		t.Fatal(err)
	}
	w.requireTree(wantB, "after recovering the incomplete undo")
}

// TestFailpointsFireOnTheForwardPassOnly: Reconcile (recovery) hits the failpoints; the undo inside a
// failed Apply does not, so an injected error is undone in process.
func TestFailpointsFireOnTheForwardPassOnly(t *testing.T) {
	w, a, b, _, wantB := twoTrees(t)
	var hits []string
	w.r.Failpoint = func(name string) error {
		hits = append(hits, name)
		if name == "restore.write" {
			return errors.New("injected")
		}
		return nil
	}
	if _, err := w.r.Apply(t.Context(), b.Root, a.Root, nil); err == nil {
		t.Fatal("Apply succeeded")
	}
	if strings.Join(hits, ",") != "restore.staged,restore.removed,restore.write" {
		t.Errorf("failpoints hit: %v", hits)
	}
	w.requireTree(wantB, "after the undone apply")
	hits = nil
	if _, err := w.r.Reconcile(t.Context(), a.Root); err == nil || len(hits) != 3 {
		t.Errorf("Reconcile: %v, hits %v", err, hits)
	}
}

func TestApplyCancelledBeforeTouching(t *testing.T) {
	w, a, b, _, wantB := twoTrees(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := w.r.Apply(ctx, b.Root, a.Root, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply = %v, want context.Canceled", err)
	}
	w.requireTree(wantB, "after a cancelled apply")
}

func TestApplyImmutableFileRollsBack(t *testing.T) {
	w, a, b, _, wantB := twoTrees(t)
	target := w.abs("mod.txt") // B→A rewrites it
	testkit.Immutable(t, target)
	_, err := w.r.Apply(t.Context(), b.Root, a.Root, nil)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Apply over an immutable file = %v, want a permission error", err)
	}
	var ie *port.IncompleteUndoError
	if errors.As(err, &ie) {
		t.Fatalf("undo failed: %v", err)
	}
	w.requireTree(wantB, "after a failed apply over an immutable file")
	w.requireNoStaging()
}

func TestRestoreRecordsStatCache(t *testing.T) {
	w, a, b, _, _ := twoTrees(t)
	if _, err := w.r.Apply(t.Context(), b.Root, a.Root, nil); err != nil {
		t.Fatal(err)
	}
	c := cacheFiles(t, w.l.StatCache())
	for _, e := range w.flatten(a.Root) {
		if e.Path == "modeonly.sh" || e.Path == "setuid" {
			// Only their modes changed: the restore did not write their content, so no stat it
			// took vouches for it; the next snapshot reads them.
			if _, ok := c[e.Path]; ok {
				t.Errorf("stat cache vouches for %s, whose content the restore did not write", e.Path)
			}
			continue
		}
		if e.Kind != tree.KindFile {
			if _, ok := c[e.Path]; ok {
				t.Errorf("stat cache has a file entry for %s, a %s", e.Path, e.Kind)
			}
			continue
		}
		ce, ok := c[e.Path]
		if !ok {
			t.Errorf("no stat cache entry for restored %s", e.Path)
			continue
		}
		fi, err := os.Lstat(w.abs(e.Path))
		if err != nil {
			t.Fatal(err)
		}
		k, _ := keyOf(fi)
		if ce.key != k || ce.hash != e.Hash {
			t.Errorf("%s: cache %+v, file key %+v hash %s", e.Path, ce, k, e.Hash)
		}
	}
	for _, gone := range []string{"f2d/inner.txt", "new/a/b/c.txt", "zero", "d2f"} {
		if _, ok := c[gone]; ok {
			t.Errorf("stat cache still lists removed %s", gone)
		}
	}
}

// TestSnapshotAfterRestoreSeesEdits: the stat cache entries a restore records must never hide an
// edit made right after the restore, even one that keeps the size and lands in the same timestamp
// tick. (The restore records them racy, so the first snapshot after a rollback re-reads restored
// files: the safe side of git's racy-clean rule.)
func TestSnapshotAfterRestoreSeesEdits(t *testing.T) {
	w, a, b, _, _ := twoTrees(t)
	if _, err := w.r.Apply(t.Context(), b.Root, a.Root, nil); err != nil {
		t.Fatal(err)
	}
	// "old content" is what A holds; overwrite in place with the same size, keep the mtime.
	fi, err := os.Stat(w.abs("mod.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.abs("mod.txt"), []byte("OLD CONTENT"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(w.abs("mod.txt"), fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	s := w.snapshot()
	if got := entryOf(t, w.flatten(s.Root), "mod.txt"); got.Hash != sha256.Sum256([]byte("OLD CONTENT")) {
		t.Fatal("an edit right after a restore was hidden by the stat cache")
	}
}

func TestApplyReportsProgress(t *testing.T) {
	w, a, b, _, _ := twoTrees(t)
	var want int64
	changes, err := w.store.DiffTrees(b.Root, a.Root)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		if needsContent(c) && c.To.Kind == tree.KindFile {
			want += c.To.Size
		}
	}
	p := &countingProgress{}
	if _, err := w.r.Apply(t.Context(), b.Root, a.Root, p); err != nil {
		t.Fatal(err)
	}
	if p.starts != 1 || p.done != 1 || p.total != want || p.added != want {
		t.Errorf("progress %d/%d (%d starts), want %d bytes", p.added, p.total, p.starts, want)
	}
}

// TestApplyRefusesModeChangesOnTheWrongKind: the stored trees say "same content, new mode", but the
// live path is not what they say it is. The restorer must not chmod through a symlink.
func TestApplyRefusesModeChangesOnTheWrongKind(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(outside, []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		path     string
		from, to func(w *testWS)
		swap     func(w *testWS)
	}{
		{
			name: "file mode over a symlink", path: "f",
			from: func(w *testWS) { w.write("f", "x", 0o600) },
			to:   func(w *testWS) { w.write("f", "x", 0o755) },
			swap: func(w *testWS) { w.remove("f"); w.symlink("f", outside) },
		},
		{
			name: "dir mode over a file", path: "d",
			from: func(w *testWS) { w.mkdir("d", 0o755) },
			to:   func(w *testWS) { w.mkdir("d", 0o700) },
			swap: func(w *testWS) { w.remove("d"); w.write("d", "not a dir", 0o644) },
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newTestWS(t)
			c.from(w)
			from := w.snapshot()
			wantFrom := w.live()
			c.to(w)
			to := w.snapshot()
			w.clear()
			c.from(w)
			c.swap(w)
			_, err := w.r.Apply(t.Context(), from.Root, to.Root, nil)
			if !errors.Is(err, fault.ErrConflict) {
				t.Fatalf("Apply = %v, want ErrConflict", err)
			}
			if fi, err := os.Stat(outside); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("chmod went through a symlink: %v %v", fi.Mode(), err)
			}
			w.requireTree(wantFrom, "after the refused mode change")
		})
	}
}

// putTree stores a hand-built tree (and the blob it names) and returns its hash.
func putTree(t *testing.T, s *objectstore.Store, tr objectstore.Tree, blobs ...[]byte) tree.Hash {
	t.Helper()
	b := s.NewBatch()
	for _, blob := range blobs {
		if _, err := b.PutBlob(bytes.NewReader(blob), sha256.Sum256(blob), int64(len(blob))); err != nil {
			t.Fatal(err)
		}
	}
	h, _, err := b.PutTree(tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestRestoreNeverTouchesPlanOrGitDirectories: no snapshot holds .plan (at any depth) or the
// workspace's own .git, so a tree naming them is damaged or crafted; restoring it must not write
// into (or remove from) the state directory or the workspace's repository.
func TestRestoreNeverTouchesPlanOrGitDirectories(t *testing.T) {
	w := newTestWS(t)
	w.write("sub/.git/HEAD", "ref: refs/heads/main\n", 0o644)
	w.write("keep", "k", 0o644)
	before := w.live()
	dbBefore, _ := os.ReadFile(w.l.Database())
	hook := []byte("#!/bin/sh\necho owned\n")
	hookTree := putTree(t, w.store, objectstore.Tree{{Name: "pre-commit", Kind: tree.KindFile, Mode: 0o755, Size: int64(len(hook)), Hash: sha256.Sum256(hook)}}, hook)
	gitDir := putTree(t, w.store, objectstore.Tree{{Name: "hooks", Kind: tree.KindDir, Mode: 0o755, Hash: hookTree}})
	for _, name := range []string{StateDir, ".git"} {
		for _, nested := range []bool{false, true} {
			if name == ".git" && nested {
				continue // a nested .git is workspace content: TestNestedGitIsRecordedAndRestored
			}
			root := putTree(t, w.store, objectstore.Tree{
				{Name: name, Kind: tree.KindDir, Mode: 0o755, Hash: gitDir},
				{Name: "keep", Kind: tree.KindFile, Mode: 0o644, Size: 1, Hash: sha256.Sum256([]byte("k"))},
			})
			if nested {
				root = putTree(t, w.store, objectstore.Tree{
					{Name: "keep", Kind: tree.KindFile, Mode: 0o644, Size: 1, Hash: sha256.Sum256([]byte("k"))},
					{Name: "sub", Kind: tree.KindDir, Mode: 0o755, Hash: root},
				})
			}
			_, err := w.r.Reconcile(t.Context(), root)
			if !errors.Is(err, fault.ErrIntegrity) {
				t.Errorf("%s (nested %v): Reconcile = %v, want ErrIntegrity", name, nested, err)
			}
			for _, p := range []string{name + "/hooks/pre-commit", "sub/" + name + "/hooks/pre-commit"} {
				if _, err := os.Lstat(w.abs(p)); err == nil {
					t.Fatalf("%s was written", p)
				}
			}
		}
	}
	w.requireTree(before, "after refusing trees that name .git or .plan")
	if b, _ := os.ReadFile(w.abs("sub/.git/HEAD")); string(b) != "ref: refs/heads/main\n" {
		t.Error("sub/.git/HEAD changed")
	}
	if dbAfter, _ := os.ReadFile(w.l.Database()); !bytes.Equal(dbBefore, dbAfter) {
		t.Error(".plan changed")
	}
}

// Unrecorded names exactly the live paths that hold a state neither tree has: new files, edits,
// a new empty directory, a retargeted symlink and a mode change; paths in either tree's state,
// and paths either tree has that are gone from the workspace, are not named.
func TestUnrecorded(t *testing.T) {
	w := newTestWS(t)
	w.write("a.txt", "v1\n", 0o644)
	w.write("same.txt", "same\n", 0o644)
	w.write("mode.sh", "#!/bin/sh\n", 0o644)
	w.symlink("link", "a.txt")
	w.mkdir("dir", 0o755)
	src := w.snapshot().Root
	w.write("a.txt", "v2\n", 0o644)
	w.remove("same.txt")
	dst := w.snapshot().Root

	if got, err := w.r.Unrecorded(context.Background(), src, dst); err != nil || len(got) != 0 {
		t.Fatalf("workspace at the target: %v, %v", got, err)
	}
	w.write("a.txt", "v1\n", 0o644) // back at the source's version: recorded
	w.write("same.txt", "same\n", 0o644)
	if got, err := w.r.Unrecorded(context.Background(), src, dst); err != nil || len(got) != 0 {
		t.Fatalf("workspace part-way between the trees: %v, %v", got, err)
	}
	w.write("a.txt", "edited after the crash\n", 0o644)
	w.write("new-work.txt", "precious\n", 0o644)
	w.mkdir("dir/newdir", 0o755)
	w.remove("link")
	w.symlink("link", "elsewhere")
	if err := os.Chmod(w.abs("mode.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.remove("same.txt")
	got, err := w.r.Unrecorded(context.Background(), src, dst)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.txt", "dir/newdir", "link", "mode.sh", "new-work.txt"}
	if !slices.Equal(got, want) {
		t.Fatalf("Unrecorded = %v, want %v", got, want)
	}
	if _, err := w.r.Unrecorded(context.Background(), src, tree.Sum([]byte("no such tree"))); err == nil {
		t.Fatal("a tree that cannot be read must fail the comparison, not pass it")
	}
}

// A nested repository (vendor/lib/.git) is workspace content: recorded, and restored after a
// decision destroyed it. record_nested_git: false in .plan/config.yaml leaves it out.
func TestNestedGitIsRecordedAndRestored(t *testing.T) {
	w := newTestWS(t)
	w.write("vendor/lib/.git/HEAD", "ref: refs/heads/main\n", 0o644)
	w.write("vendor/lib/.git/objects/ab/cdef", "object", 0o444)
	w.write("vendor/lib/code.go", "package lib\n", 0o644)
	w.write(".git/HEAD", "the workspace's own repository\n", 0o644)
	before := w.live()
	snap := w.snapshot()
	if _, err := w.store.ReadTree(snap.Root); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range w.flatten(snap.Root) {
		names = append(names, e.Path)
	}
	if !slices.Contains(names, "vendor/lib/.git/objects/ab/cdef") || slices.Contains(names, ".git/HEAD") {
		t.Fatalf("recorded %v: want the nested repository and not the top one", names)
	}
	if err := os.RemoveAll(w.abs("vendor")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.r.Reconcile(t.Context(), snap.Root); err != nil {
		t.Fatal(err)
	}
	w.requireTree(before, "after restoring a destroyed nested repository")

	if err := os.WriteFile(filepath.Join(w.l.State(), "config.yaml"), []byte("record_nested_git: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, e := range w.flatten(w.snapshot().Root) {
		if strings.Contains(e.Path, ".git") {
			t.Fatalf("record_nested_git: false still recorded %s", e.Path)
		}
	}
	if err := os.WriteFile(filepath.Join(w.l.State(), "config.yaml"), []byte("record_nested_git: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := w.sc.Snapshot(t.Context(), nil); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("a malformed config.yaml: %v", err)
	}
}

// A sparse file comes back sparse, byte-exact: holes are skipped, not written as zeros, including
// a hole at the end.
func TestRestoreKeepsHoles(t *testing.T) {
	w := newTestWS(t)
	const size = 64 << 20
	for _, name := range []string{"sparse-end", "sparse-middle"} {
		f, err := os.Create(w.abs(name))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("start"), 0)
		f.WriteAt([]byte("middle"), size/2+5)
		if name == "sparse-middle" {
			f.WriteAt([]byte("end"), size-3)
		}
		f.Close()
	}
	w.write("small-zeros", string(make([]byte, 1000)), 0o644)
	before := w.live()
	snap := w.snapshot()
	for _, name := range []string{"sparse-end", "sparse-middle", "small-zeros"} {
		w.remove(name)
	}
	if _, err := w.r.Reconcile(t.Context(), snap.Root); err != nil {
		t.Fatal(err)
	}
	w.requireTree(before, "after restoring sparse files")
	for _, name := range []string{"sparse-end", "sparse-middle"} {
		var st syscall.Stat_t
		if err := syscall.Stat(w.abs(name), &st); err != nil {
			t.Fatal(err)
		}
		if used := st.Blocks * 512; used > 1<<20 {
			t.Errorf("%s: %d bytes allocated for a %d-byte file with three written pages", name, used, size)
		}
	}
}

// Two entries one directory holds under names that differ only in case are what a
// case-insensitive file system would merge; they are found, wherever they are.
func TestCaseCollisions(t *testing.T) {
	got := caseCollisions([]string{"README.md", "Readme.md", "docs", "docs/A", "docs/a", "docs/b", "other/README.md", "x"})
	want := [][2]string{{"README.md", "Readme.md"}, {"docs/A", "docs/a"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("caseCollisions = %v, want %v", got, want)
	}
	if got := caseCollisions([]string{"a/B", "b/B", "B"}); len(got) != 0 {
		t.Fatalf("the same name in different directories is no collision: %v", got)
	}
}

// On a file system that ignores case the restorer refuses such a tree before touching anything;
// a case-only rename (Readme.md to README.md) is restored as any rename. Linux file systems here
// are case-sensitive, so the probe is replaced to exercise the path a Mac takes.
func TestRestoreOnACaseInsensitiveFileSystem(t *testing.T) {
	w := newTestWS(t)
	if foldsCase(w.l.State()) {
		t.Log("this file system ignores case")
	}
	w.write("Readme.md", "old\n", 0o644)
	before := w.snapshot().Root
	w.remove("Readme.md")
	w.write("README.md", "new\n", 0o644)
	after := w.snapshot().Root
	w.r.foldsCase = func() bool { return true }
	if _, err := w.r.Reconcile(t.Context(), before); err != nil {
		t.Fatalf("a case-only rename: %v", err)
	}
	if b, err := os.ReadFile(w.abs("Readme.md")); err != nil || string(b) != "old\n" {
		t.Fatalf("Readme.md after the rollback: %q, %v", b, err)
	}
	w.write("README.md", "second\n", 0o644) // both names, as a case-sensitive machine may record
	both := w.snapshot().Root
	w.remove("README.md")
	live := w.live()
	_, err := w.r.Reconcile(t.Context(), both)
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "cannot tell apart") {
		t.Fatalf("restoring both names: %v", err)
	}
	w.requireTree(live, "after refusing a tree that collides in case")
	if _, err := w.r.Apply(t.Context(), after, both, nil); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("Apply of a colliding tree: %v", err)
	}
}
