package hostile

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/tests/testkit/servertest"
)

// Odd inputs: values and flags that must be refused with the documented exit code, and the rarer
// paths (a symlink where a directory was, a kill under a rollback policy, a clone cut short) that
// must never leave the wrong thing standing.

// config-fractional-keep.sh: retention.keep: 2.9 was taken for 2 without a word, and a run pruned
// to 2 checkpoints. A count must be a whole number: exit 3 naming the key and the file.
func TestInputsFractionalKeepIsRefused(t *testing.T) {
	w := newWorkspace(t, nil)
	for i := range 3 {
		w.write("f", strings.Repeat("x", i+1))
		w.checkpoint("c")
	}
	cfg := w.path(".plan/config.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(b, "retention:\n  keep: 2.9\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	r := w.expect(3, "invalid", "checkpoint", "prune", "--policy", "--dry-run")
	if !strings.Contains(r.stderr, "retention.keep") || !strings.Contains(r.stderr, cfg) {
		t.Errorf("the refusal names neither the key nor the file:\n%s", r)
	}
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var cps []json.RawMessage
	w.mustJSON(&cps, "checkpoint", "list")
	if len(cps) != 3 {
		t.Errorf("%d checkpoints after the refusal, want the 3 made", len(cps))
	}
}

// bad-input-exit-codes.sh: the zero time was taken for "no --at" (exit 3 about an empty ID), a
// directory as the plan file was an internal error, and a NUL in an env value failed the decision
// (recorded) when it started instead of refusing the file.
func TestInputsOddExitCodes(t *testing.T) {
	w := newWorkspace(t, nil)
	w.write("a", "a")
	w.checkpoint("c")
	w.expect(4, "not_found", "rollback", "--at", "0001-01-01T00:00:00Z", "--dry-run")
	w.expect(3, "invalid", "run", ".")
	nul := filepath.Join(t.TempDir(), "nul.yaml")
	if err := os.WriteFile(nul, []byte("name: x\ndecisions:\n  - {id: a, run: \"true\", env: {A: \"x\\0y\"}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.expect(3, "invalid", "run", nul)
	var st struct {
		Plan *struct{} `json:"plan"`
	}
	w.mustJSON(&st, "status")
	if st.Plan != nil {
		t.Fatal("the refused plan file was recorded as a plan")
	}
}

// path-rollback-through-symlink.sh: a per-path restore of lnk/f, where lnk is now a symlink to
// real/ but a directory in the checkpoint, followed the symlink, overwrote real/f and exited 0.
// Inside the workspace a path is taken as written: refused (exit 5), real/f untouched.
func TestInputsPathRollbackNeverFollowsASymlink(t *testing.T) {
	w := newWorkspace(t, nil)
	w.write("lnk/f", "L")
	w.write("real/f", "R")
	id := w.checkpoint("dirs")
	if err := os.RemoveAll(w.path("lnk")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", w.path("lnk")); err != nil {
		t.Fatal(err)
	}
	w.write("real/f", "R2")
	w.expect(5, "conflict", "rollback", "--to-checkpoint", id, "--yes", "--", "lnk/f")
	if got := w.read("real/f"); got != "R2" {
		t.Fatalf("real/f = %q: the restore of lnk/f wrote through the symlink", got)
	}
	w.must("rollback", "--to-checkpoint", id, "--yes", "--", "lnk")
	if fi, err := os.Lstat(w.path("lnk")); err != nil || !fi.IsDir() || w.read("lnk/f") != "L" || w.read("real/f") != "R2" {
		t.Fatalf("restoring lnk itself: %v, %v", fi, err)
	}
}

// kill-during-decision-rollback-policy.sh: kill -9 while a decision under on_failure: rollback
// runs, then run again: the new attempt started from the killed one's partial change, failed, and
// its rollback kept that change while the decision said reverted.
func TestInputsKilledAttemptUnderRollbackPolicyIsUndone(t *testing.T) {
	w := newWorkspace(t, nil)
	marker := filepath.Join(t.TempDir(), "marker")
	planFile := filepath.Join(t.TempDir(), "p.yaml")
	src := "name: k\ndecisions:\n  - id: d1\n    run: echo base > f\n  - id: d2\n" +
		"    run: echo PARTIAL > f; [ -e " + marker + " ] || { touch " + marker + "; sleep 30; }; exit 1\n" +
		"    on_failure: rollback\n"
	if err := os.WriteFile(planFile, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startPlan(t, w.dir, w.env, "run", planFile)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("d2 never started: %s", p.kill(t))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := p.kill(t); !r.killed {
		t.Fatalf("the run was not killed: %s", r)
	}
	if got := w.read("f"); got != "PARTIAL\n" {
		t.Fatalf("after the kill f = %q, want the partial change", got)
	}
	r := w.run("run", planFile)
	if r.code != 1 || !strings.Contains(r.stderr, "was interrupted; on_failure rollback restored its pre_decision checkpoint") {
		t.Errorf("the re-run: %s", r)
	}
	if got := w.read("f"); got != "base\n" {
		t.Errorf("f = %q after the re-run, want base: the killed attempt's change stayed", got)
	}
	var st struct {
		Decisions []struct{ ID, Status string }
	}
	w.mustJSON(&st, "status")
	if len(st.Decisions) != 2 || st.Decisions[1].Status != "reverted" {
		t.Errorf("statuses %+v", st.Decisions)
	}
}

// inputsSource makes a workspace on store (with env) holding files of random data, checkpointed,
// and returns its ID.
func inputsSource(t *testing.T, env []string, files map[string]int, initArgs ...string) string {
	t.Helper()
	w := newWorkspace(t, env, initArgs...)
	for name, size := range files {
		b := make([]byte, size)
		_, _ = rand.Read(b)
		w.write(name, string(b))
	}
	w.checkpoint("source")
	b, err := os.ReadFile(w.path(".plan/config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, id, _ := strings.Cut(string(b), "workspace_id: ")
	id, _, _ = strings.Cut(id, "\n")
	if id == "" {
		t.Fatalf("no workspace_id in\n%s", b)
	}
	return id
}

// inputsCloneOutcome checks what a clone cut short left in dir: dir as it was (absent), or a
// workspace that `plan recover` (run with env) finishes into every file of files.
func inputsCloneOutcome(t *testing.T, dir string, env []string, files map[string]int, clone result) {
	t.Helper()
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return // as it was found
	}
	if clone.code == 0 {
		return
	}
	r := runPlan(t, dir, env, "--json", "recover")
	if r.code != 0 {
		t.Fatalf("plan recover in the half-made clone: %s\n(the clone: %s)", r, clone)
	}
	for name, size := range files {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Size() != int64(size) {
			t.Errorf("%s after plan recover: %v, %v (recover said %s; the clone: %s)", name, fi, err, strings.TrimSpace(r.stdout), clone)
		}
	}
}

// clone-cut-midread.sh: a pack download cut mid-body left DIR holding .plan alone, and `plan
// recover` there said recovered:false and did nothing. The clone must leave DIR as it found it or
// be finished by `plan recover`.
func TestInputsCloneCutMidDownloadIsFinishedByRecover(t *testing.T) {
	s := newS3Store(t, "cut")
	files := map[string]int{"big1": 3 << 20, "big2": 3 << 20, "small": 10}
	ws := inputsSource(t, s.Env, files, "--store", s.URL)
	u, err := url.Parse(s.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	px := newProxy(t, u.Host)
	px.cut(1 << 20)
	dir := filepath.Join(t.TempDir(), "clone")
	clone := runPlan(t, "", s3Env(s.S3Env, px.url()), "--json", "clone", "--store", s.URL, "--workspace", ws, dir)
	if clone.code == 0 {
		t.Fatalf("a clone through a proxy cutting every answer after 1 MiB succeeded: %s", clone)
	}
	px.pass()
	inputsCloneOutcome(t, dir, s3Env(s.S3Env, px.url()), files, clone)
}

// clone-db-down-midway.sh: the database lost while the files were being placed: the rollback was
// undone, DIR emptied but for .plan, and `plan recover` (database back) did nothing. Here the
// database's proxy starts refusing the moment the clone's rollback is journaled.
func TestInputsCloneDatabaseLostMidwayIsFinishedByRecover(t *testing.T) {
	s := newS3Store(t, "db")
	dsn := servertest.Postgres(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	env := append(slices.Clone(s.Env), "PGPASSWORD="+password)
	files := map[string]int{"big1": 4 << 20, "big2": 4 << 20, "small": 10}
	ws := inputsSource(t, env, files, "--store", s.URL, "--db", u.String())
	px := newProxy(t, u.Host)
	viaProxy := *u
	viaProxy.Host = px.addr()
	dir := filepath.Join(t.TempDir(), "clone")
	p := startPlan(t, "", env, "--json", "clone", "--store", s.URL, "--db", viaProxy.String(), "--workspace", ws, dir)
	for {
		// The clone names its state directory in .plan/config.yaml before it journals.
		if _, err := os.Stat(filepath.Join(dir, ".plan", "config.yaml")); err == nil {
			if _, err := os.Stat(statePath(t, dir, "journal.json")); err == nil {
				px.refuse()
				break
			}
		}
		select {
		case <-p.done:
			t.Fatalf("the clone ended before its rollback was journaled: %s", p.wait(t))
		case <-time.After(2 * time.Millisecond):
		}
	}
	clone := p.wait(t)
	if clone.code == 0 {
		t.Fatalf("the clone succeeded with its database refusing from the moment it journaled: %s", clone)
	}
	if !strings.Contains(clone.stderr, "unavailable") {
		t.Errorf("a database lost is not reported as unavailable: %s", clone)
	}
	px.pass()
	inputsCloneOutcome(t, dir, env, files, clone)
}

// A clone killed (kill -9, by the failpoints) at each of its steps: before its safety checkpoint
// is recorded (no journal yet), while staging, while placing files, once the files are placed.
// `plan recover` in DIR must finish it whichever it was; before, a clone killed before its journal
// left .plan that recover answered with recovered:false.
func TestInputsCloneKilledAtEachStepIsFinishedByRecover(t *testing.T) {
	files := map[string]int{"big": 300_000, "small": 10}
	store := "file://" + filepath.Join(t.TempDir(), "store")
	ws := inputsSource(t, nil, files, "--store", store)
	for _, step := range []string{"checkpoint.stored", "restore.staged", "restore.write", "rollback.applied"} {
		dir := filepath.Join(t.TempDir(), "clone")
		clone := runPlan(t, "", []string{"PLAN_FAILPOINT=" + step}, "--json", "clone", "--store", store, "--workspace", ws, dir)
		if !clone.killed {
			t.Fatalf("%s: the clone was not killed: %s", step, clone)
		}
		inputsCloneOutcome(t, dir, nil, files, clone)
		if r := runPlan(t, dir, nil, "--json", "recover"); !strings.Contains(r.stdout, `"recovered": false`) {
			t.Errorf("%s: a second recover found more to do: %s", step, r)
		}
	}
}
