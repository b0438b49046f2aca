package crash

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// The crash tests drive the real binary: `plan rollback` is killed with SIGKILL (at a named
// failpoint, through PLAN_FAILPOINT, or after a random delay), then `plan recover` runs, and the
// workspace must equal the source tree A or the target tree B exactly, never a mix.
//
// PLAN_CRASH_TRIALS sets the number of random-delay kills (default 20; `make crash` runs 300).

func TestMain(m *testing.M) { os.Exit(testkit.Main(m)) }

// planBinary is the plan binary built from this module, once per test binary.
func planBinary(t *testing.T) string {
	t.Helper()
	return testkit.Binary(t)
}

type result struct {
	stdout, stderr string
	code           int
	killed         bool // ended by SIGKILL
}

func runPlan(t *testing.T, ws string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(planBinary(t), append([]string{"-C", ws}, args...)...)
	cmd.Env = append(cleanEnv(t), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return finish(t, cmd, err, &out, &errb)
}

// cleanEnv is the test's environment without a failpoint the caller did not ask for, with the
// test's own data directory (testkit.DataDir): no trial writes into the user's.
func cleanEnv(t testing.TB) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PLAN_FAILPOINT=") {
			env = append(env, kv)
		}
	}
	return testkit.WithDataDir(t, env)
}

func finish(t *testing.T, cmd *exec.Cmd, err error, out, errb *bytes.Buffer) result {
	t.Helper()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			r.killed = true
		}
	default:
		t.Fatalf("run %v: %v", cmd.Args, err)
	}
	return r
}

