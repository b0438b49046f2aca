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

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// Corrections are killed like rollbacks: `plan correct --no-reexecute` is stopped at every
// failpoint of its revert step and after random delays, `plan recover` runs, and the result must be
// one of exactly two states, with the archive and the database agreeing:
//   - before: the workspace as it was before the correction, no correction recorded and no archive
//     directory left (a staged archive is cleaned up by the next command);
//   - reverted: the workspace as it was before the corrected decision, exactly one correction
//     recorded, its archive complete (manifest, every non-deleted artifact with its recorded hash)
//     and the reverted decisions marked reverted.

// correctionFixture is a workspace where a three-decision plan ran; decision "two" changes many
// files so that a kill can land in the middle of its revert.
type correctionFixture struct {
	base     string       // the workspace after the run, copied for each trial
	before   []tree.Entry // the tree after all three decisions
	reverted []tree.Entry // the tree before decision two
}

const correctionPlan = `name: crash
decisions:
  - id: one
    run: mkdir -p a && for i in $(seq 1 %N%); do echo one$i > a/f$i; done
  - id: two
    run: for i in $(seq 1 %H%); do echo two$i > a/f$i; done; rm -f a/f%N%; mkdir -p b && for i in $(seq 1 %H%); do echo b$i > b/g$i; done; chmod 755 a/f1
  - id: three
    run: echo three > c.txt && ln -s a/f2 link
`

func newCorrectionFixture(t *testing.T, files int) *correctionFixture {
	t.Helper()
	dir := t.TempDir()
	base := filepath.Join(dir, "ws")
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	plan := strings.NewReplacer("%N%", strconv.Itoa(files), "%H%", strconv.Itoa(files/2)).Replace(correctionPlan)
	// Run decision one alone first, to record the tree the correction must return to.
	first := filepath.Join(dir, "one.yaml")
	full := filepath.Join(dir, "plan.yaml")
	head, _, _ := strings.Cut(plan, "  - id: two")
	writeFile(t, first, []byte(head), 0o644)
	writeFile(t, full, []byte(plan), 0o644)
	mustPlan(t, base, "run", first)
	f := &correctionFixture{base: base, reverted: snapshotOf(t, base)}
	mustPlan(t, base, "run", full)
	f.before = snapshotOf(t, base)
	return f
}

// trial copies the base workspace for one kill.
func (f *correctionFixture) trial(t *testing.T) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	copyWorkspace(t, f.base, ws)
	return ws
}

func correctArgs() []string {
	return []string{"correct", "--decision", "two", "--reason", "crash test", "--no-reexecute", "--yes"}
}

type correctionView struct {
	ID         string   `json:"correction_id"`
	ArchiveDir string   `json:"archive_dir"`
	Reverted   []string `json:"reverted_decisions"`
	Status     string   `json:"status"`
}

// settle recovers the workspace and checks it is in one of the two allowed states; it returns
// which, or fails the test.
func (f *correctionFixture) settle(t *testing.T, ws string) string {
	t.Helper()
	if r := runPlan(t, ws, nil, "recover", "--json"); r.code != 0 {
		t.Fatalf("recover: exit %d\n%s", r.code, r.stderr)
	}
	live := snapshotOf(t, ws)
	var list []correctionView
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
			t.Fatalf("workspace as before the correction, but %d corrections and %d archive entries recorded", len(list), len(archives))
		}
		return "before"
	case len(treetest.Diff(f.reverted, live)) == 0:
		if len(list) != 1 || len(archives) != 1 || list[0].ArchiveDir != stateFile(t, ws, "archive/"+list[0].ID) {
			t.Fatalf("workspace reverted, but corrections %+v and archive entries %d", list, len(archives))
		}
		requireArchive(t, list[0].ArchiveDir, []string{"two", "three"})
		status := mustPlan(t, ws, "--json", "status")
		if strings.Count(status, `"status": "reverted"`) < 2 {
			t.Fatalf("decisions two and three are not reverted:\n%s", status)
		}
		return "reverted"
	}
	t.Fatalf("MIXED STATE after a killed correction:\nvs before: %s\nvs reverted: %s",
		treetest.Summary(treetest.Diff(f.before, live)), treetest.Summary(treetest.Diff(f.reverted, live)))
	return ""
}

