//go:build linux

package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// afterTakeOnce runs f between the events' taking and the reading of the workspace, in the next
// tracked snapshot only.
func (w *testWS) afterTakeOnce(f func()) {
	var once atomic.Bool
	w.sc.afterTake = func() {
		if once.CompareAndSwap(false, true) {
			f()
		}
	}
	w.t.Cleanup(func() { w.sc.afterTake = nil })
}

func (w *testWS) rename(from, to string) {
	w.t.Helper()
	if err := os.Rename(w.abs(from), w.abs(to)); err != nil {
		w.t.Fatal(err)
	}
}

func (w *testWS) requireCounts(tr *tracking, walks, updates int, context string) {
	w.t.Helper()
	if gotW, gotU := tr.counts(); gotW != walks || gotU != updates {
		w.t.Errorf("%s: walks %d, updates %d; want %d and %d", context, gotW, gotU, walks, updates)
	}
}

func hasPath(entries []tree.Entry, p string) bool {
	return slices.ContainsFunc(entries, func(e tree.Entry) bool { return e.Path == p })
}

// TestTrackedDirectoryReplacedAfterTake: a directory the events name is replaced by another one
// (same name, another inode) after the events were taken: the snapshot cannot trust the events, so
// it walks, and records the new directory's content; tracking goes on incrementally after that.
func TestTrackedDirectoryReplacedAfterTake(t *testing.T) {
	w := newTestWS(t)
	w.write("a/f", "one", 0o644)
	w.write("a/keep", "k", 0o644)
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)
	w.write("a/f", "two", 0o644) // the events name directory a
	w.afterTakeOnce(func() {
		w.rename("a", "old")
		w.write("a/f", "three", 0o644)
		w.write("a/other", "o", 0o644)
	})
	snap := w.snapshot()
	got := w.flatten(snap.Root)
	if e := entryOf(t, got, "a/f"); e.Hash != fileEntry("a/f", "three", 0o644).Hash {
		t.Fatalf("a/f is %+v, not the replacing directory's file", e)
	}
	w.requireSnapshotExact(snap.Root, nil, "after the directory was replaced")
	w.requireCounts(tr, 2, 0, "the replaced directory")
	w.write("old/keep", "changed", 0o644)
	snap = w.snapshot()
	w.requireSnapshotExact(snap.Root, nil, "a change after the fallback walk")
	w.requireCounts(tr, 2, 1, "after the fallback")
}

// TestTrackedParentMovedAfterTake: the events name a/b, and a is renamed away after they were
// taken: b is no longer where the tree says, the snapshot walks and records it under its new name.
func TestTrackedParentMovedAfterTake(t *testing.T) {
	w := newTestWS(t)
	w.write("a/b/f", "one", 0o644)
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)
	w.write("a/b/f", "two", 0o644)
	w.afterTakeOnce(func() { w.rename("a", "z") })
	snap := w.snapshot()
	got := w.flatten(snap.Root)
	if hasPath(got, "a") || !hasPath(got, "z/b/f") {
		t.Fatalf("after the move: %v", got)
	}
	if e := entryOf(t, got, "z/b/f"); e.Hash != fileEntry("z/b/f", "two", 0o644).Hash {
		t.Fatalf("z/b/f is %+v: the write before the move was lost", e)
	}
	w.requireSnapshotExact(snap.Root, nil, "after the parent moved")
	w.requireCounts(tr, 2, 0, "the moved parent")
}

// TestTrackedFileReplacedAfterTake: a file the events say was written is removed, or replaced by
// a directory, after the events were taken: the directory is listed again instead of trusting the
// tree's entry, and the snapshot stays incremental and exact.
func TestTrackedFileReplacedAfterTake(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "one", 0o644)
	w.write("g", "one", 0o644)
	w.write("h", "h", 0o644)
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)

	w.write("f", "two", 0o644)
	w.afterTakeOnce(func() {
		w.remove("f")
		w.write("f/inside", "now a directory", 0o644)
	})
	snap := w.snapshot()
	got := w.flatten(snap.Root)
	if e := entryOf(t, got, "f"); e.Kind != tree.KindDir || !hasPath(got, "f/inside") {
		t.Fatalf("f is %+v, want the directory that replaced it", e)
	}
	w.requireSnapshotExact(snap.Root, nil, "a file replaced by a directory")

	w.write("g", "two", 0o644)
	w.afterTakeOnce(func() { w.remove("g") })
	snap = w.snapshot()
	if hasPath(w.flatten(snap.Root), "g") {
		t.Fatal("a file removed after its write event is still recorded")
	}
	w.requireSnapshotExact(snap.Root, nil, "a written file removed")
	w.requireCounts(tr, 1, 2, "files replaced after the take")
}

