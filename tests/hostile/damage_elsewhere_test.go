package hostile

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The watch service lives for hours; what it keeps in memory must never vouch for what the store
// on disk no longer holds. Damage another process found (a verify), damage no one has found yet
// (a record spoilt since the service read or wrote it) and a repair made by another process all
// reach the service as they would reach a new process: every checkpoint it takes restores byte for
// byte.

// flipRecord inverts one byte in the data of every record of object h (hex) in the workspace's
// packs, read as docs/store.md describes the format (a 12-byte header, then records: kind, hash,
// raw and stored sizes as uvarints, the data, an 8-byte trailer).
func flipRecord(w *workspace, h string) {
	w.t.Helper()
	want, err := hex.DecodeString(h)
	if err != nil {
		w.t.Fatal(err)
	}
	packs, err := filepath.Glob(w.state("objects/packs/*.pack"))
	if err != nil {
		w.t.Fatal(err)
	}
	found := 0
	for _, p := range packs {
		b, err := os.ReadFile(p)
		if err != nil {
			w.t.Fatal(err)
		}
		changed := false
		for off := 12; off < len(b); {
			hash := b[off+1 : off+33]
			n := off + 33
			_, m := binary.Uvarint(b[n:])
			n += m
			comp, m := binary.Uvarint(b[n:])
			n += m
			if string(hash) == string(want) {
				b[n+int(comp)/2] ^= 0x10
				changed, found = true, found+1
			}
			off = n + int(comp) + 8
		}
		if !changed {
			continue
		}
		if err := os.Chmod(p, 0o600); err != nil {
			w.t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o400); err != nil {
			w.t.Fatal(err)
		}
	}
	if found == 0 {
		w.t.Fatalf("no record of %s in the packs", h)
	}
}

// serviceSnapshots is how many snapshots the workspace's watch service has answered.
func serviceSnapshots(w *workspace) int {
	w.t.Helper()
	var st watchStatus
	w.mustJSON(&st, "watch", "status")
	return st.Snapshots
}

// checkpointThroughService creates a checkpoint and requires the service to have answered it.
func checkpointThroughService(w *workspace, note string) string {
	w.t.Helper()
	before := serviceSnapshots(w)
	id := w.checkpoint(note)
	if serviceSnapshots(w) <= before {
		w.t.Fatalf("checkpoint %q was not taken through the watch service", note)
	}
	return id
}

// requireRestoresFile removes rel, rolls back to checkpoint id and requires rel to hold content;
// id must verify, reading its data, first.
func requireRestoresFile(w *workspace, id, rel, content string) {
	w.t.Helper()
	if err := os.Remove(w.path(rel)); err != nil {
		w.t.Fatal(err)
	}
	w.must("verify", "--read-data", id)
	w.must("rollback", "--to-checkpoint", id, "--yes")
	if got := w.read(rel); got != content {
		w.t.Fatalf("rollback to %s gave %s of %d bytes, want %d", id, rel, len(got), len(content))
	}
}

// Finding: `plan verify` in another process recorded a copy damaged; the service's view of the
// store (same packs, same sizes) did not read the damaged-object list again, so its next
// checkpoint referenced the damaged copy of an unchanged file instead of storing the intact file
// again, as a walk does. In a directory the service had confirmed whole, and in the one that
// changed.
func TestHostileServiceSeesDamageAnotherProcessFound(t *testing.T) {
	for _, rel := range []string{"sub/deep/f.bin", "f.bin"} {
		t.Run(strings.ReplaceAll(rel, "/", "_"), func(t *testing.T) {
			w := newWorkspace(t, nil)
			content := randomContent(t, 8192)
			w.write(rel, content)
			w.write("top.txt", "keep")
			svc := startWatch(t, w)
			defer svc.kill(t)
			for i := range 3 {
				w.write("top.txt", fmt.Sprint(i))
				checkpointThroughService(w, fmt.Sprint("through the service ", i))
			}
			flipRecord(w, trackerSum(content))
			if r := w.run("verify", "--read-data"); r.code != 6 {
				t.Fatalf("verify did not find the damage: %s", r)
			}
			// Found once, known since: the verify that reads no data does not call it sound.
			if r := w.run("verify"); r.code != 6 {
				t.Fatalf("verify without --read-data passed a copy found damaged: %s", r)
			}
			w.write("top.txt", "after")
			id := checkpointThroughService(w, "after the damage was found")
			requireRestoresFile(w, id, rel, content)
		})
	}
}

// Finding: the service made the new version of an edited file a delta against the previous
// version it kept in memory, whose record on disk was damaged (found by a verify, or by no one
// yet): the checkpoint said it held the edit, and could not give it back.
func TestHostileServiceNeverDeltasOnADamagedBase(t *testing.T) {
	for _, verified := range []bool{false, true} {
		t.Run(fmt.Sprint("verified=", verified), func(t *testing.T) {
			w := newWorkspace(t, nil)
			svc := startWatch(t, w)
			defer svc.kill(t)
			v1 := randomContent(t, 3000) // small: the service keeps it as the next version's base
			w.write("log.bin", v1)
			checkpointThroughService(w, "v1")
			w.write("other", "a")
			checkpointThroughService(w, "other")
			flipRecord(w, trackerSum(v1))
			if verified {
				if r := w.run("verify", "--read-data"); r.code != 6 {
					t.Fatalf("verify did not find the damage: %s", r)
				}
			}
			v2 := v1 + "an appended line\n"
			w.write("log.bin", v2)
			id := checkpointThroughService(w, "v2")
			requireRestoresFile(w, id, "log.bin", v2)
		})
	}
}

