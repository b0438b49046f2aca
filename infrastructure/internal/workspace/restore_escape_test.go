package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/tests/testkit"
)

// A restore never deletes or creates through a parent that became a symlink (to a directory outside
// the workspace) behind the store's back: removing d/x, or creating d/sub, is refused as a
// conflict, nothing outside changes, and the source tree is put back.
func TestRestoreNeverRemovesOrCreatesThroughASymlinkedParent(t *testing.T) {
	for name, tc := range map[string]struct{ from, to func(w *testWS) }{
		"removal": {
			from: func(w *testWS) { w.write("d/x", "old", 0o644); w.write("keep", "k", 0o644) },
			to:   func(w *testWS) { w.write("keep", "k", 0o644) },
		},
		"new directory": {
			from: func(w *testWS) { w.write("d/x", "old", 0o644) },
			to:   func(w *testWS) { w.write("d/x", "old", 0o644); w.mkdir("d/sub", 0o755) },
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := newTestWS(t)
			outside := t.TempDir()
			if err := os.WriteFile(filepath.Join(outside, "x"), []byte("outside"), 0o644); err != nil {
				t.Fatal(err)
			}
			before := listDir(t, outside)
			tc.from(w)
			from := w.snapshot()
			wantFrom := w.live()
			w.clear()
			tc.to(w)
			to := w.snapshot()
			w.clear()
			tc.from(w)
			w.remove("d")
			w.symlink("d", outside)

			_, err := w.r.Apply(t.Context(), from.Root, to.Root, nil)
			if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "not a directory") {
				t.Fatalf("Apply = %v, want a conflict naming the symlinked parent", err)
			}
			after := listDir(t, outside)
			if len(after) != len(before) || after[filepath.Join(outside, "x")] != "outside" {
				t.Fatalf("the directory outside changed: %v", after)
			}
			// The failed apply put the source tree back (a real directory d).
			w.requireTree(wantFrom, "after the refused apply")
			w.requireNoStaging()
		})
	}
}

// A file the restore must delete but cannot (its directory is immutable) fails the restore with the
// cause, and the undo leaves the workspace as it was.
func TestRestoreThatCannotDeleteRollsBack(t *testing.T) {
	w := newTestWS(t)
	w.write("d/gone", "to be deleted", 0o644)
	w.write("d/mod", "v1", 0o644)
	from := w.snapshot()
	want := w.live()
	w.remove("d/gone")
	w.write("d/mod", "v2", 0o644)
	to := w.snapshot()
	w.clear()
	w.write("d/gone", "to be deleted", 0o644)
	w.write("d/mod", "v1", 0o644)
	testkit.Immutable(t, w.abs("d"))
	_, err := w.r.Apply(t.Context(), from.Root, to.Root, nil)
	if !errors.Is(err, fs.ErrPermission) || !strings.Contains(err.Error(), `remove "d/gone"`) {
		t.Fatalf("Apply = %v", err)
	}
	testkit.Mutable(t, w.abs("d"))
	w.requireTree(want, "after a restore that could not delete")
}

// When the staging area inside .plan cannot be created, the restore fails before it changes the
// first workspace path.
func TestRestoreWithoutStagingTouchesNothing(t *testing.T) {
	w := newTestWS(t)
	w.write("a", "v1", 0o644)
	from := w.snapshot()
	want := w.live()
	w.write("a", "v2", 0o644)
	w.write("b", "new", 0o644)
	to := w.snapshot()
	w.clear()
	w.write("a", "v1", 0o644)
	testkit.Immutable(t, w.l.State())
	if _, err := w.r.Apply(t.Context(), from.Root, to.Root, nil); err == nil || !strings.Contains(err.Error(), "staging") {
		t.Fatalf("Apply without staging: %v", err)
	}
	w.requireTree(want, "after a restore that could not stage")
}

// A restore does not run when the live .planignore cannot be read (here: a symlink): it could not
// tell which paths it must leave alone.
func TestRestoreRefusesAnUnreadableLivePlanignore(t *testing.T) {
	w := newTestWS(t)
	w.write("a", "v1", 0o644)
	from := w.snapshot()
	w.write("a", "v2", 0o644)
	to := w.snapshot()
	w.write("a", "v1", 0o644)
	w.write("elsewhere", "*\n", 0o644)
	w.symlink(IgnoreFile, "elsewhere")
	want := w.live()
	if _, err := w.r.Apply(t.Context(), from.Root, to.Root, nil); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("Apply with a symlinked .planignore: %v", err)
	}
	w.requireTree(want, "after a refused restore")
}

// Staging left by a crashed restore that cannot be cleared stops the next restore before it
// changes anything: staged files of two restores must never mix.
func TestRestoreWithUnclearableStagingTouchesNothing(t *testing.T) {
	w := newTestWS(t)
	w.write("a", "v1", 0o644)
	from := w.snapshot()
	want := w.live()
	w.write("a", "v2", 0o644)
	to := w.snapshot()
	w.write("a", "v1", 0o644)
	staging := filepath.Join(w.root, filepath.FromSlash(w.l.Staging()))
	w.write(w.l.Staging()+"/left-over", "from a crash", 0o644)
	testkit.Immutable(t, staging)
	if _, err := w.r.Apply(t.Context(), from.Root, to.Root, nil); err == nil || !strings.Contains(err.Error(), "clear staging") {
		t.Fatalf("Apply with staging that cannot be cleared: %v", err)
	}
	testkit.Mutable(t, staging)
	w.remove(w.l.Staging())
	w.requireTree(want, "after a restore that could not clear staging")
}