// TestTrackedIgnoredFileWritten: writes to an ignored file make events, which name nothing of
// the tree: the snapshot stays incremental and the file stays out of it.
func TestTrackedIgnoredFileWritten(t *testing.T) {
	w := newTestWS(t)
	w.write(IgnoreFile, "*.log\n", 0o644)
	w.write("x.log", "noise", 0o644)
	w.write("f", "f", 0o644)
	tr := w.tracked()
	first := w.snapshot()
	requireWatching(t, tr)
	w.write("x.log", "more noise", 0o644)
	snap := w.snapshot()
	if snap.Root != first.Root || hasPath(w.flatten(snap.Root), "x.log") {
		t.Fatalf("root %s (want %s) after writing an ignored file", snap.Root, first.Root)
	}
	w.requireSnapshotExact(snap.Root, map[string]bool{"x.log": true}, "an ignored file written")
	w.requireCounts(tr, 1, 1, "an ignored file written")
}

// TestTrackedTreeMissingAnEntry: an event for a file the kept tree does not have (it lost it)
// makes the directory be listed again rather than the file be left out.
func TestTrackedTreeMissingAnEntry(t *testing.T) {
	w := newTestWS(t)
	w.write("a", "a", 0o644)
	w.write("b", "b", 0o644)
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)
	tr.mu.Lock()
	tr.root.children = slices.DeleteFunc(tr.root.children, func(it item) bool { return it.name == "b" })
	tr.mu.Unlock()
	w.write("b", "written", 0o644) // an existing file: a write event, no entry event
	snap := w.snapshot()
	if e := entryOf(t, w.flatten(snap.Root), "b"); e.Hash != fileEntry("b", "written", 0o644).Hash {
		t.Fatalf("b is %+v", e)
	}
	w.requireSnapshotExact(snap.Root, nil, "an entry the tree lacked")
	w.requireCounts(tr, 1, 1, "an entry the tree lacked")
}

// TestTrackedLinkedFileGoneAfterTake: a file with another hard link (stat'ed at every snapshot,
// whatever the events) that is removed, or whose directory is replaced, after the events were
// taken makes the snapshot walk: it must not keep the file nor lose the new content.
func TestTrackedLinkedFileGoneAfterTake(t *testing.T) {
	w := newTestWS(t)
	w.write("d/linked", "linked", 0o644)
	w.write("d/a-plain", "plain", 0o644) // listed before the linked file: not stat'ed again
	w.write("e/linked", "linked too", 0o644)
	out := t.TempDir()
	for _, p := range []string{"d/linked", "e/linked"} {
		if err := os.Link(w.abs(p), filepath.Join(out, strings.ReplaceAll(p, "/", "-"))); err != nil {
			t.Skipf("cannot hard-link here: %v", err)
		}
	}
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)

	w.afterTakeOnce(func() { w.remove("d/linked") })
	snap := w.snapshot()
	if hasPath(w.flatten(snap.Root), "d/linked") {
		t.Fatal("a linked file removed after the take is still recorded")
	}
	w.requireSnapshotExact(snap.Root, nil, "a linked file removed")
	w.requireCounts(tr, 2, 0, "a linked file removed")

	w.afterTakeOnce(func() {
		w.rename("e", "e-old")
		w.write("e/new", "new", 0o644)
	})
	snap = w.snapshot()
	got := w.flatten(snap.Root)
	if hasPath(got, "e/linked") || !hasPath(got, "e/new") || !hasPath(got, "e-old/linked") {
		t.Fatalf("after the directory of a linked file was replaced: %v", got)
	}
	w.requireSnapshotExact(snap.Root, nil, "a linked file's directory replaced")
	w.requireCounts(tr, 3, 0, "a linked file's directory replaced")
}

