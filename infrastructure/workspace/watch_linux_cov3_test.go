//go:build linux

package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

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
