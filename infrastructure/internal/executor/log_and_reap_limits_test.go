package executor_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/tests/testkit"

	"github.com/planhq/plan/infrastructure/internal/executor"
)

// A validation's banner goes to the log before the check runs; when the log cannot take it (the
// disk is full; here the file size limit, which fails a write the same way) the check does not run
// unlogged: Execute fails and nothing was started. Not parallel: the size limit is the process's,
// and parallel tests only start once every sequential one is done.
func TestExecuteDoesNotRunWhenTheBannerCannotBeLogged(t *testing.T) {
	e := newEnv(t)
	log := filepath.Join(e.layout.Logs(), "a.1.log")
	if err := os.WriteFile(log, []byte(strings.Repeat("command output\n", 200)), 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.SkipUnderTestLog(t)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 1024, Max: old.Max}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	_, err := e.shell.Execute(context.Background(), port.Command{
		DecisionID: "a", Attempt: 1, Script: "echo ran > ran.txt", LogPath: "logs/a.1.log",
		Append: true, Banner: "validate: test -f out",
	}, nil)
	if rerr := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); rerr != nil {
		t.Fatalf("restore the file size limit: %v", rerr)
	}
	if !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("Execute with an unwritable log: %v, want the write's EFBIG", err)
	}
	if _, err := os.Stat(e.path("ran.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the check ran although its banner was not logged: %v", err)
	}
}

// Reap stops what it finds, round after round; against something it cannot see that keeps
// starting tagged processes (an untagged spawner) it gives up with an error after a bounded time
// instead of spinning forever inside recovery.
func TestReapGivesUpOnProcessesThatKeepReappearing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	token := fmt.Sprintf("respawn-%d-%d", os.Getpid(), time.Now().UnixNano())
	// Eight loops, so that some tagged process is always there between two of Reap's rounds even
	// when the machine is busy (with four, a loaded 2-core machine running the race-enabled suite
	// once left a round with none, and Reap rightly found nothing left).
	loop := "while :; do " + executor.TokenVar + "=" + token + " sleep 30 & sleep 0.002; done"
	spawner := exec.Command("/bin/sh", "-c", // #nosec -- test fixture
		strings.Repeat("("+loop+") & ", 8)+"wait")
	spawner.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := spawner.Start(); err != nil {
		t.Fatal(err)
	}
	stopSpawner := func() {
		_ = syscall.Kill(-spawner.Process.Pid, syscall.SIGKILL)
		_ = spawner.Wait()
	}
	t.Cleanup(stopSpawner)

	deadline := time.Now().Add(5 * time.Second)
	for len(tagged(token)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the spawner started no tagged process")
		}
		time.Sleep(5 * time.Millisecond)
	}

	began := time.Now()
	n, err := e.shell.Reap(token)
	if err == nil || !strings.Contains(err.Error(), "keep reappearing") {
		t.Fatalf("Reap against a spawner: %d, %v; want it to give up", n, err)
	}
	if n < 2 {
		t.Fatalf("Reap stopped %d processes before giving up, want one per round at least", n)
	}
	if d := time.Since(began); d > 30*time.Second {
		t.Fatalf("Reap took %s to give up", d)
	}
	if !alive(spawner.Process.Pid) {
		t.Fatal("Reap killed the untagged spawner")
	}

	// Once the spawner is gone, what it left is stopped and Reap reports success.
	stopSpawner()
	if _, err := e.shell.Reap(token); err != nil {
		t.Fatalf("Reap after the spawner stopped: %v", err)
	}
}

// tagged lists the processes whose environment carries token.
func tagged(token string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if strings.Contains(readFile("/proc/"+e.Name()+"/environ"), executor.TokenVar+"="+token+"\x00") {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
