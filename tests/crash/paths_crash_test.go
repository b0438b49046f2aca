package crash

import (
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

// The per-path trials kill `plan rollback --to-checkpoint B -- PATH…` at every failpoint and at
// random: after recovery the workspace is exactly A (nothing restored) or exactly A with the paths
// as B holds them, never anything else, and nothing outside the paths ever changes.

// restoredPaths mixes every kind of change: a file turned directory, a directory turned file, a
// symlink, a whole tree of 100 files, a path only B has and one only A has.
var restoredPaths = []string{"f2d", "d2f", "f2l", "bulk", "only-b", "only-in-a.txt"}

// wantPaths is A with restoredPaths taken from B.
func (f *fixture) wantPaths() []tree.Entry {
	var out []tree.Entry
	in := func(p string) bool {
		for _, q := range restoredPaths {
			if tree.Under(p, q) {
				return true
			}
		}
		return false
	}
	for _, e := range f.wantA {
		if !in(e.Path) {
			out = append(out, e)
		}
	}
	for _, e := range f.wantB {
		if in(e.Path) {
			out = append(out, e)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && tree.Compare(out[j-1].Path, out[j].Path) > 0; j-- {
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}

func (f *fixture) restorePathsArgs() []string {
	return append([]string{"--json", "rollback", "--to-checkpoint", f.idB, "--yes", "--"}, restoredPaths...)
}

// settlePaths recovers and requires exactly A or exactly A-with-paths-from-B.
func (f *fixture) settlePaths(t *testing.T, ws, context string) string {
	t.Helper()
	mustPlan(t, ws, "recover")
	live := snapshotOf(t, ws)
	if len(treetest.Diff(f.wantA, live)) == 0 {
		return "A"
	}
	d := treetest.Diff(f.wantPaths(), live)
	if len(d) == 0 {
		return "restored"
	}
	t.Errorf("MIXED STATE after %s: vs the restored tree:\n  %s", context, treetest.Summary(d))
	return "mixed"
}

func TestCrashRestorePathsAtEveryFailpoint(t *testing.T) {
	f := newFixture(t, 100)
	// Without a crash the restore gives exactly the expected tree.
	ws := f.copyOf(t)
	mustPlan(t, ws, f.restorePathsArgs()...)
	requireSame(t, ws, f.wantPaths(), "per-path restore")
	if len(treetest.Diff(f.wantA, f.wantPaths())) < 100 || len(treetest.Diff(f.wantB, f.wantPaths())) == 0 {
		t.Fatal("fixture: the restored tree is neither far from A nor different from B")
	}
	for _, fp := range failpoints {
		ws := f.copyOf(t)
		r := runPlan(t, ws, []string{"PLAN_FAILPOINT=" + fp}, f.restorePathsArgs()...)
		if !r.killed {
			t.Fatalf("%s: not reached: exit %d %s", fp, r.code, r.stderr)
		}
		if side := f.settlePaths(t, ws, "a kill at "+fp); side != "restored" {
			t.Errorf("kill at %s after the journal: %s, want the restore finished", fp, side)
		}
	}
}

func TestCrashRestorePathsRandomKill(t *testing.T) {
	f := newFixture(t, 300)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	// Kills land anywhere in a restore's run time, and a little after.
	began := time.Now()
	mustPlan(t, f.copyOf(t), f.restorePathsArgs()...)
	span := max(time.Since(began)*6/5, time.Millisecond)
	tally := map[string]int{}
	for i := range crashTrials() {
		ws := f.copyOf(t)
		p := startPlan(t, ws, f.restorePathsArgs()...)
		time.Sleep(time.Duration(r.Int64N(int64(span))))
		_ = p.cmd.Process.Kill()
		res := p.wait(t)
		side := f.settlePaths(t, ws, "a random kill")
		if !res.killed && res.code == 0 && side != "restored" {
			t.Errorf("trial %d: exit 0 but the workspace is %s", i, side)
		}
		tally[side]++
		_ = os.RemoveAll(filepath.Dir(ws))
	}
	var parts []string
	for k, v := range tally {
		parts = append(parts, k+"="+strconv.Itoa(v))
	}
	t.Logf("%d per-path restore kill trials, %d mixed states; outcomes: %s", crashTrials(), tally["mixed"], strings.Join(parts, " "))
	if tally["mixed"] > 0 {
		t.Fatalf("%d mixed states", tally["mixed"])
	}
}
