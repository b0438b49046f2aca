package crash

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planhq/plan/tests/testkit/treetest"
)

// Surgical reverts are killed like corrections: `plan revert` is stopped at every failpoint of its
// journaled step and after random delays, `plan recover` runs, and the result must be one of
// exactly two states, with the archive and the database agreeing:
//   - before: the workspace as after the whole plan, no correction recorded, no archive left;
//   - reverted: the workspace as if decision two had never run (decisions one and three alone:
//     three's edits, in other lines of files two changed, are kept), one surgical correction
//     recorded with its archive complete, two reverted and three still succeeded.

const revertPlan = `name: crash
decisions:
  - id: one
    run: mkdir -p a && for i in $(seq 1 %N%); do printf 'x\nl2\nl3\nl4\nl5\n' > a/f$i; done
  - id: two
    run: for i in $(seq 1 %H%); do printf 'two\nl2\nl3\nl4\nl5\n' > a/f$i; done; rm -f a/f%N%; mkdir -p b && for i in $(seq 1 %H%); do echo b$i > b/g$i; done; chmod 755 a/f%H%
  - id: three
    run: for i in $(seq 1 %Q%); do sed '5s/.*/three/' a/f$i > t.tmp && mv t.tmp a/f$i; done; echo three > c.txt
`

// newRevertFixture runs the plan in a base workspace, and decisions one and three alone in another
// to record the tree the revert must produce.
func newRevertFixture(t *testing.T, files int) *correctionFixture {
	t.Helper()
	dir := t.TempDir()
	plan := strings.NewReplacer("%N%", strconv.Itoa(files), "%H%", strconv.Itoa(files/2),
		"%Q%", strconv.Itoa(files/4)).Replace(revertPlan)
	head, rest, _ := strings.Cut(plan, "  - id: two")
	_, three, _ := strings.Cut(rest, "  - id: three")
	full, without := filepath.Join(dir, "plan.yaml"), filepath.Join(dir, "without-two.yaml")
	writeFile(t, full, []byte(plan), 0o644)
	writeFile(t, without, []byte(head+"  - id: three"+three), 0o644)
	other, base := filepath.Join(dir, "other"), filepath.Join(dir, "ws")
	for _, d := range []string{other, base} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustPlan(t, other, "run", without)
	mustPlan(t, base, "run", full)
	return &correctionFixture{base: base, before: snapshotOf(t, base), reverted: snapshotOf(t, other)}
}

func revertArgs() []string {
	return []string{"revert", "--decision", "two", "--reason", "crash test", "--yes"}
}

// settleRevert recovers the workspace and checks it is in one of the two allowed states.
func settleRevert(t *testing.T, f *correctionFixture, ws string) string {
	t.Helper()
	if r := runPlan(t, ws, nil, "recover", "--json"); r.code != 0 {
		t.Fatalf("recover: exit %d\n%s", r.code, r.stderr)
	}
	live := snapshotOf(t, ws)
	var list []struct {
		ID         string `json:"correction_id"`
		ArchiveDir string `json:"archive_dir"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal([]byte(mustPlan(t, ws, "--json", "correction", "list")), &list); err != nil {
		t.Fatal(err)
	}
	archives, err := os.ReadDir(stateFile(t, ws, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case len(treetest.Diff(f.before, live)) == 0:
		if len(list) != 0 || len(archives) != 0 {
			t.Fatalf("workspace as before the revert, but %d corrections and %d archive entries recorded", len(list), len(archives))
		}
		return "before"
	case len(treetest.Diff(f.reverted, live)) == 0:
		if len(list) != 1 || list[0].Kind != "surgical" || len(archives) != 1 ||
			list[0].ArchiveDir != stateFile(t, ws, "archive/"+list[0].ID) {
			t.Fatalf("workspace reverted, but corrections %+v and archive entries %d", list, len(archives))
		}
		requireArchive(t, list[0].ArchiveDir, []string{"two"})
		var st struct {
			Decisions []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"decisions"`
		}
		if err := json.Unmarshal([]byte(mustPlan(t, ws, "--json", "status")), &st); err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, d := range st.Decisions {
			got += d.ID + "=" + d.Status + " "
		}
		if got != "one=succeeded two=reverted three=succeeded " {
			t.Fatalf("statuses after the revert: %s", got)
		}
		return "reverted"
	}
	t.Fatalf("MIXED STATE after a killed revert:\nvs before: %s\nvs reverted: %s",
		treetest.Summary(treetest.Diff(f.before, live)), treetest.Summary(treetest.Diff(f.reverted, live)))
	return ""
}

func TestCrashRevertAtEveryFailpoint(t *testing.T) {
	f := newRevertFixture(t, 200)
	want := map[string]string{
		"checkpoint.stored": "before",
		"restore.staged":    "reverted", "restore.removed": "reverted", "restore.write": "reverted",
		"restore.applied": "reverted", "revert.applied": "reverted", "revert.recorded": "reverted",
	}
	for fp, side := range want {
		t.Run(fp, func(t *testing.T) {
			ws := f.trial(t)
			r := runPlan(t, ws, []string{"PLAN_FAILPOINT=" + fp}, revertArgs()...)
			if !r.killed {
				t.Fatalf("failpoint %s did not kill plan: exit %d\n%s", fp, r.code, r.stderr)
			}
			if got := settleRevert(t, f, ws); got != side {
				t.Fatalf("after a kill at %s: %s, want %s", fp, got, side)
			}
		})
	}
}

func TestCrashRevertErrorBeforeCommitPoint(t *testing.T) {
	f := newRevertFixture(t, 60)
	for _, fp := range []string{"restore.removed", "restore.write", "revert.applied"} {
		t.Run(fp, func(t *testing.T) {
			ws := f.trial(t)
			r := runPlan(t, ws, []string{"PLAN_FAILPOINT=" + fp + "=error"}, revertArgs()...)
			if r.code == 0 {
				t.Fatalf("an injected failure at %s still exited 0", fp)
			}
			if got := settleRevert(t, f, ws); got != "before" {
				t.Fatalf("a revert that failed at %s left the state %s", fp, got)
			}
		})
	}
}

func TestCrashRevertRandomKill(t *testing.T) {
	f := newRevertFixture(t, 400)
	ws := f.trial(t)
	start := time.Now()
	if r := runPlan(t, ws, nil, revertArgs()...); r.code != 0 {
		t.Fatalf("calibration revert: exit %d\n%s", r.code, r.stderr)
	}
	total := time.Since(start)
	if got := settleRevert(t, f, ws); got != "reverted" {
		t.Fatalf("calibration: %s", got)
	}
	trials := max(crashTrials()/4, 5)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 13)) //nolint:gosec // test randomness
	tally := map[string]int{}
	for i := range trials {
		ws := f.trial(t)
		p := startPlan(t, ws, revertArgs()...)
		if i%2 == 0 {
			time.Sleep(time.Duration(rng.Int64N(int64(total))))
		} else {
			journal := stateFile(t, ws, "journal.json")
			for !p.exited() {
				if _, err := os.Stat(journal); err == nil {
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
			time.Sleep(time.Duration(rng.Int64N(int64(20 * time.Millisecond))))
		}
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		r := p.wait(t)
		tally[settleRevert(t, f, ws)]++
		if !r.killed && r.code != 0 {
			t.Fatalf("trial %d: revert exited %d without being killed\n%s", i, r.code, r.stderr)
		}
	}
	t.Logf("%d revert kill trials (calibrated at %v), 0 mixed states; outcomes: %v", trials, total.Round(time.Millisecond), tally)
}
