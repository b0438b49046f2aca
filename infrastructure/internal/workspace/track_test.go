package workspace

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/planhq/plan/domain/tree"
)

// tracked starts tracking on w for the test and returns the tracking state to inspect.
func (w *testWS) tracked() *tracking {
	w.t.Helper()
	stop := w.sc.Track()
	w.t.Cleanup(stop)
	return w.sc.tracking()
}

// counts returns how many tracked snapshots walked and how many updated incrementally.
func (tr *tracking) counts() (walks, updates int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.walks, tr.updates
}

func requireWatching(t *testing.T, tr *tracking) {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.off != "" {
		t.Skipf("watching is not available here: %s", tr.off)
	}
}

// TestTrackedSnapshotsAreExact: random changes, many in one timestamp tick, each followed by a
// tracked snapshot that must equal a scan without any cache; most of them must be incremental.
func TestTrackedSnapshotsAreExact(t *testing.T) {
	w := newTestWS(t)
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)
	r := rand.New(rand.NewPCG(21, 22))
	runModel(t, w, r, 80, func() tree.Hash { return w.snapshot().Root })
	walks, updates := tr.counts()
	if updates < 60 {
		t.Errorf("%d snapshots walked and only %d were incremental", walks, updates)
	}
}

// TestTrackedSnapshotCarriesForward: with no change in between, a tracked snapshot reads nothing
// and returns the same tree.
func TestTrackedSnapshotCarriesForward(t *testing.T) {
	w := newTestWS(t)
	w.write("a/b/c", "content", 0o644)
	w.write("d", "more", 0o644)
	tr := w.tracked()
	first := w.snapshot()
	requireWatching(t, tr)
	time.Sleep(30 * time.Millisecond) // past the racy margin, so only events can make work
	second := w.snapshot()
	third := w.snapshot()
	if second.Root != first.Root || third.Root != first.Root || third.StoredBytes != 0 {
		t.Fatalf("roots %s %s %s, stored %d", first.Root, second.Root, third.Root, third.StoredBytes)
	}
	if walks, updates := tr.counts(); walks != 1 || updates != 2 {
		t.Errorf("walks %d, updates %d; want 1 and 2", walks, updates)
	}
}

// TestTrackedDirectoryMovedInFromOutside: a directory moved into the workspace brings files no
// event names; they must all be recorded, without a full walk.
func TestTrackedDirectoryMovedInFromOutside(t *testing.T) {
	w := newTestWS(t)
	w.write("keep", "k", 0o644)
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)
	outside := t.TempDir()
	for i := range 20 {
		p := filepath.Join(outside, "tree", fmt.Sprintf("d%d", i%4), fmt.Sprintf("f%d", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(filepath.Join(outside, "tree"), w.abs("in/tree")); err != nil {
		if err := os.MkdirAll(w.abs("in"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(outside, "tree"), w.abs("in/tree")); err != nil {
			t.Fatal(err)
		}
	}
	snap := w.snapshot()
	w.requireSnapshotExact(snap.Root, nil, "moved in from outside")
	// Its directories are watched now: a change deep inside is seen incrementally.
	w.write("in/tree/d2/f2", "changed", 0o644)
	snap = w.snapshot()
	w.requireSnapshotExact(snap.Root, nil, "changed inside the moved-in tree")
	if walks, updates := tr.counts(); walks != 1 || updates != 2 {
		t.Errorf("walks %d, updates %d; want 1 and 2", walks, updates)
	}
}

// TestTrackedDirectoryRenamedWithin: a directory renamed inside the workspace keeps being watched
// under its new name, and its old name is forgotten.
func TestTrackedDirectoryRenamedWithin(t *testing.T) {
	w := newTestWS(t)
	w.write("a/sub/f", "one", 0o644)
	w.write("b/g", "two", 0o644)
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)
	if err := os.Rename(w.abs("a/sub"), w.abs("b/moved")); err != nil {
		t.Fatal(err)
	}
	snap := w.snapshot()
	w.requireSnapshotExact(snap.Root, nil, "after the rename")
	w.write("b/moved/f", "changed after the move", 0o644)
	w.write("b/moved/new", "new", 0o644)
	snap = w.snapshot()
	w.requireSnapshotExact(snap.Root, nil, "changed under the new name")
	w.mkdir("a/sub", 0o755) // the old name again, a new directory
	w.write("a/sub/x", "x", 0o644)
	snap = w.snapshot()
	w.requireSnapshotExact(snap.Root, nil, "the old name reused")
	if walks, _ := tr.counts(); walks != 1 {
		t.Errorf("%d walks, want 1", walks)
	}
}

// TestTrackedChangeBetweenEventAndStat: a file written again after the events were taken is
// recorded by that snapshot or, at the latest, by the next.
func TestTrackedChangeBetweenEventAndStat(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "first", 0o644)
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)
	w.write("f", "second", 0o644)
	var once atomic.Bool
	w.sc.afterTake = func() {
		if once.CompareAndSwap(false, true) {
			w.write("f", "third!", 0o644) // same size as "second": only the event tells
		}
	}
	w.snapshot()
	w.sc.afterTake = nil
	snap := w.snapshot()
	if got := entryOf(t, w.flatten(snap.Root), "f"); got.Hash != fileEntry("f", "third!", 0o644).Hash {
		t.Fatalf("the write after the events were taken was lost: %+v", got)
	}
	w.requireSnapshotExact(snap.Root, nil, "after the late write")
}

