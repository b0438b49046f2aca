package crash

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit/servertest"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// sharedWorkspace is a workspace on the test's S3 bucket (and PostgreSQL database, when one is
// given), for crash trials that run one after another in it: each kills a command, runs `plan
// recover`, and checks that no checkpoint references data the store lacks (verify --read-data)
// before the next trial.
type sharedWorkspace struct {
	dir string
	env []string
}

func newSharedWorkspace(t *testing.T, withDB bool) *sharedWorkspace {
	t.Helper()
	s3 := servertest.S3(t)
	w := &sharedWorkspace{dir: filepath.Join(t.TempDir(), "ws"), env: sharedEnv(s3)}
	if err := os.Mkdir(w.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"init", "--store", "s3://" + s3.Bucket + "/crash"}
	if withDB {
		dsn := servertest.Postgres(t)
		args = append(args, "--db", dsn)
		w.env = append(w.env, pgEnv(t, dsn)...)
	}
	w.must(t, args...)
	return w
}

func (w *sharedWorkspace) must(t *testing.T, args ...string) string {
	t.Helper()
	return mustPlanEnv(t, w.dir, w.env, args...)
}

func (w *sharedWorkspace) run(t *testing.T, failpoint string, args ...string) result {
	t.Helper()
	var env []string
	if failpoint != "" {
		env = append(env, "PLAN_FAILPOINT="+failpoint)
	}
	return runPlan(t, w.dir, append(env, w.env...), args...)
}

// settle recovers, then checks the store holds every object of every checkpoint.
func (w *sharedWorkspace) settle(t *testing.T, what string) {
	t.Helper()
	w.must(t, "recover")
	if r := w.run(t, "", "--json", "verify", "--read-data"); r.code != 0 {
		t.Fatalf("after %s: verify --read-data exit %d\n%s%s", what, r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(stateFile(t, w.dir, "journal.json")); err == nil {
		t.Fatalf("after %s: a journal is left after recover", what)
	}
}

// change rewrites a few files and adds one, so each trial's checkpoint has new content.
func (w *sharedWorkspace) change(t *testing.T, i int) []tree.Entry {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(i), 5))
	for k := range 20 {
		writeFile(t, filepath.Join(w.dir, "d", fmt.Sprintf("f%02d", k)), []byte(fmt.Sprintf("trial %d file %d %d\n%s", i, k, r.Int(), strings.Repeat("z", r.IntN(5000)))), 0o644)
	}
	writeFile(t, filepath.Join(w.dir, fmt.Sprintf("new-%d", i)), []byte("new\n"), 0o600)
	return snapshotOf(t, w.dir)
}

// checkpoints returns the IDs of the workspace's checkpoints.
func (w *sharedWorkspace) checkpoints(t *testing.T) map[string]bool {
	t.Helper()
	var list []cpView
	if err := json.Unmarshal([]byte(w.must(t, "--json", "checkpoint", "list")), &list); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, c := range list {
		ids[c.ID] = true
	}
	return ids
}