// Finding: the same with a directory listing: one damaged record of the newest root tree, and the
// next checkpoint's root, a patch against the copy the service kept, could not be restored at all.
func TestHostileServiceNeverPatchesADamagedListing(t *testing.T) {
	w := newWorkspace(t, nil)
	svc := startWatch(t, w)
	defer svc.kill(t)
	files := map[string]string{}
	for i := range 30 {
		rel := fmt.Sprintf("f%d.txt", i)
		files[rel] = fmt.Sprintf("file %d\n", i)
		w.write(rel, files[rel])
	}
	checkpointThroughService(w, "all")
	files["f1.txt"] += "a\n"
	w.write("f1.txt", files["f1.txt"])
	var show struct {
		Root string `json:"root_tree"`
	}
	w.mustJSON(&show, "checkpoint", "show", checkpointThroughService(w, "f1 edited"))
	flipRecord(w, show.Root)
	files["f2.txt"] += "b\n"
	w.write("f2.txt", files["f2.txt"])
	id := checkpointThroughService(w, "f2 edited")
	target := filepath.Join(t.TempDir(), "restored")
	w.must("restore", id, "--target", target)
	for rel, want := range files {
		b, err := os.ReadFile(filepath.Join(target, rel))
		if err != nil || string(b) != want {
			t.Fatalf("restored %s: %q (%v), want %q", rel, b, err, want)
		}
	}
}

// Finding (availability): an idx damaged under the running service, then rebuilt by `plan doctor
// --repair` in another process: the service kept the damaged table it had found (same pack, same
// size) and refused every snapshot, so every command warned and walked until it was restarted.
func TestHostileServiceTakesARepairedIdx(t *testing.T) {
	w := newWorkspace(t, nil)
	svc := startWatch(t, w)
	defer svc.kill(t)
	w.write("a.txt", "a")
	checkpointThroughService(w, "a")
	for i := range 3 {
		w.write(fmt.Sprintf("sub/s%d", i), fmt.Sprint(i))
	}
	if r := runPlan(t, w.dir, append(w.env, "PLAN_WATCH=0"), "checkpoint", "create"); r.code != 0 {
		t.Fatalf("walking checkpoint: %s", r)
	}
	idx := largestIdx(w)
	b, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	b[12+57+50] ^= 0x01 // the stored size of the second entry: the layout holds, the check fails
	if err := os.Chmod(idx, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idx, b, 0o400); err != nil {
		t.Fatal(err)
	}
	w.write("a.txt", "b")
	w.run("checkpoint", "create") // the service finds the damage, whatever this command then does
	w.must("doctor", "--repair")
	w.write("a.txt", "c")
	id := checkpointThroughService(w, "after the repair")
	requireRecorded(t, w, id, "a.txt", "sub/s0", "sub/s1", "sub/s2")
}

// The same without the service: a walking checkpoint takes the files its stat cache vouches for
// as present only in the very view of the store the cache was confirmed in; damage a verify
// recorded since is a new view, and the damaged file is stored again.
func TestHostileWalkSeesDamageAnotherProcessFound(t *testing.T) {
	w := newWorkspace(t, []string{"PLAN_WATCH=0"})
	content := randomContent(t, 8192)
	w.write("sub/f.bin", content)
	w.write("top.txt", "keep")
	w.checkpoint("first")
	w.checkpoint("no change: the stat cache vouches")
	flipRecord(w, trackerSum(content))
	if r := w.run("verify", "--read-data"); r.code != 6 {
		t.Fatalf("verify did not find the damage: %s", r)
	}
	id := w.checkpoint("no change, after the damage was found")
	requireRestoresFile(w, id, "sub/f.bin", content)
}

// Finding (view stamp): an idx replaced by another valid idx of the same size (one listing other
// objects) kept the stamp of the store's view, so a walking checkpoint took every unchanged file as
// present without a lookup and referenced objects the store could not find; a lookup stores them
// again. The stamp names each idx by its checksum too.
func TestHostileWalkSeesAnIdxReplaced(t *testing.T) {
	var ws [2]*workspace
	for i := range ws {
		ws[i] = newWorkspace(t, []string{"PLAN_WATCH=0"})
		ws[i].write("sub/a.bin", randomContent(t, 3000))
		ws[i].write("top.txt", fmt.Sprint("top of ", i))
		old := time.Now().Add(-time.Hour) // not racy: the stat cache vouches for them
		for _, rel := range []string{"sub/a.bin", "top.txt", "sub", "."} {
			if err := os.Chtimes(ws[i].path(rel), old, old); err != nil {
				t.Fatal(err)
			}
		}
		ws[i].checkpoint("first")
	}
	w := ws[0]
	content := w.read("sub/a.bin")
	w.checkpoint("no change: the stat cache names the view")
	mine, _ := filepath.Glob(w.state("objects/packs/*.idx"))
	theirs, _ := filepath.Glob(ws[1].state("objects/packs/*.idx"))
	if len(mine) != 1 || len(theirs) != 1 {
		t.Fatalf("want one idx each: %v %v", mine, theirs)
	}
	b, err := os.ReadFile(theirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(mine[0]); err != nil || fi.Size() != int64(len(b)) {
		t.Fatalf("the two idx files differ in size: %v", err)
	}
	if err := os.Chmod(mine[0], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine[0], b, 0o400); err != nil {
		t.Fatal(err)
	}
	id := w.checkpoint("no change, over another idx")
	requireRestoresFile(w, id, "sub/a.bin", content)
}