// TestTrackedRenameStorm: thousands of renames of files and directories, back and forth, between
// two snapshots.
func TestTrackedRenameStorm(t *testing.T) {
	w := newTestWS(t)
	for i := range 40 {
		w.write(fmt.Sprintf("d%d/f%d", i%8, i), fmt.Sprint(i), 0o644)
	}
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)
	r := rand.New(rand.NewPCG(31, 32))
	for range 3000 {
		a, b := r.IntN(8), r.IntN(8)
		if r.IntN(4) == 0 {
			_ = os.Rename(w.abs(fmt.Sprintf("d%d", a)), w.abs(fmt.Sprintf("d%d/x%d", b, r.IntN(3))))
			_ = os.Rename(w.abs(fmt.Sprintf("d%d/x%d", b, r.IntN(3))), w.abs(fmt.Sprintf("d%d", a)))
			continue
		}
		i := r.IntN(40)
		_ = os.Rename(w.abs(fmt.Sprintf("d%d/f%d", a, i)), w.abs(fmt.Sprintf("d%d/f%d", b, i)))
	}
	snap := w.snapshot()
	w.requireSnapshotExact(snap.Root, nil, "after the rename storm")
	snap = w.snapshot()
	w.requireSnapshotExact(snap.Root, nil, "the snapshot after")
}

// TestTrackedIgnoreRulesChange: a change to .planignore makes the next snapshot walk with the new
// rules.
func TestTrackedIgnoreRulesChange(t *testing.T) {
	w := newTestWS(t)
	w.write("a/keep", "k", 0o644)
	w.write("a/noise.log", "n", 0o644)
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)
	w.write(IgnoreFile, "*.log\n", 0o644)
	snap := w.snapshot()
	w.requireSnapshotExact(snap.Root, map[string]bool{"a/noise.log": true}, "after the rules changed")
	if walks, _ := tr.counts(); walks != 2 {
		t.Errorf("%d walks, want 2", walks)
	}
}