// A kill -9 at each step of a checkpoint, a rollback, a correction and a gc on a shared store (S3
// and, in one variant, PostgreSQL) leaves nothing a checkpoint references missing, recovery
// settles the workspace exactly, and a checkpoint that was recorded restores exactly.
func TestCrashSharedStore(t *testing.T) {
	for _, withDB := range []bool{false, true} {
		name := "S3 and SQLite"
		if withDB {
			name = "S3 and PostgreSQL"
		}
		t.Run(name, func(t *testing.T) {
			w := newSharedWorkspace(t, withDB)
			trial := 0
			// Checkpoints killed at every step of their commit: before the packs are whole,
			// between the pack and its idx, after the store, with the record prepared, after the
			// database commit.
			for _, fp := range []string{"store.pack-installed", "checkpoint.stored", "record-prepared", "record-commit"} {
				trial++
				want := w.change(t, trial)
				before := w.checkpoints(t)
				if r := w.run(t, fp, "--json", "checkpoint", "create", "--note", fp); !r.killed {
					t.Fatalf("checkpoint create was not killed at %s: exit %d %s", fp, r.code, r.stderr)
				}
				w.settle(t, "a checkpoint killed at "+fp)
				for id := range w.checkpoints(t) {
					if before[id] {
						continue
					}
					// Recorded after all: it must restore exactly what was there.
					w.must(t, "rollback", "--to-checkpoint", id, "--yes")
					if d := treetest.Diff(want, snapshotOf(t, w.dir)); len(d) > 0 {
						t.Fatalf("checkpoint recorded through a kill at %s does not restore: %s", fp, treetest.Summary(d))
					}
				}
			}
			// Rollbacks killed at every step: recovery finishes them (the journal is durable first).
			trial++
			wantA := w.change(t, trial)
			idA := checkpointID(t, w.must(t, "--json", "checkpoint", "create", "--note", "A"))
			trial++
			wantB := w.change(t, trial)
			idB := checkpointID(t, w.must(t, "--json", "checkpoint", "create", "--note", "B"))
			for _, fp := range failpoints {
				w.must(t, "rollback", "--to-checkpoint", idA, "--yes")
				if r := w.run(t, fp, "rollback", "--to-checkpoint", idB, "--yes"); !r.killed {
					t.Fatalf("rollback was not killed at %s: exit %d %s", fp, r.code, r.stderr)
				}
				w.settle(t, "a rollback killed at "+fp)
				if d := treetest.Diff(wantB, snapshotOf(t, w.dir)); len(d) > 0 {
					t.Fatalf("after a rollback killed at %s and recovered: %s", fp, treetest.Summary(d))
				}
			}
			w.must(t, "rollback", "--to-checkpoint", idA, "--yes")
			if d := treetest.Diff(wantA, snapshotOf(t, w.dir)); len(d) > 0 {
				t.Fatalf("back to A: %s", treetest.Summary(d))
			}
			// A correction killed while it restores: recovery finishes the revert or undoes it.
			writeFile(t, filepath.Join(w.dir, "..", "plan.yaml"), []byte("name: crash\ndecisions:\n"+
				"  - id: one\n    run: mkdir -p p && for i in $(seq 1 50); do echo one$i > p/f$i; done\n"+
				"  - id: two\n    run: for i in $(seq 1 50); do echo two$i > p/f$i; done\n"), 0o644)
			w.must(t, "run", filepath.Join(w.dir, "..", "plan.yaml"))
			afterRun := snapshotOf(t, w.dir)
			for _, fp := range []string{"restore.write", "correction.applied"} {
				r := w.run(t, fp, "correct", "--decision", "two", "--reason", "crash", "--no-reexecute", "--yes")
				if !r.killed {
					t.Fatalf("correct was not killed at %s: exit %d %s", fp, r.code, r.stderr)
				}
				w.settle(t, "a correction killed at "+fp)
				live := snapshotOf(t, w.dir)
				if d := treetest.Diff(afterRun, live); len(d) > 0 {
					// Reverted: decision two's files are back to what one wrote.
					b, err := os.ReadFile(filepath.Join(w.dir, "p", "f1"))
					if err != nil || string(b) != "one1\n" {
						t.Fatalf("after a correction killed at %s: neither before nor reverted (%s)", fp, treetest.Summary(d))
					}
					w.must(t, "run", filepath.Join(w.dir, "..", "plan.yaml"))
					afterRun = snapshotOf(t, w.dir)
				}
			}
			// Random kills during checkpoints.
			for i := range 8 {
				trial++
				w.change(t, trial)
				cmd := exec.Command(planBinary(t), "-C", w.dir, "checkpoint", "create")
				cmd.Env = append(cleanEnv(t), w.env...)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Duration(20+rand.IntN(150)) * time.Millisecond)
				_ = cmd.Process.Signal(syscall.SIGKILL)
				_ = cmd.Wait()
				w.settle(t, fmt.Sprintf("a checkpoint killed at random (%d)", i))
			}
			// A gc killed at each of its steps: the next gc finishes; nothing live is lost.
			gcKills := 0
			for _, fp := range []string{"gc.rewritten", "gc.marked", "gc.deleted-one"} {
				// Each gc needs garbage: the oldest checkpoints go first.
				w.must(t, "checkpoint", "prune", "--keep", "3")
				trial++
				w.change(t, trial)
				w.must(t, "checkpoint", "create")
				r := w.run(t, fp, "gc", "--grace", "0s")
				if r.code == 0 {
					continue // nothing for this step to do in this store
				}
				gcKills++
				if !r.killed {
					t.Fatalf("gc was not killed at %s: exit %d %s", fp, r.code, r.stderr)
				}
				w.must(t, "gc", "--grace", "0s")
				w.settle(t, "a gc killed at "+fp)
			}
			if gcKills == 0 {
				t.Error("no gc failpoint was reached: the store had no garbage to collect")
			}
			for id := range w.checkpoints(t) {
				w.must(t, "rollback", "--to-checkpoint", id, "--yes")
			}
			t.Logf("4 checkpoint kills, %d rollback and 2 correction kills, 8 random kills, %d gc kills: nothing referenced was lost", len(failpoints), gcKills)
		})
	}
}

func checkpointID(t *testing.T, out string) string {
	t.Helper()
	var c cpView
	if err := json.Unmarshal([]byte(out), &c); err != nil || c.ID == "" {
		t.Fatalf("checkpoint output %q: %v", out, err)
	}
	return c.ID
}
