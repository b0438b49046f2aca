//go:build linux

package workspace

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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
