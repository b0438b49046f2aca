package crash

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// rootOf takes a checkpoint with env and returns its root tree.
func rootOf(t *testing.T, ws string, env []string) string {
	t.Helper()
	r := runPlan(t, ws, env, "--json", "checkpoint", "create", "--note", "compare")
	var cp struct {
		Root     string   `json:"root_tree"`
		Warnings []string `json:"warnings"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &cp) != nil || cp.Root == "" {
		t.Fatalf("checkpoint create: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	return cp.Root
}

// TestCrashRollbackWithWatchService kills rollbacks while `plan watch` runs, at every failpoint
// and then after random delays. With the service, a restore tells it which files it placed (it
// takes the restore's word for them) and hands it what it replaced (swapped into staging, then
// moved to .plan/trash) to remove. After every kill and recovery the workspace must be exactly A
// or exactly B, a checkpoint through the service must record what a walk (PLAN_WATCH=0) records,
// and once an uninterrupted rollback has been answered for, nothing it replaced may be left.
func TestCrashRollbackWithWatchService(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("plan watch needs inotify (Linux)")
	}
	f := newFixture(t, 100)
	ws := f.copyOf(t)
	mustPlan(t, ws, "watch", "--daemon")
	t.Cleanup(func() { runPlan(t, ws, nil, "watch", "stop") })
	counts := map[string]int{}
	side := "A"
	same := func(context string) {
		t.Helper()
		if through, walked := rootOf(t, ws, nil), rootOf(t, ws, []string{"PLAN_WATCH=0"}); through != walked {
			t.Fatalf("%s: the service recorded tree %s, a walk %s", context, through, walked)
		}
	}
	for _, fp := range failpoints {
		target := other(side)
		r := runPlan(t, ws, []string{"PLAN_FAILPOINT=" + fp}, f.rollbackTo(target)...)
		if !r.killed {
			t.Fatalf("%s: the failpoint was not reached: exit %d\n%s", fp, r.code, r.stderr)
		}
		if o := f.settle(t, ws, target, counts); o.side != target {
			t.Fatalf("kill at %s: outcome %+v, want %s", fp, o, target)
		}
		side = target
		same("after a kill at " + fp)
	}

	// An uninterrupted rollback: what it replaced is gone once the service has answered for it.
	target := other(side)
	mustPlan(t, ws, f.rollbackTo(target)...)
	if o := f.settle(t, ws, target, counts); o.side != target {
		t.Fatalf("uninterrupted rollback: %+v", o)
	}
	side = target
	trash := filepath.Join(ws, ".plan", "trash")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		entries, err := os.ReadDir(trash)
		if (err == nil && len(entries) == 0) || os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("what the rollback replaced is still in %s: %d entries (%v)", trash, len(entries), err)
		}
	}
	if _, err := os.Lstat(filepath.Join(ws, ".plan", "staging")); !os.IsNotExist(err) {
		t.Fatalf("staging left after a rollback: %v", err)
	}
	same("after an uninterrupted rollback")

	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	start := time.Now()
	mustPlan(t, ws, f.rollbackTo(other(side))...)
	took := time.Since(start)
	side = other(side)
	counts[side]++
	for i := range crashTrials() {
		target := other(side)
		p := startPlan(t, ws, f.rollbackTo(target)...)
		time.Sleep(time.Duration(r.Int64N(int64(max(took, 20*time.Millisecond)))))
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		if res := p.wait(t); !res.killed && res.code != 0 {
			t.Fatalf("trial %d: the rollback failed on its own: exit %d\n%s", i, res.code, res.stderr)
		}
		o := f.settle(t, ws, target, counts)
		if o.side == "mixed" {
			t.Fatalf("trial %d: mixed state", i)
		}
		side = o.side
		same(fmt.Sprintf("after random kill %d", i))
	}
}