func mustPlan(t *testing.T, ws string, args ...string) string {
	t.Helper()
	r := runPlan(t, ws, nil, args...)
	if r.code != 0 {
		t.Fatalf("plan %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

type cpView struct {
	ID            string `json:"id"`
	Type          string `json:"type"`
	RollbackCount int    `json:"rollback_count"`
}

func createCheckpoint(t *testing.T, ws, note string) string {
	t.Helper()
	var cp cpView
	if err := json.Unmarshal([]byte(mustPlan(t, ws, "--json", "checkpoint", "create", "--note", note)), &cp); err != nil || cp.ID == "" {
		t.Fatalf("checkpoint create: %v", err)
	}
	return cp.ID
}

func listCheckpoints(t *testing.T, ws string) map[string]cpView {
	t.Helper()
	var list []cpView
	out := mustPlan(t, ws, "--json", "checkpoint", "list")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("checkpoint list: %v\n%s", err, out)
	}
	m := map[string]cpView{}
	for _, c := range list {
		m[c.ID] = c
	}
	return m
}

// fixture is a workspace holding tree A, with checkpoints of A and of B.
type fixture struct {
	dir          string // pristine copy; trials work on copies of it
	idA, idB     string
	wantA, wantB []tree.Entry
	bulk         int
}

// buildRich lays out the hand-written part of A or B: every kind of difference a rollback handles.
func buildRich(t *testing.T, ws string, b bool) {
	t.Helper()
	w := func(p, s string, mode uint32) { writeFile(t, filepath.Join(ws, p), []byte(s), mode) }
	d := func(p string, mode uint32) {
		if err := os.MkdirAll(filepath.Join(ws, p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(ws, p), tree.GoMode(mode)); err != nil {
			t.Fatal(err)
		}
	}
	l := func(p, target string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(ws, p)); err != nil {
			t.Fatal(err)
		}
	}
	w("keep.txt", "same in both", 0o644)
	if !b { // A
		w("mod.txt", "A's content", 0o644)
		w("modeonly.sh", "#!/bin/sh\n", 0o644)
		w("only-in-a.txt", "A", 0o600)
		w("f2d", "file in A, directory in B", 0o644)
		w("d2f/x", "x", 0o644)
		w("d2f/y/z", "z", 0o644)
		l("l2f", "keep.txt")
		w("f2l", "file in A, symlink in B", 0o644)
		l("lchg", "a-target")
		w("d2l/x", "x", 0o644)
		d("dmode", 0o755)
		w("dmode/in", "in", 0o644)
		d("only-a/empty/dirs", 0o755)
		w("nested/1/2/3/deep.txt", "A deep", 0o644)
		return
	}
	w("mod.txt", "B's content, longer", 0o644)
	w("modeonly.sh", "#!/bin/sh\n", 0o755)
	w("only-in-b.txt", "B", 0o644)
	w("f2d/in.txt", "inside", 0o640)
	w("f2d/sub/deeper", "deeper", 0o644)
	w("d2f", "directory in A, file in B", 0o644)
	w("l2f", "symlink in A, file in B", 0o644)
	l("f2l", "keep.txt")
	l("lchg", "b-target")
	l("d2l", "/etc")
	d("dmode", 0o700)
	w("dmode/in", "in", 0o644)
	d("only-b/empty", 0o2755)
	w("nested/1/2/3/deep.txt", "B deep", 0o644)
	w("nested/1/new/file", "new in B", 0o600)
	w("zero", "", 0o644)
	w("a-b", "order", 0o644)
	w("a/b", "order", 0o644)
}

// buildBulk writes n small files; A and B differ in every one of them, and in which exist.
func buildBulk(t *testing.T, ws string, n int, b bool) {
	t.Helper()
	for i := range n {
		p := filepath.Join(ws, "bulk", fmt.Sprintf("d%02d", i%40), fmt.Sprintf("f%04d.txt", i))
		switch {
		case b && i%50 == 7: // only in A
			continue
		case !b && i%50 == 9: // only in B
			continue
		}
		side := "A"
		if b {
			side = "B"
		}
		mode := uint32(0o644)
		if !b && i%13 == 0 {
			mode = 0o600
		}
		body := fmt.Sprintf("file %d of side %s\n%s", i, side, strings.Repeat(side, i%700))
		writeFile(t, p, []byte(body), mode)
	}
}

func clearWorkspace(t *testing.T, ws string) {
	t.Helper()
	des, err := os.ReadDir(ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		if de.Name() != ".plan" {
			if err := os.RemoveAll(filepath.Join(ws, de.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func newFixture(t *testing.T, bulk int, initArgs ...string) *fixture {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "pristine")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	mustPlan(t, ws, append([]string{"init"}, initArgs...)...)
	f := &fixture{dir: ws, bulk: bulk}
	buildRich(t, ws, true)
	buildBulk(t, ws, bulk, true)
	f.wantB = snapshotOf(t, ws)
	f.idB = createCheckpoint(t, ws, "B")
	clearWorkspace(t, ws)
	buildRich(t, ws, false)
	buildBulk(t, ws, bulk, false)
	f.wantA = snapshotOf(t, ws)
	f.idA = createCheckpoint(t, ws, "A")
	if len(treetest.Diff(f.wantA, f.wantB)) < bulk {
		t.Fatal("fixture: A and B hardly differ")
	}
	return f
}

// copyOf returns a fresh copy of the fixture's workspace (state, checkpoints and all).
func (f *fixture) copyOf(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "ws")
	copyWorkspace(t, f.dir, dst)
	return dst
}

type recoverView struct {
	Recovered bool    `json:"recovered"`
	Operation *string `json:"operation"`
	Outcome   *string `json:"outcome"`
}

// outcome is what a trial ended as.
type outcome struct {
	side      string // "A", "B" or "mixed"
	recovered bool
	result    string // recover's outcome, "" when nothing was recovered
}

func other(side string) string {
	if side == "A" {
		return "B"
	}
	return "A"
}

func (f *fixture) id(side string) string {
	if side == "A" {
		return f.idA
	}
	return f.idB
}

func (f *fixture) rollbackTo(side string) []string {
	return []string{"--json", "rollback", "--to-checkpoint", f.id(side), "--yes"}
}

// settle runs `plan recover` after an interrupted or failed rollback to target and checks the
// invariants: the workspace is exactly A or exactly B, no journal is left, a second recover finds
// nothing, and the target's rollback_count grew by one exactly when the workspace is the target.
// counts holds the expected rollback counts of A and B and is updated.
func (f *fixture) settle(t *testing.T, ws, target string, counts map[string]int) outcome {
	t.Helper()
	var rv recoverView
	out := mustPlan(t, ws, "--json", "recover")
	if err := json.Unmarshal([]byte(out), &rv); err != nil {
		t.Fatalf("recover output: %v\n%s", err, out)
	}
	o := outcome{recovered: rv.Recovered}
	if rv.Outcome != nil {
		o.result = *rv.Outcome
	}
	live := snapshotOf(t, ws)
	dA, dB := treetest.Diff(f.wantA, live), treetest.Diff(f.wantB, live)
	switch {
	case len(dA) == 0:
		o.side = "A"
	case len(dB) == 0:
		o.side = "B"
	default:
		o.side = "mixed"
		t.Errorf("MIXED STATE after recovery (%+v): %d differences from A, %d from B.\nvs A:\n  %s\nvs B:\n  %s",
			rv, len(dA), len(dB), treetest.Summary(dA), treetest.Summary(dB))
	}
	if _, err := os.Stat(stateFile(t, ws, "journal.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("journal left after recovery: %v", err)
	}
	if err := json.Unmarshal([]byte(mustPlan(t, ws, "--json", "recover")), &rv); err != nil || rv.Recovered {
		t.Errorf("a second recover found work: %+v %v", rv, err)
	}
	if o.side == target {
		counts[target]++
		if o.recovered && o.result != "completed" {
			t.Errorf("recovered to the target but the outcome says %q", o.result)
		}
	}
	cps := listCheckpoints(t, ws)
	for _, side := range []string{"A", "B"} {
		c, ok := cps[f.id(side)]
		if !ok {
			t.Fatalf("checkpoint %s (%s) is gone", side, f.id(side))
		}
		if c.RollbackCount != counts[side] {
			t.Errorf("workspace is %s after a rollback to %s: %s's rollback_count is %d, want %d",
				o.side, target, side, c.RollbackCount, counts[side])
		}
	}
	return o
}

var failpoints = []string{"restore.staged", "restore.removed", "restore.write", "restore.applied", "rollback.applied", "rollback.recorded"}

// layouts are where a workspace keeps its history, for the trials that run in both: outside it (in
// the data directory, the default) and in .plan/ (`plan init --store workspace`), where the journal
// and the database share the workspace's directory with the staging area.
var layouts = []struct {
	name string
	init []string
}{
	{"history-outside", nil},
	{"history-in-workspace", []string{"--store", "workspace"}},
}

// newLayoutFixture is a fixture of 100 bulk files made by `plan init initArgs…`, checked to keep its
// history where the layout says: outside the workspace without initArgs, in .plan/ with them.
func newLayoutFixture(t *testing.T, initArgs []string) *fixture {
	t.Helper()
	f := newFixture(t, 100, initArgs...)
	if inside := stateFile(t, f.dir, "") == filepath.Join(f.dir, ".plan"); inside != (len(initArgs) > 0) {
		t.Fatalf("plan init %v: the history is in %s", initArgs, stateFile(t, f.dir, ""))
	}
	return f
}

// TestCrashAtEveryFailpoint kills `plan rollback` with SIGKILL at each failpoint, in each layout.
// Every failpoint comes after the journal is durable, so recovery must finish the rollback: the
// workspace is B and B's rollback_count is 1 (exactly once, also when the database side had already
// committed).
func TestCrashAtEveryFailpoint(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) { crashAtEveryFailpoint(t, newLayoutFixture(t, l.init)) })
	}
}

func crashAtEveryFailpoint(t *testing.T, f *fixture) {
	for _, fp := range failpoints {
		t.Run(fp, func(t *testing.T) {
			ws := f.copyOf(t)
			r := runPlan(t, ws, []string{"PLAN_FAILPOINT=" + fp}, f.rollbackTo("B")...)
			if !r.killed {
				t.Fatalf("the failpoint was not reached: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
			}
			if _, err := os.Stat(stateFile(t, ws, "journal.json")); err != nil {
				t.Errorf("no journal after a kill at %s: %v", fp, err)
			}
			o := f.settle(t, ws, "B", map[string]int{})
			if o.side != "B" || !o.recovered || o.result != "completed" {
				t.Errorf("kill at %s: outcome %+v, want B completed by recovery", fp, o)
			}
		})
	}
}

// TestCrashErrorFailpoints makes each step fail with an error instead of a kill (in each layout),
// and holds the command to the contract: it succeeds entirely (exit 0, workspace exactly B), or the
// workspace is left exactly as it was (A) and the exit code is not 0. Every restore.* step comes
// before the commit point, so there the rollback must fail and undo itself in process, leaving no
// journal.
func TestCrashErrorFailpoints(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) { crashErrorFailpoints(t, newLayoutFixture(t, l.init)) })
	}
}

func crashErrorFailpoints(t *testing.T, f *fixture) {
	for _, fp := range failpoints {
		t.Run(fp, func(t *testing.T) {
			ws := f.copyOf(t)
			r := runPlan(t, ws, []string{"PLAN_FAILPOINT=" + fp + "=error"}, f.rollbackTo("B")...)
			if r.killed {
				t.Fatalf("killed at an error failpoint")
			}
			if r.code == 0 {
				requireSame(t, ws, f.wantB, "after a rollback that reported success")
			} else {
				if !strings.Contains(r.stderr, "injected failure") {
					t.Errorf("stderr does not carry the failure: %s", r.stderr)
				}
				requireSame(t, ws, f.wantA, "after a rollback that reported failure")
			}
			before := "B"
			if r.code != 0 {
				before = "A"
			}
			if strings.HasPrefix(fp, "restore.") {
				if r.code == 0 {
					t.Errorf("a failure at %s (before the commit point) reported success", fp)
				}
				if _, err := os.Stat(stateFile(t, ws, "journal.json")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("journal left after an in-process undo: %v", err)
				}
			}
			// Whatever the journal says, the next command settles on the same side, counted once.
			if o := f.settle(t, ws, "B", map[string]int{}); o.side != before {
				t.Errorf("after recover: %+v, want %s", o, before)
			}
			t.Logf("%s=error: exit %d, workspace %s", fp, r.code, before)
		})
	}
}

// TestCrashImmutableFileFailsCleanly: a real mid-rollback failure (a file B modifies is immutable,
// chattr +i) makes the rollback fail and leaves the workspace exactly A, byte for byte.
func TestCrashImmutableFileFailsCleanly(t *testing.T) {
	f := newFixture(t, 100)
	ws := f.copyOf(t)
	immutable := []string{"bulk/d39/f0079.txt", "mod.txt"}
	for _, p := range immutable { // B rewrites both: one late and one early in the restore's order
		target := filepath.Join(ws, p)
		if _, err := os.Stat(target); err != nil {
			t.Fatal(err)
		}
		testkit.Immutable(t, target)
		if err := os.WriteFile(target, []byte("x"), 0o644); err == nil {
			t.Skip("chattr +i does not stop writes here")
		}
	}
	r := runPlan(t, ws, nil, f.rollbackTo("B")...)
	if r.code == 0 || r.killed {
		t.Fatalf("rollback over an immutable file: exit %d (killed %v), want a failure", r.code, r.killed)
	}
	requireSame(t, ws, f.wantA, "after a rollback that failed on an immutable file")
	if o := f.settle(t, ws, "B", map[string]int{}); o.side != "A" || o.recovered {
		t.Errorf("outcome %+v, want A with nothing to recover", o)
	}
	// Fixed: the rollback succeeds.
	for _, p := range immutable {
		testkit.Mutable(t, filepath.Join(ws, p))
	}
	mustPlan(t, ws, f.rollbackTo("B")...)
	requireSame(t, ws, f.wantB, "after the rollback once the file is writable")
}

func crashTrials() int {
	if n, err := strconv.Atoi(os.Getenv("PLAN_CRASH_TRIALS")); err == nil && n > 0 {
		return n
	}
	return 20
}

// crashFiles is the number of small files that differ between A and B in the random-kill test:
// PLAN_CRASH_FILES, else 2,000 when PLAN_CRASH_TRIALS is set (make crash), else 300, which keeps
// plain `go test` fast on file systems where creating a file costs most of a millisecond.
func crashFiles() int {
	if n, err := strconv.Atoi(os.Getenv("PLAN_CRASH_FILES")); err == nil && n > 0 {
		return n
	}
	if os.Getenv("PLAN_CRASH_TRIALS") != "" {
		return 2000
	}
	return 300
}

// TestCrashRandomKill rolls one workspace back and forth between A and B (every file of the bulk
// differs) and kills each rollback with SIGKILL after a random delay. Half the trials pick the
// delay over the whole command; the other half wait for the journal to appear and kill within the
// restore itself, where a mix would come from. Every third trial that left a journal also kills the
// first `plan recover` part-way. Each trial then recovers and requires exactly A or exactly B, with
// the rollback counted exactly when it completed.
func TestCrashRandomKill(t *testing.T) {
	f := newFixture(t, crashFiles())
	ws := f.dir
	counts := map[string]int{}
	journal := stateFile(t, ws, "journal.json")

	// Calibrate with one uninterrupted rollback A→B: how long the command takes, and when the
	// journal (the restore phase) appears and goes.
	var total, restoreStart, restoreEnd time.Duration
	start := time.Now()
	p := startPlan(t, ws, f.rollbackTo("B")...)
	for !p.exited() {
		_, err := os.Stat(journal)
		switch {
		case err == nil && restoreStart == 0:
			restoreStart = time.Since(start)
		case err != nil && restoreStart != 0 && restoreEnd == 0:
			restoreEnd = time.Since(start)
		}
		time.Sleep(200 * time.Microsecond)
	}
	if r := p.wait(t); r.code != 0 {
		t.Fatalf("calibration rollback failed: exit %d\n%s", r.code, r.stderr)
	}
	total = time.Since(start)
	if restoreEnd == 0 {
		restoreEnd = total
	}
	if o := f.settle(t, ws, "B", counts); o.side != "B" || o.recovered {
		t.Fatalf("calibration rollback: %+v", o)
	}
	side := "B"
	t.Logf("calibration (%d files): command %v, journal present from %v to %v", f.bulk, total.Round(time.Millisecond),
		restoreStart.Round(time.Millisecond), restoreEnd.Round(time.Millisecond))

	trials := crashTrials()
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("PLAN_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	r := rand.New(rand.NewPCG(seed, 99))
	t.Logf("PLAN_CRASH_SEED=%d, %d trials", seed, trials)
	tally := map[string]int{}
	mixed := 0
	for i := range trials {
		target := other(side)
		var delay time.Duration
		mode := "anywhere"
		began := time.Now()
		p := startPlan(t, ws, f.rollbackTo(target)...)
		if i%2 == 1 {
			mode = "restore"
			deadline := time.Now().Add(30 * time.Second)
			for time.Now().Before(deadline) && !p.exited() {
				if _, err := os.Stat(journal); err == nil {
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
			began = time.Now()
			delay = time.Duration(r.Int64N(int64(max(restoreEnd-restoreStart, time.Millisecond))))
		} else {
			delay = time.Duration(r.Int64N(int64(max(total, 50*time.Millisecond))))
		}
		time.Sleep(delay)
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		res := p.wait(t)
		if !res.killed {
			// It finished before the kill: the machine is faster than calibrated; narrow the window
			// so that later trials land inside the command again.
			if took := time.Since(began); mode == "anywhere" {
				total = min(total, took)
			} else {
				restoreEnd = restoreStart + min(restoreEnd-restoreStart, took)
			}
		}
		if !res.killed && res.code != 0 {
			t.Errorf("trial %d: the rollback failed on its own: exit %d\n%s", i, res.code, res.stderr)
		}
		// Every third trial crashes the recovery too, when there is something to recover.
		if _, err := os.Stat(journal); err == nil && i%3 == 2 {
			rp := startPlan(t, ws, "--json", "recover")
			time.Sleep(time.Duration(r.Int64N(int64(max(restoreEnd-restoreStart, time.Millisecond)))))
			_ = rp.cmd.Process.Signal(syscall.SIGKILL)
			if rr := rp.wait(t); rr.killed {
				mode += "+recovery-killed"
			}
		}
		o := f.settle(t, ws, target, counts)
		key := fmt.Sprintf("%s/killed=%v/ended-at-%s", mode, res.killed, map[bool]string{true: "target", false: "source"}[o.side == target])
		if o.recovered {
			key += "/recovery-" + o.result
		}
		tally[key]++
		if o.side == "mixed" {
			mixed++
			t.Errorf("trial %d (%s, delay %v): mixed state", i, mode, delay)
		}
		if t.Failed() {
			t.Fatalf("stopping after trial %d; rerun with PLAN_CRASH_SEED=%d", i, seed)
		}
		side = o.side
	}
	t.Logf("%d trials, %d mixed states; outcomes: %v", trials, mixed, tally)
}

// running is a started plan process.
type running struct {
	cmd       *exec.Cmd
	out, errb bytes.Buffer
	done      chan struct{} // closed once Wait returned; err is set before
	err       error
}

func startPlan(t *testing.T, ws string, args ...string) *running {
	t.Helper()
	p := &running{cmd: exec.Command(planBinary(t), append([]string{"-C", ws}, args...)...), done: make(chan struct{})}
	p.cmd.Env = cleanEnv(t)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errb
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p
}

func (p *running) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *running) wait(t *testing.T) result {
	t.Helper()
	<-p.done
	return finish(t, p.cmd, p.err, &p.out, &p.errb)
}
