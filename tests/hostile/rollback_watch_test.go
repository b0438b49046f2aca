package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A rollback with `plan watch` running tells the service which files it placed, and the service
// stops doubting those (a file from an unwatched directory may be a hard link to another file of
// the workspace). Here everything the rule exists for happens to the files a rollback just placed:
// a hard link to one made inside the workspace, written through and removed again; a rolled-back
// file replaced by a hard link to another file and written through; a placed file moved away and
// another put in its place. Every checkpoint through the service must hold what is on disk, and
// the rollbacks must leave nothing they replaced in .plan/.
func TestRollbackWithWatchKeepsNoBlindSpot(t *testing.T) {
	w := newWorkspace(t, nil)
	for i := range 60 {
		w.write(fmt.Sprintf("d%d/f%d", i%6, i), fmt.Sprint("v1 ", i))
	}
	base := w.checkpoint("base")
	svc := startWatch(t, w)
	defer func() { _ = svc.kill(t) }()
	all := func() []string {
		var out []string
		for i := range 60 {
			out = append(out, fmt.Sprintf("d%d/f%d", i%6, i))
		}
		return out
	}
	change := func(tag string) {
		for i := 0; i < 60; i += 3 {
			w.write(fmt.Sprintf("d%d/f%d", i%6, i), tag+fmt.Sprint(i))
		}
	}
	rollback := func() {
		change("changed ")
		w.must("--yes", "rollback", "--to-checkpoint", base)
	}
	check := func(what string) {
		t.Helper()
		requireRecorded(t, w, w.checkpoint(what), all()...)
	}

	// A link to a placed file made, written through (an event for the link's name only) and removed.
	rollback()
	if err := os.Link(w.path("d0/f0"), w.path("d1/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.path("d1/link"), []byte("through the link"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(w.path("d1/link")); err != nil {
		t.Fatal(err)
	}
	if got := w.read("d0/f0"); got != "through the link" {
		t.Fatalf("d0/f0 holds %q", got)
	}
	check("after a write through a removed link to a placed file")

	// A placed file replaced by a hard link to another file, written through that other name.
	rollback()
	if err := os.Remove(w.path("d3/f3")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(w.path("d0/f6"), w.path("d3/f3")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.path("d0/f6"), []byte("written through f6"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("after a placed file became a link to another")
	if err := os.Remove(w.path("d3/f3")); err != nil {
		t.Fatal(err)
	}
	w.write("d3/f3", "v1 3")

	// A placed file moved away, another put in its place, then moved back.
	rollback()
	w.write("tmp-other", "other")
	if err := os.Rename(w.path("d0/f12"), w.path("d0/away")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(w.path("tmp-other"), w.path("d0/f12")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.path("d0/f12"), []byte("other, written"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(w.path("d0/away"), w.path("d0/f12")); err != nil {
		t.Fatal(err)
	}
	check("after a placed file was swapped away and back")

	if entries, err := os.ReadDir(filepath.Join(w.dir, ".plan", "staging")); err == nil && len(entries) > 0 {
		t.Fatalf(".plan/staging holds %d entries after the rollbacks", len(entries))
	}
	// What the rollbacks replaced: the service removes it once it has answered.
	trash := filepath.Join(w.dir, ".plan", "trash")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		entries, err := os.ReadDir(trash)
		if os.IsNotExist(err) || (err == nil && len(entries) == 0) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still holds %d entries (%v)", trash, len(entries), err)
		}
	}
}
