package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/tests/testkit"
)

// A restore that only changes modes fails when the path is gone or cannot be changed, and then
// puts the source tree back (the undo recreates what was missing), instead of reporting success
// with the old modes.
func TestModeOnlyRestoreFailuresPutTheSourceBack(t *testing.T) {
	for name, tc := range map[string]struct {
		build  func(w *testWS, mode uint32)
		damage func(t *testing.T, w *testWS)
		want   error
	}{
		"file removed meanwhile": {
			build:  func(w *testWS, mode uint32) { w.write("f", "content", mode) },
			damage: func(t *testing.T, w *testWS) { w.remove("f") },
			want:   fs.ErrNotExist,
		},
		"directory removed meanwhile": {
			build: func(w *testWS, mode uint32) {
				w.write("d/inner", "inner", 0o644)
				w.mkdir("d", mode)
			},
			damage: func(t *testing.T, w *testWS) { w.remove("d") },
			want:   fs.ErrNotExist,
		},
		"immutable file": {
			build: func(w *testWS, mode uint32) { w.write("f", "content", mode) },
			damage: func(t *testing.T, w *testWS) {
				testkit.Immutable(t, w.abs("f"))
			},
			want: fs.ErrPermission,
		},
		"immutable directory": {
			build: func(w *testWS, mode uint32) {
				w.write("d/inner", "inner", 0o644)
				w.mkdir("d", mode)
			},
			damage: func(t *testing.T, w *testWS) {
				testkit.Immutable(t, w.abs("d"))
			},
			want: fs.ErrPermission,
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := newTestWS(t)
			tc.build(w, 0o755)
			from := w.snapshot()
			w.clear()
			tc.build(w, 0o700)
			to := w.snapshot()
			w.clear()
			tc.build(w, 0o755)
			want := w.live()
			tc.damage(t, w)
			_, err := w.r.Apply(t.Context(), from.Root, to.Root, nil)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "chmod") {
				t.Fatalf("Apply: %v, want a chmod error wrapping %v", err, tc.want)
			}
			var ie *port.IncompleteUndoError
			if errors.As(err, &ie) {
				t.Fatalf("the undo failed: %v", err)
			}
			w.requireTree(want, "after a failed mode-only restore")
			w.requireNoStaging()
		})
	}
}

// A mode-only restore of a workspace file that is a hard link to a file outside the workspace
// replaces the workspace's name with a file of its own: the outside file keeps its mode. Fix: the
// restore chmodded the name in place, which changed the outside file's mode (0600 -> 0755 here).
// A file with no other name is still changed in place (the same inode).
func TestModeOnlyRestoreNeverChmodsAHardLinkedFile(t *testing.T) {
	w := newTestWS(t)
	w.write("linked", "same content\n", 0o755)
	w.write("alone", "alone\n", 0o755)
	to := w.snapshot()
	w.write("alone", "alone\n", 0o644)
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("same content\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(outside, 0o600); err != nil {
		t.Fatal(err)
	}
	w.remove("linked")
	if err := os.Link(outside, w.abs("linked")); err != nil {
		t.Fatal(err)
	}
	aloneBefore, err := os.Stat(w.abs("alone"))
	if err != nil {
		t.Fatal(err)
	}
	from := w.snapshot()
	stats, err := w.r.Apply(t.Context(), from.Root, to.Root, nil)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if stats.Chmods != 2 {
		t.Errorf("Chmods %d, want 2", stats.Chmods)
	}
	fi, err := os.Stat(outside)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("the file outside the workspace has mode %o now, want 600", fi.Mode().Perm())
	}
	in, err := os.Stat(w.abs("linked"))
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(fi, in) {
		t.Error("the workspace's name still holds the outside file")
	}
	if got, _ := os.ReadFile(outside); string(got) != "same content\n" {
		t.Errorf("the outside file holds %q", got)
	}
	aloneAfter, err := os.Stat(w.abs("alone"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(aloneBefore, aloneAfter) {
		t.Error("a file with one name was replaced instead of chmodded in place")
	}
	w.requireTree(w.flatten(to.Root), "after the mode-only restore")
	w.requireNoStaging()
}

// A hard-linked file whose mode the restore must fix is replaced by its stored content: damaged
// content fails the restore, which puts the source back and leaves the other name alone.
func TestModeOnlyRestoreOfALinkedFileWithDamagedContent(t *testing.T) {
	w := newTestWS(t)
	content := string(testkit.Noise(7, 2<<20))
	w.write("linked", content, 0o755)
	w.write("other", content, 0o644)
	to := w.snapshot()
	w.write("linked", content, 0o644)
	w.remove("other")
	if err := os.Link(w.abs("linked"), w.abs("other")); err != nil {
		t.Fatal(err)
	}
	from := w.snapshot()
	want := w.live()
	testkit.DamageStored(t, w.l.Objects()+"/packs", []byte(content))
	if _, err := w.r.Apply(t.Context(), from.Root, to.Root, nil); err == nil || !strings.Contains(err.Error(), `stage "linked"`) {
		t.Fatalf("Apply: %v, want the staging of linked to fail", err)
	}
	w.requireTree(want, "after a failed restore")
	w.requireNoStaging()
}
