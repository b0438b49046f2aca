package hostile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The trackers: what the in-run tracker (inotify) and the stat cache vouch for must be what is on
// disk. Each test here drives `plan run`, `correct` or `rollback` as a user would, then reads what
// the checkpoints recorded.

// trackerEntry is one entry of `checkpoint show --files --json`.
type trackerEntry struct {
	Path   string `json:"path"`
	Kind   string `json:"kind"`
	Mode   string `json:"mode"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Target string `json:"target"`
}

// trackerEntries is what checkpoint id recorded, by path.
func trackerEntries(w *workspace, id string) map[string]trackerEntry {
	w.t.Helper()
	var doc struct {
		Entries []trackerEntry `json:"entries"`
	}
	w.mustJSON(&doc, "checkpoint", "show", id, "--files")
	out := make(map[string]trackerEntry, len(doc.Entries))
	for _, e := range doc.Entries {
		out[e.Path] = e
	}
	return out
}

// trackerDecisionCheckpoints is each decision's pre_decision checkpoint, from `status --json`.
func trackerDecisionCheckpoints(w *workspace) map[string]string {
	w.t.Helper()
	var doc struct {
		Decisions []struct {
			ID           string `json:"id"`
			CheckpointID string `json:"checkpoint_id"`
		} `json:"decisions"`
	}
	w.mustJSON(&doc, "status")
	out := map[string]string{}
	for _, d := range doc.Decisions {
		out[d.ID] = d.CheckpointID
	}
	return out
}

// trackerPlan writes a plan file (outside the workspace) and returns its path.
func trackerPlan(t testing.TB, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func trackerSum(content string) string {
	s := sha256.Sum256([]byte(content))
	return hex.EncodeToString(s[:])
}

// Finding (watch-dir-inode-reuse, -loss): a directory deleted and made again within one decision
// gets the same inode number on ext4; the tracker took it for the watched one, so nothing written in
// it later was in any checkpoint, and a correction of the next decision restored an older version
// (the one the corrected decision started from was lost for good).
func TestTrackerDirectoryRecreatedSameInode(t *testing.T) {
	w := newWorkspace(t, nil)
	p := trackerPlan(t, `name: reuse
decisions:
  - id: d1
    run: mkdir d && echo old > d/old
  - id: d2
    run: rm -rf d && mkdir d && echo v0 > d/f
  - id: d3
    run: echo v1-precious > d/f && echo more > d/g
  - id: d4
    run: echo v2-wrong > d/f
`)
	w.must("-q", "run", p)
	cps := trackerDecisionCheckpoints(w)
	got := trackerEntries(w, cps["d4"])
	if got["d/f"].SHA256 != trackerSum("v1-precious\n") || got["d/g"].SHA256 != trackerSum("more\n") {
		t.Fatalf("d4's pre_decision checkpoint misses what d3 wrote in the re-created d: d/f %+v, d/g %+v", got["d/f"], got["d/g"])
	}
	w.must("-q", "correct", "--decision", "d4", "--reason", "wrong", "--no-reexecute", "--yes")
	if got := w.read("d/f"); got != "v1-precious\n" {
		t.Fatalf("after the correction of d4, d/f = %q, want the v1-precious d4 started from", got)
	}
}

// Finding (watch-hardlink-inside): a hard link made inside the workspace during a run, a write
// through it and its removal: the first name had one link when it was read and was never read
// again, so the version written through the link was in no checkpoint, and a correction of the
// next decision restored an older one.
func TestTrackerHardLinkInside(t *testing.T) {
	w := newWorkspace(t, nil)
	w.write("a", "original\n")
	p := trackerPlan(t, `name: hl
decisions:
  - id: s1
    run: ln a b
  - id: s2
    run: echo CHANGED-VIA-LINK > b && rm b
  - id: s3
    run: echo V3 > a
`)
	w.must("-q", "run", p)
	cps := trackerDecisionCheckpoints(w)
	if got := trackerEntries(w, cps["s3"])["a"]; got.SHA256 != trackerSum("CHANGED-VIA-LINK\n") {
		t.Fatalf("s3's pre_decision checkpoint records a as %s, not the content written through the link", got.SHA256)
	}
	w.must("-q", "correct", "--decision", "s3", "--reason", "x", "--no-reexecute", "--yes")
	if got := w.read("a"); got != "CHANGED-VIA-LINK\n" {
		t.Fatalf("after the correction of s3, a = %q", got)
	}
}

// Finding (statcache-patch-after-restore): after a rollback, each restored file's stat cache entry
// got the stat taken at the end of the restore: a write by another process to a file the restore
// had already put in place was vouched for as the restored content, and the next checkpoints
// recorded what was not on disk.
func TestTrackerStatCacheWriterDuringRestore(t *testing.T) {
	w := newWorkspace(t, nil)
	const n = 500 // enough files that the restore goes on well past the racy margin after 000
	for i := range n {
		w.write(fmt.Sprintf("d/f%05d", i), fmt.Sprintf("v0 %d\n", i))
	}
	w.write("000", "ORIGINAL-C0\n")
	c0 := w.checkpoint("c0")
	for i := range n {
		w.write(fmt.Sprintf("d/f%05d", i), fmt.Sprintf("v1 %d\n", i))
	}
	w.write("000", "C1-content\n")
	w.checkpoint("c1")

	// An editor that writes 000 as soon as the restore has put it back.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if b, err := os.ReadFile(w.path("000")); err == nil && string(b) == "ORIGINAL-C0\n" {
				_ = os.WriteFile(w.path("000"), []byte("CONCURRENT-EDIT\n"), 0o644)
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	w.must("-q", "rollback", "--to-checkpoint", c0, "--yes")
	close(stop)
	wg.Wait()
	disk := w.read("000")
	if disk != "CONCURRENT-EDIT\n" {
		t.Logf("the writer did not race the restore this time (000 = %q)", disk)
	}
	c2 := w.checkpoint("after the rollback")
	if got := trackerEntries(w, c2)["000"]; got.SHA256 != trackerSum(disk) {
		t.Fatalf("the checkpoint after the rollback records 000 as %s; on disk it is %q", got.SHA256, strings.TrimSpace(disk))
	}
}
