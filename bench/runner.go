package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// measured is one timed process (or sequence of processes).
type measured struct {
	wall      time.Duration
	maxRSSKiB int64 // the largest peak resident set of the processes, in KiB
	stdout    []byte
	stderr    []byte
}

// exitError is a command that ran and failed; it keeps what the command said.
type exitError struct {
	cmd    string
	code   int
	stderr string
}

func (e *exitError) Error() string {
	msg := strings.TrimSpace(e.stderr)
	if len(msg) > 2000 {
		msg = msg[:2000] + "…"
	}
	return fmt.Sprintf("%s: exit %d: %s", e.cmd, e.code, msg)
}

// exitCode is the process exit code behind err, or -1 when err is not a failed command.
func exitCode(err error) int {
	if ee, ok := errors.AsType[*exitError](err); ok {
		return ee.code
	}
	return -1
}

// runner starts the processes the benchmark times. Output that is not asked for goes to /dev/null,
// so the terminal never slows a measurement down.
type runner struct {
	ctx context.Context
	env []string // added to the environment of every command
}

// environ is the environment of a command r starts: the bench's own, r's, then extra (a later
// value of a variable wins).
func (r *runner) environ(extra []string) []string {
	return append(append(os.Environ(), r.env...), extra...)
}

// run executes name with args in dir, times it from start to exit, and captures its stdout.
func (r *runner) run(dir string, extraEnv []string, name string, args ...string) (measured, error) {
	return r.exec(true, dir, extraEnv, name, args...)
}

// quiet is run with stdout sent to /dev/null, for commands whose output is not read.
func (r *runner) quiet(dir string, extraEnv []string, name string, args ...string) (measured, error) {
	return r.exec(false, dir, extraEnv, name, args...)
}

