package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startWatcherPaused is an inotify watcher whose reader waits for paused to be closed, so that a
// test can let the kernel's queue overflow.
func startWatcherPaused(root string, paused <-chan struct{}) (watcher, error) {
	return startInotify(root, paused)
}

// TestTrackedOverflow: events the kernel dropped (its queue overflowed while nobody read it) make
// the next snapshot walk, and see what only the walk can see.
func TestTrackedOverflow(t *testing.T) {
	w := newTestWS(t)
	w.write("a/f", "first", 0o644)
	paused := make(chan struct{})
	w.sc.newWatcher = func(root string) (watcher, error) { return startWatcherPaused(root, paused) }
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)
	limit := 16384
	if b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events"); err == nil {
		_, _ = fmt.Sscan(string(b), &limit)
	}
	if limit > 200000 {
		t.Skipf("max_queued_events is %d: too many events to overflow in a test", limit)
	}
	// Alternate two files so that the kernel cannot merge the events.
	w.write("a/x", "x", 0o644)
	w.write("a/y", "y", 0o644)
	for i := range limit/2 + 10 {
		at := time.Unix(int64(1_600_000_000+i), 0)
		for _, p := range []string{"a/x", "a/y"} {
			if err := os.Chtimes(w.abs(p), at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.write("a/f", "last!", 0o644) // its event is among the dropped
	close(paused)
	snap := w.snapshot()
	if got := entryOf(t, w.flatten(snap.Root), "a/f"); got.Hash != fileEntry("a/f", "last!", 0o644).Hash {
		t.Fatal("a change whose event was dropped is missing")
	}
	w.requireSnapshotExact(snap.Root, nil, "after the overflow")
	if walks, _ := tr.counts(); walks != 2 {
		t.Errorf("%d walks, want 2 (the first, and the one after the overflow)", walks)
	}
	// Watching resumes: the next change is incremental.
	w.write("a/f", "again", 0o644)
	snap = w.snapshot()
	w.requireSnapshotExact(snap.Root, nil, "after watching resumed")
	if walks, _ := tr.counts(); walks != 2 {
		t.Errorf("%d walks, want 2", walks)
	}
}

// limitedWatcher fails to watch past a number of directories, as the kernel's watch limit does.
type limitedWatcher struct {
	watcher
	left atomic.Int32
}

func (l *limitedWatcher) watch(rel string, fd int, dev uint64) int32 {
	if l.left.Add(-1) < 0 {
		if in, ok := l.watcher.(*inotify); ok {
			in.mu.Lock()
			in.never = "the inotify watch limit is reached (test)"
			in.dirty.lose(in.never)
			in.mu.Unlock()
		}
		return 0
	}
	return l.watcher.watch(rel, fd, dev)
}

// TestTrackedWatchLimit: when a directory cannot be watched, tracking gives up for the command and
// every snapshot walks, exactly.
func TestTrackedWatchLimit(t *testing.T) {
	w := newTestWS(t)
	for i := range 10 {
		w.write(fmt.Sprintf("d%d/f", i), "x", 0o644)
	}
	w.sc.newWatcher = func(root string) (watcher, error) {
		in, err := startWatcher(root)
		if err != nil {
			return nil, err
		}
		l := &limitedWatcher{watcher: in}
		l.left.Store(4)
		return l, nil
	}
	tr := w.tracked()
	w.snapshot()
	tr.mu.Lock()
	off := tr.off
	tr.mu.Unlock()
	if off == "" {
		t.Fatal("tracking still on after a watch failed")
	}
	w.write("d7/f", "changed", 0o644)
	snap := w.snapshot()
	w.requireSnapshotExact(snap.Root, nil, "after the watch limit")
	if walks, updates := tr.counts(); walks != 1 || updates != 0 {
		t.Errorf("walks %d updates %d: want the one tracked walk, then untracked walks", walks, updates)
	}
}

// TestWatcherOneDirectoryTwice: a directory met under two names (a bind mount inside the
// workspace) cannot be told apart by its one watch: the watcher says it is uncertain rather than
// report the changes under one name only.
func TestWatcherOneDirectoryTwice(t *testing.T) {
	root := t.TempDir()
	w, err := startWatcher(root)
	if err != nil {
		t.Skipf("no watcher here: %v", err)
	}
	defer w.close()
	open := func() int {
		fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = unix.Close(fd) })
		return fd
	}
	var st unix.Stat_t
	if err := unix.Stat(root, &st); err != nil {
		t.Fatal(err)
	}
	dev := keyOfStat(&st).Dev
	if wd := w.watch("a", open(), dev); wd <= 0 {
		t.Fatalf("watch a: %d", wd)
	}
	if d := w.take(); d.uncertain != "" {
		t.Fatalf("uncertain after one watch: %s", d.uncertain)
	}
	w.watch("b", open(), dev)
	if d := w.take(); d.uncertain == "" {
		t.Fatal("one directory watched under two names, and the watcher is not uncertain")
	}
}

