package hostile

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// plan watch remembers which objects it confirmed present, so that a snapshot does not follow
// every unchanged file's chain again. Attacked from outside the service: another process prunes
// and collects what the service once confirmed, or finds a copy damaged; the content comes back
// into the workspace; the service's next checkpoint must store it afresh (or onto an intact copy),
// never reference the copy that went. Every checkpoint verifies and restores byte for byte.
func TestHostileWatchForgetsWhatGCElsewhereRemoved(t *testing.T) {
	w := newWorkspace(t, nil)
	r := rand.New(rand.NewPCG(7, 29))
	noise := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			fmt.Fprintf(&b, "%016x", r.Uint64())
		}
		return b.String()[:n]
	}
	for i := range 20 {
		w.write(fmt.Sprintf("src/f%02d.txt", i), fmt.Sprintf("file %d\n", i))
	}
	svc := startWatch(t, w)
	defer func() { svc.kill(t) }()
	for trial := range trials(3) {
		first := noise(300_000)
		w.write("big.bin", first)
		w.checkpoint(fmt.Sprintf("first %d", trial))
		w.write("src/f00.txt", fmt.Sprintf("file 0, trial %d\n", trial))
		w.checkpoint(fmt.Sprintf("unchanged %d", trial)) // big.bin unchanged: the service confirms its blob present
		w.write("big.bin", noise(300_000))
		w.checkpoint(fmt.Sprintf("second %d", trial))
		// Another process: only the newest checkpoint kept, the rest collected.
		w.must("checkpoint", "prune", "--keep", "1", "--yes")
		var gc struct {
			BytesReclaimed int64 `json:"bytes_reclaimed"`
		}
		w.mustJSON(&gc, "gc")
		if gc.BytesReclaimed < 100_000 {
			t.Fatalf("trial %d: gc reclaimed %d bytes: the first version was not collected", trial, gc.BytesReclaimed)
		}
		// The first version comes back: the service must store it again.
		w.write("big.bin", first)
		var cp struct {
			ID          string `json:"id"`
			StoredBytes int64  `json:"stored_bytes"`
		}
		res := w.run("--json", "checkpoint", "create", "--note", fmt.Sprintf("back %d", trial))
		if res.code != 0 || json.Unmarshal([]byte(res.stdout), &cp) != nil {
			t.Fatalf("trial %d: %s", trial, res)
		}
		// The service answers, and answers right: a command that had to walk because the service
		// failed (it named objects gc had removed) says so.
		if strings.Contains(res.stderr, "watch service did not answer") {
			t.Fatalf("trial %d: the service failed the snapshot: %s", trial, res.stderr)
		}
		if cp.StoredBytes < 50_000 {
			t.Fatalf("trial %d: the content gc removed was not stored again (%d bytes stored)", trial, cp.StoredBytes)
		}
		w.must("verify", "--read-data")
		want := map[string]string{"big.bin": first}
		for i := 1; i < 20; i++ {
			want[fmt.Sprintf("src/f%02d.txt", i)] = fmt.Sprintf("file %d\n", i)
		}
		want["src/f00.txt"] = fmt.Sprintf("file 0, trial %d\n", trial)
		requireRestores(w, cp.ID, want, fmt.Sprintf("trial %d", trial))
	}
	var st watchStatus
	w.mustJSON(&st, "watch", "status")
	if st.Snapshots < 3 {
		t.Fatalf("the checkpoints did not go through the service: %+v", st)
	}
}
