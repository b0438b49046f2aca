package features

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cucumber/godog"
)

// registerWatchSteps adds the steps of features/watch.feature: a `plan watch` service run by the
// real binary (the in-process commands of the scenario ask it over its socket), killed, or a socket
// left behind or taken by another process. Every service is stopped after its scenario.
func (s *scenario) registerWatchSteps(sc *godog.ScenarioContext) {
	sc.Step(`^the watch service runs(?: with "([^"]*)")?$`, s.theWatchServiceRuns)
	sc.Step(`^the watch service is killed with SIGKILL$`, s.theWatchServiceIsKilled)
	sc.Step(`^a stale watch socket$`, s.aStaleWatchSocket)
	sc.Step(`^another process listens on the watch socket$`, s.anotherProcessListens)
	sc.Step(`^within (\d+) seconds the workspace has a checkpoint of type "([^"]*)"$`, s.withinSecondsACheckpointOfType)
	sc.Step(`^within (\d+) seconds the watch service has stopped$`, s.withinSecondsTheWatchServiceStopped)
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		return ctx, s.stopWatch()
	})
}

// watchBin runs the plan binary in the workspace with args and returns its stdout.
func (s *scenario) watchBin(args ...string) (string, error) {
	bin, err := s.h.processBinary()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = s.ws
	cmd.Env = s.processEnv(os.Environ())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("plan %s: %w\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String(), nil
}

func (s *scenario) theWatchServiceRuns(flags string) error {
	args := []string{"--json", "watch", "--daemon"}
	if flags != "" {
		args = append(args, strings.Fields(flags)...)
	}
	out, err := s.watchBin(args...)
	if err != nil {
		return err
	}
	var st struct {
		Running bool
		PID     int
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || !st.Running || st.PID <= 0 {
		return fmt.Errorf("plan watch --daemon printed %q (%w)", out, err)
	}
	s.watchPID = st.PID
	return nil
}

func (s *scenario) theWatchServiceIsKilled() error {
	if s.watchPID == 0 {
		return errors.New("no watch service runs")
	}
	if err := syscall.Kill(s.watchPID, syscall.SIGKILL); err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); alive(s.watchPID); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d still runs after SIGKILL", s.watchPID)
		}
	}
	s.watchPID = 0
	return nil
}

// aStaleWatchSocket leaves a socket file in .plan that nobody listens on, as a service killed
// with SIGKILL does.
func (s *scenario) aStaleWatchSocket() error {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(s.ws, ".plan", "watch.sock"), Net: "unix"})
	if err != nil {
		return err
	}
	ln.SetUnlinkOnClose(false)
	return ln.Close()
}

// anotherProcessListens listens on the watch socket and answers nothing but silence.
func (s *scenario) anotherProcessListens() error {
	ln, err := net.Listen("unix", filepath.Join(s.ws, ".plan", "watch.sock"))
	if err != nil {
		return err
	}
	s.impostor = ln
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				time.Sleep(5 * time.Second)
				_ = c.Close()
			}()
		}
	}()
	return nil
}

func (s *scenario) withinSecondsACheckpointOfType(secs int, typ string) error {
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	for {
		out, err := s.watchBin("--json", "checkpoint", "list")
		if err != nil {
			return err
		}
		var list []struct{ Type string }
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			return err
		}
		for _, c := range list {
			if c.Type == typ {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %s checkpoint within %ds: %s", typ, secs, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// withinSecondsTheWatchServiceStopped waits for the scenario's service to stop of its own accord.
func (s *scenario) withinSecondsTheWatchServiceStopped(secs int) error {
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	for {
		out, err := s.watchBin("--json", "watch", "status")
		if err != nil {
			return err
		}
		var st struct{ Running bool }
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			return err
		}
		if !st.Running {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the watch service still runs after %ds: %s", secs, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopWatch stops the scenario's service (when the scenario's own teardown did not end it
// already) and closes an impostor's socket.
func (s *scenario) stopWatch() error {
	if s.impostor != nil {
		_ = s.impostor.Close()
		s.impostor = nil
	}
	if s.watchPID == 0 {
		return nil
	}
	pid := s.watchPID
	s.watchPID = 0
	if !alive(pid) {
		return nil // the scenario's teardown, which ends every process in its directory, ran first
	}
	// SIGTERM ends the service as --stop does.
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return fmt.Errorf("the watch service (pid %d) did not end on SIGTERM", pid)
		}
	}
	return nil
}

// alive says process pid runs (a zombie nobody reaped yet does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}