// TestTrackedHardLinkChangedFromOutside: a file with a hard link outside the workspace, written
// through that link, makes no event in the workspace: it is still recorded.
func TestTrackedHardLinkChangedFromOutside(t *testing.T) {
	w := newTestWS(t)
	w.write("linked", "original", 0o644)
	outside := filepath.Join(filepath.Dir(w.root), "outside-link")
	if err := os.Link(w.abs("linked"), outside); err != nil {
		t.Skipf("cannot hard-link here: %v", err)
	}
	t.Cleanup(func() { _ = os.Remove(outside) })
	tr := w.tracked()
	w.snapshot()
	requireWatching(t, tr)
	time.Sleep(30 * time.Millisecond)
	if err := os.WriteFile(outside, []byte("written outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := w.snapshot()
	if got := entryOf(t, w.flatten(snap.Root), "linked"); got.Hash != fileEntry("linked", "written outside", 0o644).Hash {
		t.Fatal("a write through a hard link outside the workspace was missed")
	}
	if walks, updates := tr.counts(); walks != 1 || updates != 1 {
		t.Errorf("walks %d, updates %d; want 1 and 1", walks, updates)
	}
}

// TestTrackStopSavesTheStatCache: what tracked snapshots learnt reaches the stat cache when
// tracking stops, so the next command's walk reads nothing again.
func TestTrackStopSavesTheStatCache(t *testing.T) {
	w := newTestWS(t)
	w.write("a/f", "one", 0o644)
	stop := w.sc.Track()
	inner := w.sc.Track()             // nested: only the outer stop ends tracking
	time.Sleep(30 * time.Millisecond) // no entry racy: the next walk can trust every one
	w.snapshot()
	w.write("a/g", "two", 0o644)
	time.Sleep(30 * time.Millisecond)
	snap := w.snapshot()
	inner()
	if w.sc.tracking() == nil {
		t.Fatal("the inner stop ended tracking")
	}
	stop()
	if w.sc.tracking() != nil {
		t.Fatal("tracking did not end")
	}
	if _, ok := cacheFiles(t, w.l.StatCache())["a/g"]; !ok {
		t.Fatal("the stat cache does not know the file the tracked snapshot recorded")
	}
	reused, h := w.reusedDirs()
	if h != snap.Root || !reused[""] {
		t.Errorf("the walk after tracking: root %s (want %s), reused %v", h, snap.Root, reused)
	}
}

// TestTrackedOffByTrackOff: TrackOff (PLAN_WATCH=0) turns tracking off.
func TestTrackedOffByTrackOff(t *testing.T) {
	w := newTestWS(t)
	w.sc.TrackOff("PLAN_WATCH=0")
	w.write("f", "x", 0o644)
	tr := w.tracked()
	w.snapshot()
	w.snapshot()
	if walks, updates := tr.counts(); walks != 0 || updates != 0 || tr.off == "" {
		t.Errorf("walks %d updates %d off %q", walks, updates, tr.off)
	}
}

// TestTrackedWriteInTheSameTick: a write that leaves the file's stat key as it was (same size, in
// the same timestamp tick) is read again because the event says it was written.
func TestTrackedWriteInTheSameTick(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "aaaa", 0o644)
	tr := w.tracked()
	w.sc.clock = func() time.Time { return time.Now().Add(time.Hour) } // never racy: only events tell
	w.snapshot()
	requireWatching(t, tr)
	w.write("f", "bbbb", 0o644)
	// Make the kept tree claim the key the file has now, as a write within the tick would leave it.
	fi, err := os.Lstat(w.abs("f"))
	if err != nil {
		t.Fatal(err)
	}
	k, _ := keyOf(fi)
	tr.mu.Lock()
	tr.root.children[0].key = k
	tr.mu.Unlock()
	snap := w.snapshot()
	if got := entryOf(t, w.flatten(snap.Root), "f"); got.Hash != fileEntry("f", "bbbb", 0o644).Hash {
		t.Fatal("a write the stat key does not show was missed despite its event")
	}
}

// TestTrackedSnapshotWithTheTargetsRules: a rollback's safety snapshot adds the target tree's
// ignore rules; when they are the live ones the snapshot stays incremental, when they differ it
// walks with the union of both.
func TestTrackedSnapshotWithTheTargetsRules(t *testing.T) {
	w := newTestWS(t)
	w.write(IgnoreFile, "*.log\n", 0o644)
	w.write("a/f", "f", 0o644)
	w.write("a/x.tmp", "tmp", 0o644)
	tr := w.tracked()
	same := w.snapshot()
	requireWatching(t, tr)
	w.write("a/g", "g", 0o644)
	snap, err := w.sc.Snapshot(t.Context(), nil, same.Root)
	if err != nil {
		t.Fatal(err)
	}
	w.requireSnapshotExact(snap.Root, nil, "with the same rules added")
	if walks, updates := tr.counts(); walks != 1 || updates != 1 {
		t.Errorf("walks %d, updates %d: the same rules made the snapshot walk", walks, updates)
	}

	w.write(IgnoreFile, "*.tmp\n", 0o644)
	other := w.snapshot() // the rules changed: a walk
	w.write(IgnoreFile, "*.log\n", 0o644)
	snap, err = w.sc.Snapshot(t.Context(), nil, other.Root)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.flatten(snap.Root); slices.ContainsFunc(got, func(e tree.Entry) bool { return e.Path == "a/x.tmp" }) {
		t.Fatal("the target's rule (*.tmp) was not applied")
	}
	if walks, _ := tr.counts(); walks != 3 {
		t.Errorf("%d walks, want 3 (the first, the rules changed, the target's rules added)", walks)
	}
}

// TestDirtySetNamesAndBound: an event naming a directory itself makes it be listed again without
// naming an entry; past maxDirtyNames names the set gives up its names and says why (the next
// snapshot walks), and stays so whatever comes after.
func TestDirtySetNamesAndBound(t *testing.T) {
	var d dirtySet
	d.add("a", "", 0)
	if dd := d.dirs["a"]; dd == nil || !dd.relist || len(dd.names) != 0 || d.names != 0 {
		t.Fatalf("an event on the directory itself: %+v", d.dirs["a"])
	}
	d.add("a", "f", evContent)
	d.add("a", "f", evAttr)
	if got := d.dirs["a"].names["f"]; got != evContent|evAttr || d.names != 1 {
		t.Fatalf("two events for one name: flags %b, %d names", got, d.names)
	}
	for i := range maxDirtyNames {
		d.add("b", fmt.Sprint(i), evContent)
	}
	if !strings.Contains(d.uncertain, "changed names") || d.dirs != nil || d.names != 0 {
		t.Fatalf("past the bound: uncertain %q, %d dirs, %d names", d.uncertain, len(d.dirs), d.names)
	}
	d.add("c", "g", evEntry)
	if d.dirs != nil {
		t.Fatal("an uncertain set took more names")
	}
}
