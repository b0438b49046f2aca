//go:build linux

package workspace

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func (w *testWS) link(from, to string) {
	w.t.Helper()
	if err := os.MkdirAll(filepath.Dir(w.abs(to)), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Link(w.abs(from), w.abs(to)); err != nil {
		w.t.Skipf("cannot hard-link here: %v", err)
	}
}

// appendTo writes through an existing name (the inode stays the same, as `echo x > b` does).
func (w *testWS) writeThrough(rel, content string) {
	w.t.Helper()
	if err := os.WriteFile(w.abs(rel), []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// bytesRead is how many bytes of files a snapshot read.
func (w *testWS) bytesRead() int64 {
	w.t.Helper()
	p := &countingProgress{}
	if _, err := w.sc.Snapshot(w.t.Context(), p); err != nil {
		w.t.Fatal(err)
	}
	return p.added
}

// TestTrackedLinkMadeInside: a hard link made inside the workspace while it is followed, then a
// write through the new name and its removal: the first name, which no event named, is read again
// and its new content recorded. (Fix: it had one link when it was read, so it was never checked
// again: every later snapshot held its old content.)
func TestTrackedLinkMadeInside(t *testing.T) {
	for _, where := range []string{"b", "d/b"} {
		w := newTestWS(t)
		w.write("a", "original", 0o644)
		w.write("z", "z", 0o644)
		tr := w.tracked()
		w.snapshot()
		requireWatching(t, tr)
		w.link("a", where)
		w.requireSnapshotExact(w.snapshot().Root, nil, "after the link was made")
		w.writeThrough(where, "CHANGED-VIA-LINK")
		if where == "d/b" {
			w.remove("d")
		} else {
			w.remove(where)
		}
		snap := w.snapshot()
		if e := entryOf(t, w.flatten(snap.Root), "a"); e.Hash != fileEntry("a", "CHANGED-VIA-LINK", 0o644).Hash {
			t.Fatalf("link %s: a is recorded with its old content", where)
		}
		w.requireSnapshotExact(snap.Root, nil, "after a write through the link, removed since")
		if walks, _ := tr.counts(); walks != 1 {
			t.Errorf("link %s: %d walks, want 1", where, walks)
		}
	}
}

// TestLinkedInsideReadEveryTime: files whose inode has two names in the workspace are read again
// at every snapshot, tracked or not, whatever their stat says; a file whose other link is outside
// keeps the stat cache's rule.
func TestLinkedInsideReadEveryTime(t *testing.T) {
	for _, tracked := range []bool{false, true} {
		w := newTestWS(t)
		w.write("a", "0123456789", 0o644)
		w.link("a", "sub/b")
		w.write("o", "outside", 0o644)
		if err := os.Link(w.abs("o"), filepath.Join(t.TempDir(), "o")); err != nil {
			t.Skipf("cannot hard-link here: %v", err)
		}
		w.write("plain", "plain", 0o644)
		time.Sleep(30 * time.Millisecond) // past the racy margin: only the rule makes work
		if tracked {
			tr := w.tracked()
			w.snapshot()
			requireWatching(t, tr)
		} else {
			w.snapshot()
		}
		for i := range 2 {
			if got := w.bytesRead(); got != 20 {
				t.Errorf("tracked %v, snapshot %d with nothing changed read %d bytes, want the 20 of a and sub/b", tracked, i, got)
			}
		}
		w.remove("sub")
		time.Sleep(30 * time.Millisecond) // a's ctime, changed by the unlink, past the margin too
		w.snapshot()
		if got := w.bytesRead(); got != 0 {
			t.Errorf("tracked %v: a alone again, a snapshot read %d bytes", tracked, got)
		}
	}
}

// TestSharedInodes: only inodes named twice among the linked files are shared, and only those not
// read already are queued.
func TestSharedInodes(t *testing.T) {
	sc := &scan{}
	one := item{key: statKey{Dev: 1, Ino: 7}, links: true, hit: true}
	two := item{key: statKey{Dev: 1, Ino: 7}, links: true, fresh: true}
	other := item{key: statKey{Dev: 2, Ino: 7}, links: true, hit: true}
	if q := sc.sharedInodes([]job{{rel: "one", it: &one}}); q != nil {
		t.Fatalf("one linked file: %v", q)
	}
	q := sc.sharedInodes([]job{{rel: "one", it: &one}, {rel: "two", it: &two}, {rel: "other", it: &other}})
	if len(q) != 1 || q[0].rel != "one" || !one.shared || !two.shared || other.shared || one.hit || !one.fresh || other.fresh {
		t.Fatalf("queued %v; one %+v two %+v other %+v", q, one, two, other)
	}
}

// TestTrackedLinkMadeWrittenAndRemovedInOneGo: between two snapshots a hard link is made inside
// the workspace, written through and removed (or moved out of the workspace): no event names the
// first name, and the link is gone before the snapshot could learn its inode. A file made, changed
// and gone since the last snapshot may have been such a link, so the snapshot stats every file:
// the first name's new content is recorded, without a walk.
func TestTrackedLinkMadeWrittenAndRemovedInOneGo(t *testing.T) {
	for _, how := range []string{"removed", "moved out", "moved within, then removed", "in a new directory", "in a new directory, removed"} {
		w := newTestWS(t)
		w.write("d/a", "original", 0o644)
		w.write("z", "z", 0o644)
		tr := w.tracked()
		w.snapshot()
		requireWatching(t, tr)
		w.link("d/a", "b")
		switch how {
		case "removed":
			w.writeThrough("b", "CHANGED-VIA-LINK")
			w.remove("b")
		case "moved out":
			w.writeThrough("b", "CHANGED-VIA-LINK")
			w.rename("b", "../b-outside")
		case "moved within, then removed":
			w.rename("b", "d/c")
			w.writeThrough("d/c", "CHANGED-VIA-LINK")
			w.remove("d/c")
		default: // made in a directory no watch sees yet
			w.remove("b")
			w.link("d/a", "new/b")
			w.writeThrough("new/b", "CHANGED-VIA-LINK")
			w.remove("new/b")
			if how == "in a new directory, removed" {
				w.remove("new")
			}
		}
		snap := w.snapshot()
		if e := entryOf(t, w.flatten(snap.Root), "d/a"); e.Hash != fileEntry("d/a", "CHANGED-VIA-LINK", 0o644).Hash {
			t.Fatalf("link %s: d/a is recorded with its old content", how)
		}
		w.requireSnapshotExact(snap.Root, nil, "after a write through a link gone since")
		w.requireCounts(tr, 1, 1, how)
	}
}

// TestWatcherFilesMadeAndGone: a file made, changed and removed (or moved where no watch sees it
// arrive) since the last take makes the take ask for every file to be stat'ed; one moved within
// the watched directories, a directory, a file removed that was not made since, or one made and
// removed unchanged does not.
func TestWatcherFilesMadeAndGone(t *testing.T) {
	root := t.TempDir()
	w, err := startInotify(root, make(chan struct{}))
	if err != nil {
		t.Skipf("no watcher here: %v", err)
	}
	defer w.close()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Close(fd) }()
	wd := w.watch("", fd, 0)
	send := func(mask, cookie uint32, name string) {
		w.mu.Lock()
		w.handle(wd, mask, cookie, []byte(name))
		w.mu.Unlock()
	}
	for _, c := range []struct {
		name   string
		events func()
		doubt  bool
	}{
		{"made, written, removed", func() {
			send(unix.IN_CREATE, 0, "f")
			send(unix.IN_MODIFY, 0, "f")
			send(unix.IN_DELETE, 0, "f")
		}, true},
		{"made, chmod'ed, moved out", func() {
			send(unix.IN_CREATE, 0, "f")
			send(unix.IN_ATTRIB, 0, "f")
			send(unix.IN_MOVED_FROM, 7, "f")
		}, true},
		{"made, written, moved within", func() {
			send(unix.IN_CREATE, 0, "f")
			send(unix.IN_CLOSE_WRITE, 0, "f")
			send(unix.IN_MOVED_FROM, 8, "f")
			send(unix.IN_MOVED_TO, 8, "g")
		}, false},
		{"made, written, moved within, removed there", func() {
			send(unix.IN_CREATE, 0, "f")
			send(unix.IN_MODIFY, 0, "f")
			send(unix.IN_MOVED_FROM, 9, "f")
			send(unix.IN_MOVED_TO, 9, "g")
			send(unix.IN_DELETE, 0, "g")
		}, true},
		{"made, moved within, written there, removed", func() {
			send(unix.IN_CREATE, 0, "f")
			send(unix.IN_MOVED_FROM, 10, "f")
			send(unix.IN_MOVED_TO, 10, "g")
			send(unix.IN_MODIFY, 0, "g")
			send(unix.IN_DELETE, 0, "g")
		}, true},
		{"moved in from elsewhere, written, removed", func() {
			send(unix.IN_MOVED_TO, 11, "h")
			send(unix.IN_CLOSE_WRITE, 0, "h")
			send(unix.IN_DELETE, 0, "h")
		}, true},
		{"made and moved out unchanged", func() {
			send(unix.IN_CREATE, 0, "f")
			send(unix.IN_MOVED_FROM, 12, "f")
		}, false},
		{"made and removed unchanged", func() {
			send(unix.IN_CREATE, 0, "f")
			send(unix.IN_DELETE, 0, "f")
		}, false},
		{"written and removed, not made", func() {
			send(unix.IN_MODIFY, 0, "f")
			send(unix.IN_DELETE, 0, "f")
		}, false},
		{"a directory made (what happened in it before it was watched is unknown)", func() {
			send(unix.IN_CREATE|unix.IN_ISDIR, 0, "d")
			send(unix.IN_DELETE|unix.IN_ISDIR, 0, "d")
		}, true},
		{"a directory moved within", func() {
			send(unix.IN_MOVED_FROM|unix.IN_ISDIR, 20, "d")
			send(unix.IN_MOVED_TO|unix.IN_ISDIR, 20, "e")
			send(unix.IN_ATTRIB|unix.IN_ISDIR, 0, "e")
			send(unix.IN_DELETE|unix.IN_ISDIR, 0, "e")
		}, false},
		{"a directory moved in from elsewhere", func() {
			send(unix.IN_MOVED_TO|unix.IN_ISDIR, 21, "e")
		}, true},
		{"a directory moved out", func() {
			send(unix.IN_MOVED_FROM|unix.IN_ISDIR, 22, "e")
		}, false},
		{"nothing named in the directory before", func() { send(unix.IN_DELETE, 0, "f") }, false},
	} {
		c.events()
		if d := w.take(); d.uncertain != "" || (d.restatAll != "") != c.doubt || d.movedOut != nil {
			t.Errorf("%s: restatAll %q (uncertain %q, moves %v), want doubt %v", c.name, d.restatAll, d.uncertain, d.movedOut, c.doubt)
		}
	}
	var d dirtySet
	d.add("", "f", evCreated|evContent)
	d.gone("", "f", 9)
	d.lose("overflow")
	d.gone("", "f", 0)
	d.dirArrived("", "d", 0)
	d.settle()
	if d.restatAll != "" || d.movedOut != nil {
		t.Errorf("a set that gave up still asks for stats: %+v", d)
	}
}

// TestTrackedTempFileStatsEverything: a temporary file made, written and removed between two
// snapshots costs a stat of every file, not a walk, and the snapshot stays exact.
func TestTrackedTempFileStatsEverything(t *testing.T) {
	w := newTestWS(t)
	w.write("a/x", "x", 0o644)
	w.write("a/b/y", "y", 0o644)
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)
	w.write("a/tmp", "scratch", 0o644)
	w.remove("a/tmp")
	w.write("a/b/y", "Y", 0o644)
	w.requireSnapshotExact(w.snapshot().Root, nil, "after a temporary file")
	w.requireCounts(tr, 1, 1, "a temporary file")
}
