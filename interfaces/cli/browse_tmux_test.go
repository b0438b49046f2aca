package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tmuxTerm is a real terminal for plan browse: a private tmux server (its own socket) running
// this test binary as plan, typed at with send-keys and read with capture-pane.
type tmuxTerm struct {
	t    *testing.T
	sock string
}

func newTmux(t *testing.T, size [2]int, env []string, args ...string) *tmuxTerm {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (Debian: apt-get install tmux): the terminal test of plan browse needs it")
	}
	tm := &tmuxTerm{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock")}
	cmd := []string{"env", childEnv + "=1", "PLAN_DATA_DIR=" + os.Getenv("PLAN_DATA_DIR"), "TERM=xterm-256color"}
	cmd = append(append(cmd, env...), os.Args[0])
	cmd = append(cmd, args...)
	quoted := make([]string, len(cmd))
	for i, a := range cmd {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	line := strings.Join(quoted, " ") + `; echo "EXIT=$?"; sleep 60`
	tm.run("-f", "/dev/null", "new-session", "-d", "-x", strconv.Itoa(size[0]), "-y", strconv.Itoa(size[1]), line)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", tm.sock, "kill-server").Run() }) // #nosec -- tmux, our socket
	return tm
}

func (tm *tmuxTerm) run(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", tm.sock}, args...)...).CombinedOutput() // #nosec -- tmux, our socket
	if err != nil {
		tm.t.Fatalf("tmux %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen is the pane as the user sees it; escapes adds its attributes' escape sequences.
func (tm *tmuxTerm) screen(escapes bool) string {
	args := []string{"capture-pane", "-p", "-t", "0"}
	if escapes {
		args = append(args, "-e")
	}
	return tm.run(args...)
}

func (tm *tmuxTerm) keys(keys ...string) {
	tm.run(append([]string{"send-keys", "-t", "0"}, keys...)...)
}

// waitFor waits until the screen holds want, failing after a few seconds.
func (tm *tmuxTerm) waitFor(want string) string {
	tm.t.Helper()
	deadline := time.Now().Add(8 * time.Second)
	for {
		s := tm.screen(false)
		if strings.Contains(s, want) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("the screen never showed %q:\n%s", want, s)
		}
		time.Sleep(40 * time.Millisecond)
	}
}

// waitUntil waits until ok holds.
func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(8 * time.Second); !ok(); time.Sleep(40 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// plan browse in a real terminal: the timeline shows, without colour under NO_COLOR; a rewind
// declined leaves the workspace byte-exact, one confirmed restores it (and is in plan history); a
// new entry appears live; a resize redraws; q ends it with exit 0.
func TestBrowseInTmux(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "one\n")
	createCheckpoint(t, dir, "--note", "first")
	writeFile(t, dir, "a.txt", "one\ntwo\n")
	writeFile(t, dir, "b.txt", "new\n")
	createCheckpoint(t, dir, "--note", "second")
	writeFile(t, dir, "c.txt", "later\n")

	tm := newTmux(t, [2]int{80, 24}, []string{"NO_COLOR=1"}, "-C", dir, "browse")
	s := tm.waitFor("first")
	for _, want := range []string{"plan browse", "second", "+1 ~1 -0", "q quit"} {
		if !strings.Contains(tm.waitFor(want), want) {
			t.Fatalf("the timeline lacks %q:\n%s", want, s)
		}
	}
	if colour := tm.screen(true); strings.Contains(colour, "\x1b[") {
		t.Fatalf("NO_COLOR, yet the screen has escape codes:\n%q", colour)
	}

	before := readTree(t, dir)
	tm.keys("j", "r")
	tm.waitFor("go ahead? y yes")
	tm.keys("n")
	tm.waitFor("rewind declined: nothing changed")
	if !mapsEqual(readTree(t, dir), before) {
		t.Fatal("a declined rewind changed the workspace")
	}

	tm.keys("r")
	tm.waitFor("go ahead? y yes")
	tm.keys("y")
	waitUntil(t, "the workspace rewound to first", func() bool {
		got := readTree(t, dir)
		return len(got) == 1 && got[filepath.Join(dir, "a.txt")] == "one\n"
	})
	tm.waitFor("before rollback")
	if o := mustPlan(t, dir, "history"); !strings.Contains(o.stdout, "rollback --to-checkpoint") {
		t.Fatalf("the rewind is not in plan history: %v", o)
	}

	createCheckpoint(t, dir, "--note", "made outside")
	tm.waitFor("made outside")

	tm.run("resize-window", "-t", "0", "-x", "100", "-y", "30")
	waitUntil(t, "a redraw at 100x30", func() bool {
		lines := strings.Split(strings.TrimRight(tm.screen(false), "\n"), "\n")
		return len(lines) == 30 && strings.Contains(lines[29], "q quit")
	})

	tm.keys("q")
	tm.waitFor("EXIT=0")
}

// With colour on (no NO_COLOR), the screen is painted.
func TestBrowseInTmuxPaints(t *testing.T) {
	dir := newWorkspace(t)
	createCheckpoint(t, dir, "--note", "only")
	tm := newTmux(t, [2]int{80, 24}, nil, "-C", dir, "browse")
	tm.waitFor("only")
	if colour := tm.screen(true); !strings.Contains(colour, "\x1b[") {
		t.Fatalf("colour on, yet nothing painted:\n%q", colour)
	}
	tm.keys("C-c")
	tm.waitFor("EXIT=0")
}

// SIGTERM (kill's default) ends plan browse with the terminal as it was: out of raw mode, the
// alternate screen left. The pane's tty is read from outside with stty.
func TestBrowseInTmuxSIGTERMRestoresTheTerminal(t *testing.T) {
	if _, err := exec.LookPath("stty"); err != nil {
		t.Skip("no stty to read the terminal's mode with")
	}
	dir := newWorkspace(t)
	createCheckpoint(t, dir, "--note", "only")
	tm := newTmux(t, [2]int{80, 24}, []string{"NO_COLOR=1"}, "-C", dir, "browse")
	tm.waitFor("only")
	tty := strings.TrimSpace(tm.run("display-message", "-p", "-t", "0", "#{pane_tty}"))
	mode := func() string {
		out, err := exec.Command("stty", "-F", tty, "-a").CombinedOutput() // #nosec -- the pane's own tty
		if err != nil {
			t.Fatalf("stty -F %s: %v\n%s", tty, err, out)
		}
		return string(out)
	}
	if m := mode(); !strings.Contains(m, "-icanon") || !strings.Contains(m, "-echo ") {
		t.Fatalf("plan browse is not in raw mode:\n%s", m)
	}
	shell := strings.TrimSpace(tm.run("display-message", "-p", "-t", "0", "#{pane_pid}"))
	children, err := os.ReadFile("/proc/" + shell + "/task/" + shell + "/children")
	if err != nil || len(strings.Fields(string(children))) != 1 {
		t.Fatalf("the pane's shell %s has children %q: %v", shell, children, err)
	}
	pid, err := strconv.Atoi(strings.Fields(string(children))[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The plan binary's context ends on SIGTERM (exit 130); this test binary's does not, and
	// bubbletea's own handler quits (exit 0): either way the program ends, and restores.
	if s := tm.waitFor("EXIT="); !strings.Contains(s, "EXIT=0") && !strings.Contains(s, "EXIT=130") {
		t.Fatalf("SIGTERM: exit neither 0 nor 130:\n%s", s)
	}
	if m := mode(); strings.Contains(m, "-icanon") || strings.Contains(m, "-echo ") {
		t.Fatalf("SIGTERM left the terminal in raw mode:\n%s", m)
	}
}
