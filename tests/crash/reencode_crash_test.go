package crash

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// The re-encoding trials kill a gc that re-encodes: checkpoints of files appended to, the oldest
// pruned, so that every kept version is a delta against a version only a pruned checkpoint held.
// Whatever the moment of the kill, every kept checkpoint verifies (reading every byte) and
// restores exactly what it recorded, doctor is clean once a command held the lock, and a gc run
// to the end then leaves nothing of the pruned versions.

type reencodeFixture struct {
	ws   string
	kept map[string][]tree.Entry
}

func newReencodeFixture(t *testing.T, seed uint64) *reencodeFixture {
	t.Helper()
	f := &reencodeFixture{ws: t.TempDir(), kept: map[string][]tree.Entry{}}
	r := rand.New(rand.NewPCG(seed, 3))
	mustPlan(t, f.ws, "init")
	var ids []string
	var snaps [][]tree.Entry
	for c := range 10 {
		for i := range 30 {
			p := filepath.Join(f.ws, "logs", fmt.Sprintf("f%02d.log", i))
			old, _ := os.ReadFile(p)
			var add strings.Builder
			for range 20 {
				fmt.Fprintf(&add, "checkpoint %d line %d %x\n", c, r.IntN(1000), r.Uint64())
			}
			writeFile(t, p, append(old, add.String()...), 0o644)
		}
		ids = append(ids, createCheckpoint(t, f.ws, "append"))
		snaps = append(snaps, snapshotOf(t, f.ws))
	}
	mustPlan(t, f.ws, "checkpoint", "prune", "--keep", "3", "--yes")
	for i := len(ids) - 3; i < len(ids); i++ {
		f.kept[ids[i]] = snaps[i]
	}
	return f
}

// check requires every kept checkpoint to verify and restore, and doctor to be clean.
func (f *reencodeFixture) check(t *testing.T, context string) {
	t.Helper()
	if r := runPlan(t, f.ws, nil, "--json", "checkpoint", "list"); r.code != 0 {
		t.Fatalf("%s: checkpoint list exit %d: %s", context, r.code, r.stderr)
	}
	if r := runPlan(t, f.ws, nil, "verify", "--read-data"); r.code != 0 {
		t.Fatalf("%s: verify --read-data exit %d:\n%s%s", context, r.code, r.stdout, r.stderr)
	}
	if r := runPlan(t, f.ws, nil, "doctor"); r.code != 0 {
		t.Fatalf("%s: doctor exit %d:\n%s%s", context, r.code, r.stdout, r.stderr)
	}
	for id, want := range f.kept {
		mustPlan(t, f.ws, "rollback", "--to-checkpoint", id, "--yes")
		requireSame(t, f.ws, want, context+": rollback to "+id)
	}
}

// finish runs gc to the end and requires it to leave nothing to re-encode.
func (f *reencodeFixture) finish(t *testing.T, context string) {
	t.Helper()
	mustPlan(t, f.ws, "gc")
	out := mustPlan(t, f.ws, "--json", "gc")
	if !strings.Contains(out, `"objects_reencoded": 0`) {
		t.Fatalf("%s: a second gc still re-encodes: %s", context, out)
	}
	f.check(t, context+", then gc")
}

var reencodeFailpoints = []string{"store.pack-installed", "gc.reencoded", "gc.rewritten", "gc.intent", "gc.deleted-one"}

func TestCrashGCReencodeAtEveryFailpoint(t *testing.T) {
	for i, fp := range reencodeFailpoints {
		t.Run(fp, func(t *testing.T) {
			f := newReencodeFixture(t, uint64(i))
			r := runPlan(t, f.ws, []string{"PLAN_FAILPOINT=" + fp}, "gc")
			if !r.killed {
				t.Fatalf("gc was not killed at %s: exit %d: %s", fp, r.code, r.stderr)
			}
			f.check(t, "gc killed at "+fp)
			f.finish(t, "gc killed at "+fp)
		})
	}
}

// TestCrashGCReencodeRandomKill kills a re-encoding gc after a random delay.
func TestCrashGCReencodeRandomKill(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("PLAN_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	r := rand.New(rand.NewPCG(seed, 5))
	trials := max(crashTrials()/10, 4)
	t.Logf("PLAN_CRASH_SEED=%d, %d trials", seed, trials)
	calib := newReencodeFixture(t, seed)
	start := time.Now()
	mustPlan(t, calib.ws, "gc")
	d := time.Since(start)
	killed := 0
	for i := range trials {
		f := newReencodeFixture(t, seed+uint64(i)+1)
		p := startPlan(t, f.ws, "gc")
		time.Sleep(time.Duration(r.Int64N(int64(d) + 1)))
		_ = p.cmd.Process.Kill()
		res := p.wait(t)
		if res.killed {
			killed++
		} else if res.code != 0 {
			t.Fatalf("trial %d: gc exit %d: %s", i, res.code, res.stderr)
		}
		f.check(t, fmt.Sprintf("trial %d", i))
		f.finish(t, fmt.Sprintf("trial %d", i))
	}
	t.Logf("%d re-encoding gc kill trials (%d killed), every kept checkpoint verified and restored", trials, killed)
}

// On a shared store (S3), a gc killed as it re-encodes, as it marks, and as it sweeps leaves every
// kept checkpoint readable from the bucket, and a gc run to the end then frees the pruned versions.
func TestCrashSharedGCReencode(t *testing.T) {
	w := newSharedWorkspace(t, false)
	r := rand.New(rand.NewPCG(11, 13))
	round := 0
	grow := func() map[string][]tree.Entry {
		var ids []string
		var snaps [][]tree.Entry
		for range 10 {
			round++
			for i := range 20 {
				p := filepath.Join(w.dir, "logs", fmt.Sprintf("f%02d.log", i))
				old, _ := os.ReadFile(p)
				writeFile(t, p, append(old, fmt.Sprintf("round %d %x\n%s", round, r.Uint64(), strings.Repeat("y", r.IntN(300)))...), 0o644)
			}
			ids = append(ids, checkpointID(t, w.must(t, "--json", "checkpoint", "create")))
			snaps = append(snaps, snapshotOf(t, w.dir))
		}
		w.must(t, "checkpoint", "prune", "--keep", "2", "--yes")
		return map[string][]tree.Entry{ids[len(ids)-2]: snaps[len(snaps)-2], ids[len(ids)-1]: snaps[len(snaps)-1]}
	}
	for _, fp := range []string{"gc.reencoded", "gc.marked", "gc.deleted-one"} {
		kept := grow()
		if res := w.run(t, fp, "gc", "--grace", "0s"); !res.killed {
			t.Fatalf("gc was not killed at %s: exit %d %s", fp, res.code, res.stderr)
		}
		w.settle(t, "a gc killed at "+fp)
		out := w.must(t, "--json", "gc", "--grace", "0s")
		if !strings.Contains(out, `"objects_reencoded": 0`) {
			t.Fatalf("after a gc killed at %s, a second gc still re-encodes: %s", fp, out)
		}
		w.settle(t, "a gc after one killed at "+fp)
		for id, want := range kept {
			w.must(t, "rollback", "--to-checkpoint", id, "--yes")
			if d := treetest.Diff(want, snapshotOf(t, w.dir)); len(d) > 0 {
				t.Fatalf("after a gc killed at %s, checkpoint %s does not restore: %s", fp, id, treetest.Summary(d))
			}
		}
	}
}