func (r *runner) exec(capture bool, dir string, extraEnv []string, name string, args ...string) (measured, error) {
	cmd := exec.CommandContext(r.ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = r.environ(extraEnv)
	var stdout, stderr bytes.Buffer
	if capture {
		cmd.Stdout = &stdout
	} // a nil Stdout is /dev/null
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	m := measured{wall: time.Since(start), stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	if cmd.ProcessState != nil {
		m.maxRSSKiB = maxRSSKiB(cmd.ProcessState)
	}
	if err != nil {
		line := strings.Join(append([]string{filepath.Base(name)}, args...), " ")
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			return m, &exitError{cmd: line, code: ee.ExitCode(), stderr: stderr.String()}
		}
		return m, fmt.Errorf("%s: %w", line, err)
	}
	return m, nil
}

// seq runs commands one after another, stdout discarded, and adds up their time, like `a && b` in
// a shell.
func (r *runner) seq(dir string, extraEnv []string, cmds ...[]string) (measured, error) {
	var total measured
	for _, c := range cmds {
		m, err := r.quiet(dir, extraEnv, c[0], c[1:]...)
		total.wall += m.wall
		total.maxRSSKiB = max(total.maxRSSKiB, m.maxRSSKiB)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// maxRSSKiB reads the peak resident set of a finished process. Linux reports ru_maxrss in KiB,
// macOS in bytes.
func maxRSSKiB(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return ru.Maxrss / 1024
	}
	return ru.Maxrss
}

// planCLI drives the plan binary under test, always with --json.
type planCLI struct {
	r   *runner
	bin string
	ws  string
}

// checkpointView is the part of the checkpoint object (docs/cli.md) the benchmark reads.
type checkpointView struct {
	ID          string `json:"id"`
	Files       int64  `json:"files"`
	Bytes       int64  `json:"bytes"`
	StoredBytes int64  `json:"stored_bytes"`
	// DurationMS is the snapshot alone, as plan records it (no process start, database or lock).
	DurationMS float64 `json:"duration_ms"`
}

func (p *planCLI) init() error {
	_, err := p.r.run(p.ws, nil, p.bin, "-C", p.ws, "--json", "init")
	return err
}

// checkpoint times `plan -C ws --json checkpoint create` and decodes what it prints.
func (p *planCLI) checkpoint() (measured, checkpointView, error) {
	m, err := p.r.run(p.ws, nil, p.bin, "-C", p.ws, "--json", "checkpoint", "create", "--note", "bench")
	if err != nil {
		return m, checkpointView{}, err
	}
	cp, err := decodeCheckpoint(m.stdout)
	return m, cp, err
}

// decodeCheckpoint reads the checkpoint object; it also accepts the object wrapped as
// {"checkpoint": {...}} so a presenter change does not break the benchmark.
func decodeCheckpoint(out []byte) (checkpointView, error) {
	var cp checkpointView
	if err := json.Unmarshal(out, &cp); err != nil {
		return cp, fmt.Errorf("checkpoint create printed no JSON object: %w (output: %.200q)", err, out)
	}
	if cp.ID == "" {
		var wrapped struct {
			Checkpoint checkpointView `json:"checkpoint"`
		}
		if err := json.Unmarshal(out, &wrapped); err == nil && wrapped.Checkpoint.ID != "" {
			return wrapped.Checkpoint, nil
		}
		return cp, fmt.Errorf("checkpoint create printed no \"id\" (output: %.200q)", out)
	}
	return cp, nil
}

// rollback times a rollback to id. --yes is a global flag in the contract; if the CLI only accepts
// it after the subcommand, the second form is tried. Exit 2 from both means the command (or the
// flag) does not exist yet: errUnsupported.
func (p *planCLI) rollback(id string) (measured, error) {
	m, err := p.r.run(p.ws, nil, p.bin, "-C", p.ws, "--json", "--yes", "rollback", "--to-checkpoint", id)
	if exitCode(err) != 2 {
		return m, err
	}
	m, err2 := p.r.run(p.ws, nil, p.bin, "-C", p.ws, "--json", "rollback", "--to-checkpoint", id, "--yes")
	if exitCode(err2) == 2 {
		return m, fmt.Errorf("%w: %w", errUnsupported, err)
	}
	return m, err2
}

// runPlan times `plan --json run FILE [args]` and decodes the status object it prints.
func (p *planCLI) runPlan(file string, args ...string) (measured, runView, error) {
	m, err := p.r.run(p.ws, nil, p.bin, append([]string{"-C", p.ws, "--json", "run", file}, args...)...)
	if err != nil {
		return m, runView{}, err
	}
	var v runView
	if err := json.Unmarshal(m.stdout, &v); err != nil {
		return m, v, fmt.Errorf("plan run printed no status object: %w (output: %.200q)", err, m.stdout)
	}
	return m, v, nil
}

// runView is the part of the status object (docs/cli.md, plan status) the benchmark reads.
type runView struct {
	Decisions []struct {
		ID           string `json:"id"`
		Status       string `json:"status"`
		CheckpointID string `json:"checkpoint_id"`
	} `json:"decisions"`
}

// listedCheckpoint is the part of a `checkpoint list` entry the benchmark reads.
type listedCheckpoint struct {
	ID          string  `json:"id"`
	Type        string  `json:"type"`
	StoredBytes int64   `json:"stored_bytes"`
	DurationMs  float64 `json:"duration_ms"`
}

// list returns `plan --json checkpoint list` (untimed).
func (p *planCLI) list() ([]listedCheckpoint, error) {
	m, err := p.r.run(p.ws, nil, p.bin, "-C", p.ws, "--json", "checkpoint", "list")
	if err != nil {
		return nil, err
	}
	var cps []listedCheckpoint
	if err := json.Unmarshal(m.stdout, &cps); err != nil {
		return nil, fmt.Errorf("checkpoint list printed no JSON array: %w (output: %.200q)", err, m.stdout)
	}
	return cps, nil
}

var errUnsupported = errors.New("not supported by this plan binary (exit 2)")

// shadowGit is the baseline many agent tools use: a git repository kept outside the workspace, with
// the workspace as its work tree.
type shadowGit struct {
	r       *runner
	gitDir  string
	ws      string
	counter int
}

// gitConfig gives the baseline its best case: no signing, no hooks, no automatic gc or
// maintenance (which would otherwise start in the background after the first commit's ~10k loose
// objects and steal CPU from the next measurement), and no user or system config.
var gitConfig = []string{
	"-c", "user.name=plan-bench", "-c", "user.email=bench@plan.invalid",
	"-c", "commit.gpgsign=false", "-c", "gc.auto=0", "-c", "maintenance.auto=false",
	"-c", "core.hooksPath=/dev/null", "-c", "core.autocrlf=false",
}

func (g *shadowGit) env() []string {
	return []string{"GIT_DIR=" + g.gitDir, "GIT_WORK_TREE=" + g.ws, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0"}
}

func (g *shadowGit) git(args ...string) []string {
	return append(append([]string{"git"}, gitConfig...), args...)
}

// initRepo creates a fresh repository (untimed) that ignores plan's own state directory.
func (g *shadowGit) initRepo() error {
	if err := os.RemoveAll(g.gitDir); err != nil {
		return err
	}
	if _, err := g.r.seq(g.ws, g.env(), g.git("init", "-q")); err != nil {
		return err
	}
	exclude := filepath.Join(g.gitDir, "info", "exclude")
	if err := os.MkdirAll(filepath.Dir(exclude), 0o750); err != nil {
		return err
	}
	return os.WriteFile(exclude, []byte("/.plan/\n"), 0o600)
}

// commit times `git add -A && git commit -q -m x`.
func (g *shadowGit) commit() (measured, error) {
	g.counter++
	msg := fmt.Sprintf("bench %d", g.counter)
	return g.r.seq(g.ws, g.env(), g.git("add", "-A"), g.git("commit", "-q", "--allow-empty", "-m", msg))
}

// status times `git status --porcelain`, keeping what it lists.
func (g *shadowGit) status() (measured, error) {
	c := g.git("status", "--porcelain")
	return g.r.run(g.ws, g.env(), c[0], c[1:]...)
}

// trackedFiles counts the files the repository's index holds (untimed).
func (g *shadowGit) trackedFiles() (int, error) {
	c := g.git("ls-files", "-z")
	m, err := g.r.run(g.ws, g.env(), c[0], c[1:]...)
	if err != nil {
		return 0, err
	}
	return bytes.Count(m.stdout, []byte{0}), nil
}

// gcAggressive times `git gc --aggressive --prune=now`: git's smallest store. --aggressive
// searches far wider for delta bases (window 250, depth 50) than the default gc; --prune=now
// drops the loose objects at once instead of keeping them two weeks.
func (g *shadowGit) gcAggressive() (measured, error) {
	return g.r.seq(g.ws, g.env(), g.git("gc", "--aggressive", "--prune=now", "-q"))
}

// resetHard times `git reset --hard -q`.
func (g *shadowGit) resetHard() (measured, error) {
	return g.r.seq(g.ws, g.env(), g.git("reset", "--hard", "-q"))
}

// copyTree times `cp -a` of the workspace's contents into a new directory dst. plan's own state
// directory is left out so the copy baseline copies exactly what the others snapshot.
func copyTree(r *runner, ws, dst string) (measured, error) {
	if err := os.MkdirAll(dst, 0o750); err != nil {
		return measured{}, err
	}
	entries, err := os.ReadDir(ws)
	if err != nil {
		return measured{}, err
	}
	args := []string{"-a"}
	for _, e := range entries {
		if e.Name() != ".plan" {
			args = append(args, filepath.Join(ws, e.Name()))
		}
	}
	args = append(args, dst)
	return r.quiet(ws, nil, "cp", args...)
}

// walkTree times a bare stat walk of the workspace (minus .plan): the floor for a no-change
// checkpoint, which has to look at every file at least this much.
func walkTree(r *runner, ws string) (measured, error) {
	return r.quiet(ws, nil, "find", ws, "-path", filepath.Join(ws, ".plan"), "-prune", "-o",
		"-printf", `%s %T@ %p\n`)
}
