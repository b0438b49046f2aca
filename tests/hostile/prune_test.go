package hostile

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// Prune and gc against a hostile environment: a gc killed at random while it re-encodes what kept
// checkpoints need, and a disk budget squeezed until nothing can be freed. Neither may ever leave a
// kept checkpoint unreadable, nor delete a checkpoint something still needs.

// appendHistory makes n checkpoints of files appended to and returns their IDs and, for each,
// the content of every file, oldest first.
func appendHistory(w *workspace, r *rand.Rand, n, files int) ([]string, []map[string]string) {
	w.t.Helper()
	var ids []string
	var states []map[string]string
	cur := map[string]string{}
	for c := range n {
		for i := range files {
			rel := fmt.Sprintf("logs/f%02d.log", i)
			var add strings.Builder
			for range 15 {
				fmt.Fprintf(&add, "%d %d %x\n", c, i, r.Uint64())
			}
			cur[rel] += add.String()
			w.write(rel, cur[rel])
		}
		ids = append(ids, w.checkpoint(fmt.Sprintf("append %d", c)))
		st := map[string]string{}
		for k, v := range cur {
			st[k] = v
		}
		states = append(states, st)
	}
	return ids, states
}

// requireRestores rolls back to id and requires every file to be as recorded.
func requireRestores(w *workspace, id string, want map[string]string, context string) {
	w.t.Helper()
	w.must("rollback", "--to-checkpoint", id, "--yes")
	for rel, content := range want {
		if got := w.read(rel); got != content {
			w.t.Fatalf("%s: after rolling back to %s, %s differs (%d bytes, want %d)", context, id, rel, len(got), len(content))
		}
	}
}

// A gc killed at a random moment, over and over while it re-encodes the kept versions of appended
// files, never leaves a kept checkpoint that does not verify or restore; the gc run after it frees
// what the pruned checkpoints held.
func TestHostileGCKilledWhileReencoding(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 24))
	for trial := range trials(3) {
		w := newWorkspace(t, nil)
		ids, states := appendHistory(w, r, 12, 25)
		w.must("checkpoint", "prune", "--keep", "2", "--yes")
		p := startPlan(t, w.dir, w.env, "gc")
		time.Sleep(time.Duration(r.IntN(400)) * time.Millisecond)
		res := p.kill(t)
		if !res.killed && res.code != 0 {
			t.Fatalf("trial %d: %s", trial, res)
		}
		w.must("verify", "--read-data")
		w.must("doctor")
		var gc struct {
			ObjectsReencoded int `json:"objects_reencoded"`
		}
		w.mustJSON(&gc, "gc")
		var again struct {
			ObjectsReencoded int   `json:"objects_reencoded"`
			BytesReclaimed   int64 `json:"bytes_reclaimed"`
		}
		w.mustJSON(&again, "gc")
		if again.ObjectsReencoded != 0 || again.BytesReclaimed != 0 {
			t.Fatalf("trial %d: a second gc still had work: %+v", trial, again)
		}
		w.must("verify", "--read-data")
		for i := len(ids) - 2; i < len(ids); i++ {
			requireRestores(w, ids[i], states[i], fmt.Sprintf("trial %d (gc killed: %v)", trial, res.killed))
		}
	}
}

// A budget far below what the workspace needs prunes only what nothing needs: the newest
// checkpoint, a pinned one, and the pre_decision checkpoint of a live decision survive every
// command, each restores, and every command still succeeds, warning why the store is over.
func TestHostileBudgetNeverDeletesANeededCheckpoint(t *testing.T) {
	w := newWorkspace(t, nil)
	r := rand.New(rand.NewPCG(5, 24))
	ids, states := appendHistory(w, r, 4, 10)
	pinned := ids[0]
	w.must("checkpoint", "pin", pinned)
	w.must("exec", "--id", "grow", "--", "sh", "-c", "head -c 20000 /dev/urandom > grown.bin")
	var cps []struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	w.mustJSON(&cps, "checkpoint", "list")
	var pre string
	for _, c := range cps {
		if c.Type == "pre_decision" {
			pre = c.ID
		}
	}
	if pre == "" {
		t.Fatal("plan exec made no pre_decision checkpoint")
	}
	cfg, err := os.OpenFile(w.path(".plan/config.yaml"), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.WriteString("store:\n  max_bytes: 1KiB\n"); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		w.write(fmt.Sprintf("new/%d.bin", i), strings.Repeat(fmt.Sprintf("%x", r.Uint64()), 2000))
		res := w.run("checkpoint", "create", "--note", fmt.Sprintf("over %d", i))
		if res.code != 0 || !strings.Contains(res.stderr, "over its budget") {
			t.Fatalf("checkpoint over the budget: %s", res)
		}
	}
	w.mustJSON(&cps, "checkpoint", "list")
	have := map[string]bool{}
	for _, c := range cps {
		have[c.ID] = true
	}
	for _, id := range []string{pinned, pre, cps[0].ID} {
		if !have[id] {
			t.Fatalf("the budget deleted %s, which is needed (left: %v)", id, cps)
		}
	}
	if len(cps) != 3 {
		t.Fatalf("%d checkpoints left, want the 3 that are needed: %v", len(cps), cps)
	}
	w.must("verify", "--read-data")
	requireRestores(w, pinned, states[0], "the pinned checkpoint")
}

// On a shared S3 store, a quota far below what the workspace needs prunes only this workspace's
// checkpoints that nothing needs, never another workspace's content: the other workspace's
// checkpoint still verifies and restores after a gc with no grace period.
func TestHostileQuotaOnASharedStore(t *testing.T) {
	s3 := newS3Store(t, "quota")
	other := newWorkspace(t, s3.Env, "--store", s3.URL)
	other.write("shared.txt", strings.Repeat("content both workspaces hold\n", 2000))
	otherID := other.checkpoint("other")
	w := newWorkspace(t, s3.Env, "--store", s3.URL)
	r := rand.New(rand.NewPCG(7, 24))
	ids, states := appendHistory(w, r, 3, 5)
	w.must("checkpoint", "pin", ids[0])
	// The quota is under store, beside its URL.
	conf, err := os.ReadFile(w.path(".plan/config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	quota := strings.Replace(string(conf), "store: "+s3.URL+"\n", "store:\n  url: "+s3.URL+"\n  workspace_max_bytes: 1KiB\n", 1)
	if quota == string(conf) {
		t.Fatalf("no store line in the configuration:\n%s", conf)
	}
	if err := os.WriteFile(w.path(".plan/config.yaml"), []byte(quota), 0o600); err != nil {
		t.Fatal(err)
	}
	w.write("shared.txt", strings.Repeat("content both workspaces hold\n", 2000))
	res := w.run("checkpoint", "create", "--note", "over")
	if res.code != 0 || !strings.Contains(res.stderr, "over its budget") {
		t.Fatalf("checkpoint over the quota: %s", res)
	}
	var cps []struct {
		ID string `json:"id"`
	}
	w.mustJSON(&cps, "checkpoint", "list")
	if len(cps) != 2 || cps[1].ID != ids[0] {
		t.Fatalf("left %v, want the newest and the pinned %s", cps, ids[0])
	}
	w.must("gc", "--grace", "0s")
	other.must("verify", "--read-data")
	other.must("rollback", "--to-checkpoint", otherID, "--yes")
	w.must("verify", "--read-data")
	requireRestores(w, ids[0], states[0], "the pinned checkpoint")
}
