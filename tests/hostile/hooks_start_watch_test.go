package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The agents' prompt hook starts `plan watch` in the background. Attacked here: many turns
// starting at once (one service, never two), the service killed with SIGKILL mid-session (the
// next hooks walk and still record what is on disk; the next turn starts a service again).
func TestTurnsStartOneServiceAndSurviveItsDeath(t *testing.T) {
	w := newWorkspace(t, nil)
	w.write("seed.txt", "seed")
	t.Cleanup(func() { w.run("watch", "stop") })
	const n = 6
	var wg sync.WaitGroup
	results := make([]hookResult, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := agentSession{w: w, id: fmt.Sprintf("turns-%d", i)}
			results[i] = s.send(t, nil, "UserPromptSubmit", map[string]any{"prompt": "go"})
		}()
	}
	wg.Wait()
	for i, r := range results {
		r.quiet(t, fmt.Sprintf("prompt %d", i))
	}
	st := awaitService(t, w)
	// Turns that lost the race may have spawned a service that is still finding out it lost (it
	// refuses on the watch lock and exits): one must be left, the one that answers.
	var pids []int
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if pids = servicePIDs(t, w); len(pids) == 1 || time.Now().After(deadline) {
			break
		}
	}
	if len(pids) != 1 || pids[0] != st.PID {
		t.Fatalf("%d concurrent turns left services %v, want one (pid %d)", n, pids, st.PID)
	}

	s := agentSession{w: w, id: "turns-0"}
	s.send(t, nil, "PreToolUse", bashCall("toolu_a", "echo a > a.txt")).quiet(t, "pre a")
	w.write("a.txt", "a\n")
	s.send(t, nil, "PostToolUse", bashCall("toolu_a", "echo a > a.txt")).quiet(t, "post a")

	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The hooks may warn that the service did not answer; they must not fail.
	if r := s.send(t, nil, "PreToolUse", bashCall("toolu_b", "echo b > b.txt")); r.code != 0 {
		t.Fatalf("pre b with the service dead: %+v", r)
	}
	w.write("b.txt", "b\n")
	if r := s.send(t, nil, "PostToolUse", bashCall("toolu_b", "echo b > b.txt")); r.code != 0 {
		t.Fatalf("post b with the service dead: %+v", r)
	}
	var doc sessionsDoc
	w.mustJSON(&doc, "sessions", "turns-0")
	calls := doc.Sessions[0].Turns[0].ToolCalls
	if len(calls) != 2 || len(calls[1].Files) != 1 || calls[1].Files[0].Path != "b.txt" {
		t.Fatalf("the call made while the service was dead: %+v", calls)
	}
	requireRecorded(t, w, w.checkpoint("after the kill"), "a.txt", "b.txt", "seed.txt")

	s.send(t, nil, "UserPromptSubmit", map[string]any{"prompt": "again"}).quiet(t, "the next turn")
	if again := awaitService(t, w); again.PID == st.PID {
		t.Fatalf("the next turn did not start a new service: %+v", again)
	}
}

// awaitService waits until the workspace's service answers and has taken its first snapshot.
func awaitService(t *testing.T, w *workspace) watchStatus {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var st watchStatus
		w.mustJSON(&st, "watch", "status")
		if st.Running && st.Snapshots > 0 {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("no service answered: %+v", st)
		}
	}
}

// servicePIDs lists the live `plan watch` processes whose working directory is the workspace.
func servicePIDs(t *testing.T, w *workspace) []int {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", p.Name(), "cwd"))
		if err != nil || cwd != w.dir {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmd), "watch\x00") {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat")); err == nil && strings.Contains(string(stat), ") Z ") {
			continue // a zombie that has not been reaped yet
		}
		out = append(out, pid)
	}
	return out
}