// TestTrackedCanceled: a tracked snapshot whose context is canceled (while walking, or while
// updating) fails with the cancellation, and the next one records every change since the last
// snapshot that succeeded.
func TestTrackedCanceled(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "one", 0o644)
	tr := w.tracked()
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := w.sc.Snapshot(canceled, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a canceled first snapshot: %v", err)
	}
	w.snapshot()
	requireWatching(t, tr)

	for _, change := range []func(){
		func() { w.write("f", "two", 0o644) },      // a file to read: canceled while hashing
		func() { w.write("new/g", "g", 0o644) },    // a new directory: canceled while walking it
		func() { w.write("new/g", "gg", 0o644) },   // again, after a walk
		func() { w.write("f", "three!", 0o644) },   // and after an incremental snapshot
		func() { w.write("new/h/i", "i", 0o644) },  // a new subdirectory
		func() { w.write("new/h/i", "ii", 0o644) }, // written
	} {
		change()
		ctx, cancel := context.WithCancel(t.Context())
		w.afterTakeOnce(cancel)
		if _, err := w.sc.Snapshot(ctx, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("a snapshot canceled after the take: %v", err)
		}
		snap := w.snapshot()
		w.requireSnapshotExact(snap.Root, nil, "after a canceled snapshot")
	}
	walks, updates := tr.counts()
	if walks < 2 {
		t.Errorf("walks %d, updates %d: a canceled update must make the next snapshot walk", walks, updates)
	}
}

// TestTrackedOffCanceled: with tracking off, a canceled snapshot fails with the cancellation.
func TestTrackedOffCanceled(t *testing.T) {
	w := newTestWS(t)
	w.sc.TrackOff("PLAN_WATCH=0")
	w.write("f", "one", 0o644)
	w.tracked()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := w.sc.Snapshot(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled: %v", err)
	}
	if _, err := os.Stat(w.l.StatCache()); err == nil {
		t.Error("a canceled snapshot wrote the stat cache")
	}
}

// TestTrackedWatcherUnavailable: when no watcher can be started, tracking is off for the command
// and every snapshot walks, exactly.
func TestTrackedWatcherUnavailable(t *testing.T) {
	w := newTestWS(t)
	w.write("a/f", "one", 0o644)
	w.sc.newWatcher = func(string) (watcher, error) { return nil, errors.New("no inotify (test)") }
	tr := w.tracked()
	w.snapshot()
	tr.mu.Lock()
	off := tr.off
	tr.mu.Unlock()
	if !strings.Contains(off, "no inotify (test)") {
		t.Fatalf("tracking off because %q", off)
	}
	w.write("a/f", "two", 0o644)
	w.write("b/g", "new", 0o644)
	snap := w.snapshot()
	w.requireSnapshotExact(snap.Root, nil, "without a watcher")
	w.requireCounts(tr, 1, 0, "without a watcher")
}

// TestTrackedBadIgnoreFile: a .planignore that cannot be read fails a tracked snapshot as it
// fails a walk, naming the file; once it is fixed tracking goes on exactly.
func TestTrackedBadIgnoreFile(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "f", 0o644)
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)
	w.symlink(IgnoreFile, "elsewhere")
	if _, err := w.sc.Snapshot(t.Context(), nil); err == nil || !strings.Contains(err.Error(), IgnoreFile) {
		t.Fatalf("a symlinked %s: %v", IgnoreFile, err)
	}
	w.remove(IgnoreFile)
	w.write(IgnoreFile, "*.tmp\n", 0o644)
	w.write("x.tmp", "x", 0o644)
	snap := w.snapshot()
	w.requireSnapshotExact(snap.Root, map[string]bool{"x.tmp": true}, "after the rules were fixed")
}

