package workspace

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/planhq/plan/application"
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
			var ie *application.IncompleteUndoError
			if errors.As(err, &ie) {
				t.Fatalf("the undo failed: %v", err)
			}
			w.requireTree(want, "after a failed mode-only restore")
			w.requireNoStaging()
		})
	}
}
