package hostile

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"
)

// Deltas stored as patches (pack format 4: every tree delta, and the blob deltas of appends), by
// the watch service that keeps the trees it last stored in memory to patch against and by walking
// commands, attacked with kill -9: of the command while the service stores, of the service while
// the command waits for it (the next service starts with nothing in memory), and of a walking
// command between a pack and its idx. Every checkpoint that reported success must verify and
// restore byte for byte, and doctor must find nothing to repair.
func TestHostileSnapshotPatchesKilled(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 28))
	w := newWorkspace(t, nil)
	cur := map[string]string{}
	for d := range 8 {
		for f := range 12 {
			rel := fmt.Sprintf("d%d/f%02d.log", d, f)
			cur[rel] = fmt.Sprintf("start %d %d\n", d, f)
			w.write(rel, cur[rel])
		}
	}
	ids := []string{w.checkpoint("seed")}
	states := []map[string]string{maps.Clone(cur)}
	svc := startWatch(t, w)
	defer func() { svc.kill(t) }()
	for trial := range trials(9) {
		for range 1 + r.IntN(12) {
			rel := fmt.Sprintf("d%d/f%02d.log", r.IntN(8), r.IntN(12))
			cur[rel] += fmt.Sprintf("line %d %x\n", trial, r.Uint64())
			w.write(rel, cur[rel])
		}
		note := fmt.Sprintf("killed %d", trial)
		switch trial % 3 {
		case 0:
			p := startPlan(t, w.dir, w.env, "--json", "checkpoint", "create", "--note", note)
			time.Sleep(time.Duration(r.IntN(40)) * time.Millisecond)
			if res := p.kill(t); !res.killed && res.code != 0 {
				t.Fatalf("trial %d: %s", trial, res)
			}
		case 1:
			p := startPlan(t, w.dir, w.env, "--json", "checkpoint", "create", "--note", note)
			time.Sleep(time.Duration(r.IntN(40)) * time.Millisecond)
			svc.kill(t)
			// The command walks when the service dies under it: it succeeds either way.
			if res := p.wait(t); res.code != 0 {
				t.Fatalf("trial %d: the checkpoint whose service was killed: %s", trial, res)
			}
			svc = startWatch(t, w)
		default:
			res := runPlan(t, w.dir, append(w.env, "PLAN_WATCH=0", "PLAN_FAILPOINT=store.pack-installed"),
				"checkpoint", "create", "--note", note)
			if !res.killed {
				t.Fatalf("trial %d: a walking checkpoint of changed files was not killed at its pack's install: %s", trial, res)
			}
		}
		w.must("verify", "--read-data")
		ids = append(ids, w.checkpoint(fmt.Sprintf("after trial %d", trial)))
		states = append(states, maps.Clone(cur))
	}
	var st watchStatus
	w.mustJSON(&st, "watch", "status")
	if st.Snapshots == 0 {
		t.Fatalf("no checkpoint went through the service: %+v", st)
	}
	svc.kill(t)
	w.must("verify", "--read-data")
	w.must("doctor")
	for i, id := range ids {
		requireRestores(w, id, states[i], fmt.Sprintf("checkpoint %d of %d", i, len(ids)))
	}
}