// TestTrackedObjectsMissingFromTheStore: every object an incremental snapshot references is
// checked to be in the store; content the store no longer holds (here: another, empty store) is
// read and stored again, so that the snapshot can be read back whole.
func TestTrackedObjectsMissingFromTheStore(t *testing.T) {
	w := newTestWS(t)
	w.write("a/f", "one", 0o644)
	w.write("a/b/g", "two", 0o644)
	w.symlink("a/s", "f")
	w.write("top", "top", 0o644)
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)
	other, err := objectstore.Open(filepath.Join(t.TempDir(), "objects"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	w.sc.store, w.store = other, other
	snap := w.snapshot()
	got := w.flatten(snap.Root) // from the new store: every tree is there
	for _, e := range got {
		if e.Kind != tree.KindFile {
			continue
		}
		r, err := other.OpenBlob(e.Hash)
		if err != nil {
			t.Fatalf("%s is not in the store the snapshot was taken into: %v", e.Path, err)
		}
		_ = r.Close()
	}
	w.requireSnapshotExact(snap.Root, nil, "into a store without the objects")
	w.requireCounts(tr, 1, 1, "objects missing")
}

// TestTrackedPathTooLong: a file created in a deep directory whose path would be longer than a
// tree may hold fails the tracked snapshot as it fails a walk (a checkpoint that could not be
// restored); once it is gone the next snapshot is exact.
func TestTrackedPathTooLong(t *testing.T) {
	w := newTestWS(t)
	var parts []string
	for i := 0; len(strings.Join(parts, "/")) < tree.MaxPathLen-250; i++ {
		parts = append(parts, strings.Repeat(string(rune('a'+i%26)), 150))
	}
	deep := strings.Join(parts, "/")
	w.write(deep+"/ok", "ok", 0o644)
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)
	dfd := openDirFd(t, w.abs(deep))
	long := strings.Repeat("z", 250)
	fd, err := unix.Openat(dfd, long, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	_ = unix.Close(fd)
	_, err = w.sc.Snapshot(t.Context(), nil)
	if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "more than the 4096 a path may have") {
		t.Fatalf("a path too long: %v", err)
	}
	if err := unix.Unlinkat(dfd, long, 0); err != nil {
		t.Fatal(err)
	}
	snap := w.snapshot()
	w.requireSnapshotExact(snap.Root, nil, "after the long path was removed")
}

func openDirFd(t *testing.T, p string) int {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	return fd
}

// TestTrackedConfirmedSubtreeOnlyWhileTheStoreLosesNothing: a subtree an incremental snapshot
// found whole in the store is not looked into again while the store's view loses nothing (the
// lookups of 100,000 unchanged files were most of a snapshot through plan watch), and a changed
// one is; once the store lost objects behind the scanner's back (its packs deleted, as a gc
// elsewhere deletes them), the next snapshot checks every file again and stores what is gone.
func TestTrackedConfirmedSubtreeOnlyWhileTheStoreLosesNothing(t *testing.T) {
	w := newTestWS(t)
	w.write("a/f", "one", 0o644)
	w.write("a/b/g", "two", 0o644)
	w.write("c/h", "three", 0o644)
	tr := w.tracked()
	w.snapshot() // walks
	requireWatching(t, tr)
	w.snapshot() // updates, stat'ing every file once (restatAfterWalk)
	w.snapshot() // updates: every subtree confirmed
	if c := findNode(tr.root, "c"); c == nil || c.confirmed == 0 {
		t.Fatal("an unchanged subtree was not confirmed by an incremental snapshot")
	}
	w.write("a/f", "changed", 0o644)
	w.snapshot()
	if a, c := findNode(tr.root, "a"), findNode(tr.root, "c"); a == nil || c == nil || a.confirmed != 0 || c.confirmed == 0 {
		t.Fatalf("after a change in a/: a confirmed %v, c confirmed %v; want a not, c still", a != nil && a.confirmed != 0, c != nil && c.confirmed != 0)
	}
	packs := filepath.Join(w.sc.layout.Objects(), "packs")
	names, err := os.ReadDir(packs)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.Remove(filepath.Join(packs, n.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.store.Refresh(); err != nil {
		t.Fatal(err)
	}
	snap := w.snapshot()
	if err := w.store.Refresh(); err != nil {
		t.Fatal(err)
	}
	for _, e := range w.flatten(snap.Root) {
		if e.Kind != tree.KindFile {
			continue
		}
		r, err := w.store.OpenBlob(e.Hash)
		if err != nil {
			t.Fatalf("%s was vouched for after the store lost it: %v", e.Path, err)
		}
		_ = r.Close()
	}
	w.requireSnapshotExact(snap.Root, nil, "after the store lost its packs")
	w.requireCounts(tr, 1, 4, "objects lost")
}
