package crash

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A checkpoint and its operation log entry are one transaction (one record, one commit): a kill -9
// at any point of `plan checkpoint create` leaves both or neither. Every checkpoint it made has
// exactly one log entry naming it, no entry names a checkpoint that does not exist, and the
// database is never behind the store's records (every command still opens it; doctor is clean).

type loggedView struct {
	Kind        string   `json:"kind"`
	Outcome     string   `json:"outcome"`
	Checkpoints []string `json:"checkpoints"`
}

// requireLoggedTogether checks the invariant above; it returns the number of checkpoints.
func requireLoggedTogether(t *testing.T, ws, context string) int {
	t.Helper()
	cps := listCheckpoints(t, ws)
	var ops []loggedView
	out := mustPlan(t, ws, "--json", "history")
	if err := json.Unmarshal([]byte(out), &ops); err != nil {
		t.Fatalf("%s: history: %v\n%s", context, err, out)
	}
	named := map[string]int{}
	for _, op := range ops {
		if op.Kind != "checkpoint" {
			continue
		}
		for _, id := range op.Checkpoints {
			if _, ok := cps[id]; !ok {
				t.Fatalf("%s: the log names checkpoint %s, which does not exist", context, id)
			}
			named[id]++
		}
	}
	for id, cp := range cps {
		if cp.Type == "manual" && named[id] != 1 {
			t.Fatalf("%s: checkpoint %s has %d log entries, want 1", context, id, named[id])
		}
	}
	if r := runPlan(t, ws, nil, "doctor"); r.code != 0 {
		t.Fatalf("%s: doctor exit %d:\n%s%s", context, r.code, r.stdout, r.stderr)
	}
	return len(cps)
}

func TestCrashCheckpointLogAtEveryFailpoint(t *testing.T) {
	ws := t.TempDir()
	mustPlan(t, ws, "init")
	writeFile(t, filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	createCheckpoint(t, ws, "first")
	n := requireLoggedTogether(t, ws, "before")
	for _, fp := range []string{"checkpoint.stored", "record-prepared", "record-commit"} {
		r := runPlan(t, ws, []string{"PLAN_FAILPOINT=" + fp}, "checkpoint", "create", "--note", fp)
		if !r.killed {
			t.Fatalf("checkpoint create was not killed at %s: exit %d: %s", fp, r.code, r.stderr)
		}
		got := requireLoggedTogether(t, ws, "killed at "+fp)
		// Killed after its transaction committed, the checkpoint stands with its entry; before, neither.
		want := n
		if fp == "record-commit" {
			want = n + 1
		}
		if got != want {
			t.Fatalf("killed at %s: %d checkpoints, want %d", fp, got, want)
		}
		n = got
	}
}

// TestCrashCheckpointLogRandomKill kills no-change checkpoints after a random delay.
func TestCrashCheckpointLogRandomKill(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("PLAN_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	r := rand.New(rand.NewPCG(seed, 24))
	ws := t.TempDir()
	mustPlan(t, ws, "init")
	for i := range 200 {
		writeFile(t, filepath.Join(ws, "d", fmt.Sprintf("f%03d", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644)
	}
	start := time.Now()
	createCheckpoint(t, ws, "calibrate")
	d := time.Since(start)
	trials := max(crashTrials()/2, 6)
	t.Logf("PLAN_CRASH_SEED=%d, %d trials", seed, trials)
	tally := map[string]int{}
	for i := range trials {
		p := startPlan(t, ws, "checkpoint", "create", "--note", strconv.Itoa(i))
		time.Sleep(time.Duration(r.Int64N(int64(d) + 1)))
		_ = p.cmd.Process.Kill()
		res := p.wait(t)
		outcome := "finished"
		if res.killed {
			outcome = "killed"
		} else if res.code != 0 {
			t.Fatalf("trial %d: exit %d: %s", i, res.code, res.stderr)
		}
		tally[outcome]++
		requireLoggedTogether(t, ws, fmt.Sprintf("trial %d (%s)", i, outcome))
	}
	t.Logf("%d checkpoint kill trials, each checkpoint logged exactly once; outcomes: %v", trials, tally)
}
