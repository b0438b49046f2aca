//go:build linux

package workspace

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// takeDoubt takes the tracker's events and reports whether they ask the next snapshot to stat
// every file (restatAll).
func takeDoubt(t *testing.T, tr *tracking) string {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	d := tr.w.take()
	if d.uncertain != "" {
		t.Fatalf("the events are uncertain: %s", d.uncertain)
	}
	return d.restatAll
}

// placedOf is what a restore reports of the file at rel.
func (w *testWS) placedOf(rel string) Placed {
	w.t.Helper()
	fi, err := os.Lstat(w.abs(rel))
	if err != nil {
		w.t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return Placed{Path: rel, Dev: uint64(st.Dev), Ino: st.Ino} //nolint:unconvert // widths differ between architectures
}

// moveIn puts content at rel the way a restore does: written in .plan/ (not watched), renamed in.
func (w *testWS) moveIn(rel, content string) {
	w.t.Helper()
	tmp := filepath.Join(w.l.State(), "moved-in")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Rename(tmp, w.abs(rel)); err != nil {
		w.t.Fatal(err)
	}
}

// TestRestoreVouchesForWhatItPlaced: a rollback renames its files in from .plan/staging, which
// the tracker does not watch, so each looks like a file from nowhere that may be a hard link to
// a file of the tree: changed and removed before the next snapshot, it made that snapshot stat
// every file. The restore tells the tracker what it placed, and the tracker takes its word for
// the files that are still the inode it placed, with no other name, and that no event but their
// arrival named. Every snapshot still equals a fresh scan.
func TestRestoreVouchesForWhatItPlaced(t *testing.T) {
	w := newTestWS(t)
	w.write("d/a", "one", 0o644)
	w.write("d/b", "two", 0o644)
	tr := w.tracked()
	before := w.snapshot()
	requireWatching(t, tr)
	w.snapshot() // past the first update after a walk, which stats every file anyway

	// The restore: d/a changed, rolled back; its file placed, then changed and removed.
	w.write("d/a", "changed", 0o644)
	after := w.snapshot()
	var heard []Placed
	var trash string
	w.r.OnPlaced = func(_ context.Context, files []Placed, tr string) bool {
		heard, trash = append(heard, files...), tr
		return false
	}
	if _, err := w.r.Apply(context.Background(), after.Root, before.Root, nil); err != nil {
		t.Fatal(err)
	}
	if len(heard) != 1 || heard[0] != w.placedOf("d/a") {
		t.Fatalf("the restore reported %+v as placed, want d/a as it is now", heard)
	}
	if trash == "" {
		t.Fatal("the restore replaced d/a but handed no trash over")
	}
	if _, err := os.Lstat(trash); !os.IsNotExist(err) {
		t.Fatalf("trash nobody took over is still there (%v)", err)
	}
	w.write("d/a", "edited after the rollback", 0o644)
	w.remove("d/a")
	if why := takeDoubt(t, tr); why != "" {
		t.Fatalf("a file the restore placed, changed and removed, made the snapshot stat every file: %s", why)
	}

	// Without the restore's word, the same moves are doubted (the rule Vouch relaxes).
	w.moveIn("d/b", "moved in")
	w.write("d/b", "edited", 0o644)
	w.remove("d/b")
	if why := takeDoubt(t, tr); why == "" {
		t.Fatal("a file moved in from an unwatched directory, changed and removed, was not doubted")
	}

	// The word is taken only for what it says.
	for _, c := range []struct {
		name  string
		setup func() Placed
	}{
		{"another inode", func() Placed {
			w.moveIn("d/c", "c")
			p := w.placedOf("d/c")
			p.Ino++
			return p
		}},
		{"another name", func() Placed {
			w.moveIn("d/c", "c")
			if err := os.Link(w.abs("d/c"), filepath.Join(w.l.State(), "c-link")); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Remove(filepath.Join(w.l.State(), "c-link")) })
			return w.placedOf("d/c")
		}},
		{"an event besides the arrival", func() Placed {
			w.moveIn("d/c", "c")
			w.write("d/c", "written after it arrived", 0o644)
			return w.placedOf("d/c")
		}},
	} {
		p := c.setup()
		if n := w.sc.Vouch([]Placed{p, {Path: "d/missing", Dev: 1, Ino: 1}, {Path: "../outside", Dev: 1, Ino: 1},
			{Path: ".plan/moved-in", Dev: 1, Ino: 1}}); n != 0 {
			t.Fatalf("%s: Vouch took %d files", c.name, n)
		}
		w.write("d/c", "edited", 0o644)
		w.remove("d/c")
		if why := takeDoubt(t, tr); why == "" {
			t.Fatalf("%s: a file not vouched for, changed and removed, was not doubted", c.name)
		}
	}
	w.moveIn("d/g", "g")
	if n := w.sc.Vouch([]Placed{w.placedOf("d/g")}); n != 1 {
		t.Fatalf("Vouch took %d files, want 1", n)
	}
	snap := w.snapshot()
	w.requireSnapshotExact(snap.Root, nil, "after vouched restores")
}

// TestVouchWithoutTracking: with nothing following the workspace (or nothing to vouch for), Vouch
// takes nothing.
func TestVouchWithoutTracking(t *testing.T) {
	w := newTestWS(t)
	w.write("a", "a", 0o644)
	if n := w.sc.Vouch([]Placed{w.placedOf("a")}); n != 0 {
		t.Fatalf("an untracked scanner vouched for %d files", n)
	}
	tr := w.tracked()
	if n := w.sc.Vouch([]Placed{w.placedOf("a")}); n != 0 {
		t.Fatalf("a tracker with no tree yet vouched for %d files", n)
	}
	w.snapshot()
	requireWatching(t, tr)
	if n := w.sc.Vouch(nil); n != 0 {
		t.Fatalf("vouched for %d of no files", n)
	}
	tr.mu.Lock()
	tr.w.close()
	n := tr.w.vouch(w.root, []Placed{w.placedOf("a")})
	tr.mu.Unlock()
	if n != 0 {
		t.Fatalf("a closed watcher vouched for %d files", n)
	}
}