// requireArchive checks the manifest lists the decisions and every archived file has its hash.
func requireArchive(t *testing.T, dir string, decisions []string) {
	t.Helper()
	var m struct {
		Decisions []struct {
			DecisionID string `json:"decision_id"`
			Artifacts  []struct {
				Path         string `json:"path"`
				Change       string `json:"change"`
				SHA256       string `json:"sha256"`
				ArchivedPath string `json:"archived_path"`
			} `json:"artifacts"`
		} `json:"decisions"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatalf("archive without manifest: %v", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Decisions) != len(decisions) {
		t.Fatalf("manifest lists %d decisions, want %v", len(m.Decisions), decisions)
	}
	files := 0
	for i, d := range m.Decisions {
		if d.DecisionID != decisions[i] {
			t.Fatalf("manifest decision %d is %s, want %s", i, d.DecisionID, decisions[i])
		}
		for _, a := range d.Artifacts {
			if a.Change == "deleted" {
				if a.ArchivedPath != "" {
					t.Fatalf("deleted %s has an archived path", a.Path)
				}
				continue
			}
			p := filepath.Join(dir, filepath.FromSlash(a.ArchivedPath))
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatalf("archived %s missing: %v", a.Path, err)
			}
			var got string
			if fi.Mode()&os.ModeSymlink != 0 {
				target, err := os.Readlink(p)
				if err != nil {
					t.Fatal(err)
				}
				got = tree.Sum([]byte(target)).String()
			} else {
				data, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				got = tree.Sum(data).String()
			}
			if got != a.SHA256 {
				t.Fatalf("archived %s hashes to %s, manifest says %s", a.Path, got, a.SHA256)
			}
			files++
		}
	}
	if files == 0 {
		t.Fatal("archive holds no files")
	}
}

func TestCrashCorrectionAtEveryFailpoint(t *testing.T) {
	f := newCorrectionFixture(t, 200)
	want := map[string]string{
		"restore.staged": "reverted", "restore.removed": "reverted", "restore.write": "reverted",
		"restore.applied": "reverted", "correction.applied": "reverted", "correction.recorded": "reverted",
	}
	for fp, side := range want {
		t.Run(fp, func(t *testing.T) {
			ws := f.trial(t)
			r := runPlan(t, ws, []string{"PLAN_FAILPOINT=" + fp}, correctArgs()...)
			if !r.killed {
				t.Fatalf("failpoint %s did not kill plan: exit %d\n%s", fp, r.code, r.stderr)
			}
			// The journal was written before the workspace was touched: recovery finishes the revert.
			if got := f.settle(t, ws); got != side {
				t.Fatalf("after a kill at %s: %s, want %s", fp, got, side)
			}
		})
	}
}

func TestCrashCorrectionErrorBeforeCommitPoint(t *testing.T) {
	f := newCorrectionFixture(t, 60)
	for _, fp := range []string{"restore.removed", "restore.write", "correction.applied"} {
		t.Run(fp, func(t *testing.T) {
			ws := f.trial(t)
			r := runPlan(t, ws, []string{"PLAN_FAILPOINT=" + fp + "=error"}, correctArgs()...)
			if r.code == 0 {
				t.Fatalf("an injected failure at %s still exited 0", fp)
			}
			if got := f.settle(t, ws); got != "before" {
				t.Fatalf("a correction that failed at %s left the state %s", fp, got)
			}
		})
	}
}

func TestCrashCorrectionRandomKill(t *testing.T) {
	f := newCorrectionFixture(t, 400)
	// Calibrate: how long an uninterrupted correction takes.
	ws := f.trial(t)
	start := time.Now()
	if r := runPlan(t, ws, nil, correctArgs()...); r.code != 0 {
		t.Fatalf("calibration correction: exit %d\n%s", r.code, r.stderr)
	}
	total := time.Since(start)
	if got := f.settle(t, ws); got != "reverted" {
		t.Fatalf("calibration: %s", got)
	}
	trials := max(crashTrials()/4, 5)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7)) //nolint:gosec // test randomness
	tally := map[string]int{}
	for i := range trials {
		ws := f.trial(t)
		p := startPlan(t, ws, correctArgs()...)
		if i%2 == 0 {
			time.Sleep(time.Duration(rng.Int64N(int64(total))))
		} else {
			// Kill inside the journaled revert: wait for the journal, then a little more.
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
		side := f.settle(t, ws)
		tally[side]++
		if !r.killed && r.code != 0 {
			t.Fatalf("trial %d: correction exited %d without being killed\n%s", i, r.code, r.stderr)
		}
	}
	t.Logf("%d correction kill trials (calibrated at %v), 0 mixed states; outcomes: %v", trials, total.Round(time.Millisecond), tally)
}