// TestWatcherEvents: what each kind of change reports, and that an event for a watch the watcher
// gave up is ignored while one for a watch it never had makes it uncertain.
func TestWatcherEvents(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sub", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The reader never starts: take alone reads the events, so nothing is read behind the test's back.
	w, err := startInotify(root, make(chan struct{}))
	if err != nil {
		t.Skipf("no watcher here: %v", err)
	}
	defer w.close()
	fd, err := unix.Open(filepath.Join(root, "sub"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Close(fd) }()
	wd := w.watch("sub", fd, 0)
	if err := os.WriteFile(filepath.Join(root, "sub", "f"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "sub", "f"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sub", "new"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d := w.take()
	dd := d.dirs["sub"]
	if d.uncertain != "" || dd == nil || !dd.relist || dd.names["f"] != evContent|evAttr || dd.names["new"]&evEntry == 0 {
		t.Fatalf("events: %+v %+v", d, dd)
	}
	w.forget("sub", wd)
	w.mu.Lock()
	w.handle(wd, unix.IN_MODIFY, 0, []byte("f")) // queued before the watch was given up
	w.mu.Unlock()
	if d := w.take(); d.uncertain != "" || len(d.dirs) != 0 {
		t.Fatalf("an event of a watch given up counted: %+v", d)
	}
	w.mu.Lock()
	w.handle(wd+1000, unix.IN_MODIFY, 0, []byte("f"))
	w.mu.Unlock()
	if d := w.take(); d.uncertain == "" {
		t.Fatal("an event for a watch never added was trusted")
	}
}

func openDir(t *testing.T, p string) int {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	return fd
}

func devOf(t *testing.T, p string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return keyOfStat(&st).Dev
}

// pausedInotify is a watcher whose reader never runs: only take reads events.
func pausedInotify(t *testing.T, root string) *inotify {
	t.Helper()
	w, err := startInotify(root, make(chan struct{}))
	if err != nil {
		t.Skipf("no watcher here: %v", err)
	}
	t.Cleanup(w.close)
	return w
}

// TestStartWatcherRefuses: a workspace that does not exist, or on a file system whose events do
// not report every change, is not watched, and the error says why.
func TestStartWatcherRefuses(t *testing.T) {
	if _, err := startWatcher(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "statfs") {
		t.Errorf("a missing workspace: %v", err)
	}
	if _, err := startWatcher("/proc/self"); err == nil || !strings.Contains(err.Error(), "not one whose events report every change") {
		t.Errorf("a workspace on procfs: %v", err)
	}
}

// TestWatcherDirectoryOnAnotherFileSystem: a directory of the workspace on a file system whose
// events cannot be trusted (a mount inside the workspace) makes watching give up for good: the
// watcher says so (permanent) and its events are uncertain.
func TestWatcherDirectoryOnAnotherFileSystem(t *testing.T) {
	root := t.TempDir()
	w := pausedInotify(t, root)
	if wd := w.watch("", openDir(t, root), devOf(t, root)); wd <= 0 {
		t.Fatalf("watch the root: %d", wd)
	}
	if wd := w.watch("mnt/proc", openDir(t, "/proc"), devOf(t, "/proc")); wd != 0 {
		t.Fatalf("a directory on procfs was watched: %d", wd)
	}
	if why := w.permanent(); !strings.Contains(why, "mnt/proc is on a file system whose events do not report every change") {
		t.Fatalf("permanent: %q", why)
	}
	if d := w.take(); d.uncertain == "" {
		t.Fatal("the events are trusted although a directory is not watched")
	}
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if wd := w.watch("sub", openDir(t, sub), devOf(t, sub)); wd != 0 {
		t.Fatal("an uncertain watcher went on watching")
	}
}

// TestWatcherWatchFails: a watch the kernel refuses (here: the descriptor is not a directory)
// makes the next take uncertain, naming the directory, without giving up watching for good.
func TestWatcherWatchFails(t *testing.T) {
	root := t.TempDir()
	w := pausedInotify(t, root)
	f := filepath.Join(root, "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(f, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Close(fd) }()
	if wd := w.watch("", fd, devOf(t, root)); wd != 0 {
		t.Fatalf("a file was watched as a directory: %d", wd)
	}
	if why := w.permanent(); why != "" {
		t.Fatalf("one failed watch made watching impossible: %q", why)
	}
	d := w.take()
	if !strings.Contains(d.uncertain, "could not watch .:") {
		t.Fatalf("uncertain: %q", d.uncertain)
	}
	if d := w.take(); d.uncertain == "" {
		t.Fatal("the next take forgot the failed watch: only a new watcher may trust events again")
	}
}

// TestWatcherClosed: a closed watcher reports nothing it could vouch for, watches nothing, and
// closing it twice is harmless.
func TestWatcherClosed(t *testing.T) {
	root := t.TempDir()
	w := pausedInotify(t, root)
	w.close()
	w.close()
	if d := w.take(); !strings.Contains(d.uncertain, "closed") {
		t.Fatalf("take after close: %+v", d)
	}
	if wd := w.watch("", openDir(t, root), devOf(t, root)); wd != 0 {
		t.Fatalf("a closed watcher watched: %d", wd)
	}
}

// TestWatcherWorkspaceGone: the workspace directory itself moved or removed makes the events
// uncertain.
func TestWatcherWorkspaceGone(t *testing.T) {
	for _, how := range []string{"moved", "removed"} {
		t.Run(how, func(t *testing.T) {
			parent := t.TempDir()
			root := filepath.Join(parent, "ws")
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			w := pausedInotify(t, parent)
			fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			wd := w.watch("", fd, devOf(t, root))
			_ = unix.Close(fd) // as a walk does once it listed the directory
			if wd <= 0 {
				t.Fatalf("watch: %d", wd)
			}
			if how == "moved" {
				err = os.Rename(root, root+".old")
			} else {
				err = os.Remove(root)
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := w.take(); !strings.Contains(d.uncertain, "the workspace directory itself was") {
				t.Fatalf("uncertain %q", d.uncertain)
			}
		})
	}
}

// TestWatcherNamelessAndUnmountEvents: an event on a watched directory that names no entry makes
// the directory be listed again; an unmount under the workspace makes the events uncertain.
func TestWatcherNamelessAndUnmountEvents(t *testing.T) {
	root := t.TempDir()
	w := pausedInotify(t, root)
	wd := w.watch("sub", openDir(t, root), devOf(t, root))
	w.mu.Lock()
	w.handle(wd, unix.IN_MODIFY, 0, nil)
	w.mu.Unlock()
	d := w.take()
	if dd := d.dirs["sub"]; d.uncertain != "" || dd == nil || !dd.relist {
		t.Fatalf("a nameless event: %+v", d)
	}
	w.mu.Lock()
	w.handle(wd, unix.IN_UNMOUNT, 0, nil)
	w.mu.Unlock()
	if d := w.take(); !strings.Contains(d.uncertain, "unmounted") {
		t.Fatalf("an unmount: %q", d.uncertain)
	}
}

// failingWatcher hands the kernel a descriptor that is not the directory's for directory rel, so
// that watching it fails as a real failure does.
type failingWatcher struct {
	watcher
	rel string
}

func (f *failingWatcher) watch(rel string, fd int, dev uint64) int32 {
	if rel == f.rel {
		return f.watcher.watch(rel, -1, dev)
	}
	return f.watcher.watch(rel, fd, dev)
}

// TestTrackedWatchFailsOnce: a directory that could not be watched once (not for good) makes the
// next snapshot walk with a new watcher; it records what changed unwatched, and tracking is
// incremental again after.
func TestTrackedWatchFailsOnce(t *testing.T) {
	w := newTestWS(t)
	w.write("a/f", "a", 0o644)
	w.write("b/f", "b", 0o644)
	var started atomic.Int32
	w.sc.newWatcher = func(root string) (watcher, error) {
		in, err := startWatcher(root)
		if err != nil || started.Add(1) > 1 {
			return in, err
		}
		return &failingWatcher{watcher: in, rel: "b"}, nil
	}
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)
	w.write("b/f", "changed while b was not watched", 0o644)
	snap := w.snapshot()
	if e := entryOf(t, w.flatten(snap.Root), "b/f"); e.Hash != fileEntry("b/f", "changed while b was not watched", 0o644).Hash {
		t.Fatal("a change in the directory that was not watched was missed")
	}
	w.requireSnapshotExact(snap.Root, nil, "after the failed watch")
	w.requireCounts(tr, 2, 0, "after the failed watch")
	w.write("b/f", "watched now", 0o644)
	snap = w.snapshot()
	w.requireSnapshotExact(snap.Root, nil, "b watched by the new watcher")
	w.requireCounts(tr, 2, 1, "b watched by the new watcher")
}
