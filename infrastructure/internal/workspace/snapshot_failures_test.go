package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
)

// A snapshot that fails leaves nothing behind in the store's tmp/: neither when the scan cannot
// start (a symlinked .planignore) nor when storing fails half way (tmp/ taken away once the
// listing is done).
func TestFailedSnapshotLeavesNothingBehind(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "x", 0o644)
	w.write("other", "*\n", 0o644)
	w.symlink(IgnoreFile, "other")
	if _, err := w.sc.Snapshot(t.Context(), nil); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("Snapshot with a symlinked .planignore: %v", err)
	}
	tmp := filepath.Join(w.l.Objects(), "tmp")
	if des, _ := os.ReadDir(tmp); len(des) != 0 {
		t.Fatalf("a failed snapshot left %v", des)
	}
	w.remove(IgnoreFile)
	_, err := w.sc.Snapshot(t.Context(), &betweenListAndRead{fn: func() {
		if err := os.RemoveAll(tmp); err != nil {
			t.Error(err)
		}
	}})
	if err == nil || !strings.Contains(err.Error(), "store") {
		t.Fatalf("Snapshot without tmp/: %v", err)
	}
	if st := w.store.Stats(); st.Objects != 0 {
		t.Fatalf("a failed snapshot made %d objects visible", st.Objects)
	}
}

// With nothing to read (a symlink and an empty directory), the first write is the tree itself; a
// store that cannot take it fails the snapshot.
func TestSnapshotFailsWhenTheTreeCannotBeStored(t *testing.T) {
	w := newTestWS(t)
	w.symlink("l", "nowhere")
	w.mkdir("empty", 0o755)
	if err := os.RemoveAll(filepath.Join(w.l.Objects(), "tmp")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.sc.Snapshot(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "store tree") {
		t.Fatalf("Snapshot: %v", err)
	}
}
