package workspace

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// betweenListAndRead runs fn once, when the scanner has listed the workspace and is about to read
// the files it found: the moment another process changing the workspace can catch it out.
type betweenListAndRead struct {
	once sync.Once
	fn   func()
}

func (p *betweenListAndRead) Start(label string, _ int64) {
	if label == "reading files" {
		p.once.Do(p.fn)
	}
}
func (*betweenListAndRead) Add(int64) {}
func (*betweenListAndRead) Done()     {}

// A file removed after the listing is left out of the snapshot, exactly as if the listing had come
// a moment later; its directory and the other files are recorded as they are.
func TestSnapshotOfAFileRemovedWhileScanning(t *testing.T) {
	w := newTestWS(t)
	w.write("keep", "kept", 0o644)
	w.write("d/gone", "removed while scanning", 0o644)
	w.write("d/stay", "stays", 0o644)
	snap, err := w.sc.Snapshot(t.Context(), &betweenListAndRead{fn: func() { w.remove("d/gone") }})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range w.flatten(snap.Root) {
		paths = append(paths, e.Path)
	}
	if strings.Join(paths, ",") != "d,d/stay,keep" {
		t.Fatalf("snapshot holds %v", paths)
	}
	if snap.Files != 2 {
		t.Fatalf("files %d", snap.Files)
	}
}

// A file replaced after the listing by something that is not a regular file is never read as one:
// a FIFO or a directory fails the snapshot with a message naming the path (a FIFO would block a
// reader, and recording a directory's bytes as file content would be nonsense); a symlink is not
// followed.
func TestSnapshotOfAFileReplacedWhileScanning(t *testing.T) {
	for name, replace := range map[string]func(w *testWS){
		"fifo":      func(w *testWS) { w.remove("f"); mkfifo(t, w.abs("f")) },
		"directory": func(w *testWS) { w.remove("f"); w.mkdir("f", 0o755) },
		"symlink":   func(w *testWS) { w.remove("f"); w.symlink("f", "other") },
	} {
		t.Run(name, func(t *testing.T) {
			w := newTestWS(t)
			w.write("f", "a regular file when listed", 0o644)
			w.write("other", "must not be read through f", 0o644)
			_, err := w.sc.Snapshot(t.Context(), &betweenListAndRead{fn: func() { replace(w) }})
			if err == nil || !strings.Contains(err.Error(), `"f"`) {
				t.Fatalf("Snapshot: %v", err)
			}
		})
	}
}

// A restore whose target tree names a .planignore the store cannot produce fails before touching
// anything: without the target's rules it cannot know which paths it must leave alone.
func TestRestoreRefusesATargetWhoseIgnoreRulesAreMissing(t *testing.T) {
	w := newTestWS(t)
	w.write("a", "alpha", 0o644)
	snap := w.snapshot()
	want := w.live()
	b := w.store.NewBatch()
	target, _, err := b.PutTree(objectstore.Tree{
		{Name: IgnoreFile, Kind: tree.KindFile, Mode: 0o644, Size: 4, Hash: tree.Sum([]byte("never stored"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.r.Reconcile(t.Context(), target); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("Reconcile: %v", err)
	}
	if _, err := w.r.Apply(t.Context(), snap.Root, target, nil); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("Apply: %v", err)
	}
	w.requireTree(want, "after refused restores")
}

// Stored content whose length differs from what its tree records is damage: the restore stops as
// an integrity error and puts the workspace back, rather than writing a file of the wrong size.
func TestRestoreRefusesContentOfTheWrongSize(t *testing.T) {
	w := newTestWS(t)
	w.write("a", "alpha", 0o644)
	snap := w.snapshot()
	want := w.live()
	content := []byte("twelve bytes")
	b := w.store.NewBatch()
	h := tree.Sum(content)
	if _, err := b.PutBlob(strings.NewReader(string(content)), h, int64(len(content))); err != nil {
		t.Fatal(err)
	}
	target, _, err := b.PutTree(objectstore.Tree{
		{Name: "a", Kind: tree.KindFile, Mode: 0o644, Size: 5, Hash: tree.Sum([]byte("alpha"))},
		{Name: "b", Kind: tree.KindFile, Mode: 0o644, Size: 99, Hash: h},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.r.Apply(t.Context(), snap.Root, target, nil); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("Apply: %v", err)
	}
	w.requireTree(want, "after a restore of mis-sized content")
	w.requireNoStaging()
	if _, err := os.Lstat(w.abs("b")); err == nil {
		t.Fatal("a file of the wrong size was written")
	}
}

// Scan (the listing a restore compares against) leaves out a file removed after the listing too,
// so a restore does not try to replace what is no longer there.
func TestScanOfAFileRemovedWhileScanning(t *testing.T) {
	w := newTestWS(t)
	w.write("keep", "kept", 0o644)
	w.write("d/gone", "removed while scanning", 0o644)
	entries, err := w.sc.Scan(t.Context(), &betweenListAndRead{fn: func() { w.remove("d/gone") }})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range entries {
		paths = append(paths, e.Path)
	}
	if strings.Join(paths, ",") != "d,keep" {
		t.Fatalf("scan lists %v", paths)
	}
}
