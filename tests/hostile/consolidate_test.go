package hostile

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
)

// Consolidation (the merge of small packs after a command) deletes packs. Attacked here with
// kill -9 at each of its steps and at random moments during a long series of hooks-like
// checkpoints: every checkpoint must still verify and restore byte for byte afterwards.

// smallPackHistory makes n checkpoints that each add a file (a pack each) and returns their IDs
// and, for each, the files it holds.
func smallPackHistory(w *workspace, r *rand.Rand, n int) ([]string, []map[string]string) {
	w.t.Helper()
	var ids []string
	var states []map[string]string
	cur := map[string]string{}
	for i := range n {
		rel := fmt.Sprintf("calls/c%03d.txt", i)
		cur[rel] = fmt.Sprintf("call %d %x %x\n", i, r.Uint64(), r.Uint64())
		w.write(rel, cur[rel])
		ids = append(ids, w.checkpoint(fmt.Sprintf("call %d", i)))
		states = append(states, maps.Clone(cur))
	}
	return ids, states
}

// requireEveryCheckpoint verifies the store and restores every checkpoint byte for byte.
func requireEveryCheckpoint(w *workspace, ids []string, states []map[string]string, context string) {
	w.t.Helper()
	w.must("verify", "--read-data")
	for i, id := range ids {
		requireRestores(w, id, states[i], context)
		if got, _ := filepath.Glob(w.path("calls/*")); len(got) != len(states[i]) {
			w.t.Fatalf("%s: checkpoint %s restored %d files, want %d", context, id, len(got), len(states[i]))
		}
	}
}

func TestHostileConsolidationKilledAtEachStep(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 25))
	for _, point := range []string{"consolidate.written", "gc.intent", "gc.deleted-one"} {
		t.Run(point, func(t *testing.T) {
			w := newWorkspace(t, nil)
			ids, states := smallPackHistory(w, r, 15)
			w.write("calls/last.txt", "the 16th pack\n")
			res := runPlan(t, w.dir, append(w.env, "PLAN_FAILPOINT="+point), "--json", "checkpoint", "create", "--note", "16th")
			if !res.killed {
				t.Fatalf("the consolidation after the 16th checkpoint was not killed at %s: %s", point, res)
			}
			var last struct {
				ID string `json:"id"`
			}
			w.mustJSON(&last, "checkpoint", "show", "@")
			lastState := maps.Clone(states[len(states)-1])
			lastState["calls/last.txt"] = "the 16th pack\n"
			ids, states = append(ids, last.ID), append(states, lastState)
			requireEveryCheckpoint(w, ids, states, "after a kill at "+point)
		})
	}
}

func TestHostileConsolidationKilledAtRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 26))
	for trial := range trials(3) {
		w := newWorkspace(t, nil)
		ids, states := smallPackHistory(w, r, 15)
		for i := range 3 {
			rel := fmt.Sprintf("calls/k%d.txt", i)
			content := fmt.Sprintf("killed %d %x\n", i, r.Uint64())
			w.write(rel, content)
			p := startPlan(t, w.dir, w.env, "--json", "checkpoint", "create")
			time.Sleep(time.Duration(r.IntN(60)) * time.Millisecond)
			if res := p.kill(t); !res.killed && res.code != 0 {
				t.Fatalf("trial %d: %s", trial, res)
			}
			// Whether the checkpoint was recorded depends on the moment: the store must verify,
			// and the next command finishes what the killed one left.
			w.must("verify", "--read-data")
			next := w.checkpoint(fmt.Sprintf("after kill %d", i))
			st := maps.Clone(states[len(states)-1])
			st[rel] = content
			ids, states = append(ids, next), append(states, st)
		}
		requireEveryCheckpoint(w, ids, states, fmt.Sprintf("trial %d, the end", trial))
	}
}

// With plan watch running, the packs the service writes for each command are merged by the
// commands after it while the service keeps its own view of the store: every checkpoint, taken
// through the service across many consolidations, restores byte for byte, and the store stays few
// packs.
func TestHostileConsolidationUnderTheWatchService(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 27))
	w := newWorkspace(t, nil)
	w.write("calls/seed.txt", "seed\n")
	w.checkpoint("seed")
	svc := startWatch(t, w)
	defer svc.kill(t)
	cur := map[string]string{"calls/seed.txt": "seed\n"}
	var ids []string
	var states []map[string]string
	for i := range 40 {
		rel := fmt.Sprintf("calls/c%02d.txt", r.IntN(12))
		cur[rel] = fmt.Sprintf("call %d %x\n", i, r.Uint64())
		w.write(rel, cur[rel])
		ids = append(ids, w.checkpoint(fmt.Sprintf("through the service %d", i)))
		states = append(states, maps.Clone(cur))
	}
	var st watchStatus
	w.mustJSON(&st, "watch", "status")
	if st.Snapshots < 40 {
		t.Fatalf("the checkpoints did not go through the service: %+v", st)
	}
	if packs, _ := filepath.Glob(w.state("objects/packs/*.pack")); len(packs) >= 24 {
		t.Fatalf("%d packs after 40 checkpoints: not consolidated", len(packs))
	}
	requireEveryCheckpoint(w, ids, states, "under the watch service")
}
