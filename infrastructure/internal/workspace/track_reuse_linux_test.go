//go:build linux

package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func inodeOf(t *testing.T, p string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestTrackedDirectoryRecreated: a directory deleted and made again between two snapshots (ext4
// gives the new one the freed inode number at once) is a new directory: it is watched and walked,
// and what is written in it later is in the next snapshots. (Fix: the tracker took it for the
// watched one by its inode number; nothing written inside it was ever recorded.)
func TestTrackedDirectoryRecreated(t *testing.T) {
	for _, nested := range []bool{false, true} {
		w := newTestWS(t)
		w.write("keep", "k", 0o644)
		w.mkdir("d", 0o755)
		if nested {
			w.write("d/e/old", "old", 0o644)
		}
		tr := w.tracked()
		w.snapshot()
		requireWatching(t, tr)
		ino := inodeOf(t, w.abs("d"))
		w.remove("d")
		w.mkdir("d", 0o755)
		if nested {
			w.mkdir("d/e", 0o755)
		}
		w.write("d/f", "first", 0o644)
		t.Logf("nested %v: inode %d -> %d", nested, ino, inodeOf(t, w.abs("d")))
		w.requireSnapshotExact(w.snapshot().Root, nil, "after d was made again")
		w.write("d/g", "second", 0o644)
		if nested {
			w.write("d/e/h", "third", 0o644)
		}
		snap := w.snapshot()
		w.requireSnapshotExact(snap.Root, nil, "after a write inside the new d")
		if !hasPath(w.flatten(snap.Root), "d/g") {
			t.Fatalf("nested %v: d/g, written in the re-created directory, is not in the snapshot", nested)
		}
		if walks, _ := tr.counts(); walks != 1 {
			t.Errorf("nested %v: %d walks; a re-created directory needs none", nested, walks)
		}
	}
}

// TestWatcherReportsADeletedDirectory: the kernel removing a watch the watcher did not give up
// (its directory was deleted) is reported as lost, by directory; one given up is not.
func TestWatcherReportsADeletedDirectory(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"sub", "other"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w, err := startInotify(root, make(chan struct{}))
	if err != nil {
		t.Skipf("no watcher here: %v", err)
	}
	defer w.close()
	watch := func(rel string) int32 {
		fd, err := unix.Open(filepath.Join(root, rel), unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = unix.Close(fd) }()
		return w.watch(rel, fd, 0)
	}
	sub, other := watch("sub"), watch("other")
	w.forget("other", other)
	for _, d := range []string{"sub", "other"} {
		if err := os.Remove(filepath.Join(root, d)); err != nil {
			t.Fatal(err)
		}
	}
	d := w.take()
	if d.uncertain != "" || len(d.lost) != 1 || d.lost["sub"] != sub {
		t.Fatalf("lost watches: %+v", d)
	}
	var full dirtySet
	full.names = maxDirtyNames
	full.watchLost("x", 1)
	if full.uncertain == "" || full.lost != nil {
		t.Fatalf("a lost watch past the bound: %+v", full)
	}
	full.watchLost("y", 2)
	if full.lost != nil {
		t.Fatal("a lost watch noted after the set gave up")
	}
}
