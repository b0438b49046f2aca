// Command bench measures plan's checkpoints and rollback against what users otherwise reach for:
// a shadow git repository beside the workspace, and a full copy.
//
// It builds ./cmd/plan and measures, as the median of -runs repetitions, on a generated workspace
// of -files files and on a copy of `go env GOROOT` (-real=false skips it): the first checkpoint, a
// checkpoint after 1% change and with no change, a rollback of a 1% change, and the store after
// `checkpoint prune --keep N` + `gc`, each against git or cp; then the pre_decision checkpoints
// inside a `plan run`, the history of 12 releases of golang.org/x/net against `git gc
// --aggressive` (-history=false skips it), the fixed cost (fixed.go; -fixed-only), the history
// kept in a data directory (on the workspace's file system, on a tmpfs) against in .plan/
// (placement.go; -placement-only), and a shared store on MinIO and PostgreSQL (-shared-only).
// Every plan process gets a PLAN_DATA_DIR of the bench's own (datadir.go). The full list of rows
// and flags is in docs/design.md#bench; results and targets in docs/performance.md.
//
// Each row has a target; -strict makes a missed target a non-zero exit. Run it from the module
// root: `go run ./bench -files=100000 -strict`, or `make bench BENCH_FLAGS=...`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Targets (see the issue that introduced this harness, and issue 12).
const (
	firstSpeedup       = 3.0 // first checkpoint at least this many times faster than shadow git
	incrementalSpeedup = 5.0 // 1% change checkpoint likewise
	noChangeWalkFactor = 1.3 // a no-change checkpoint within this factor of a bare stat walk ...
	noChangeGitFactor  = 1.0 // ... and of `git status`
	rollbackGitFactor  = 1.0 // a rollback (its safety checkpoint included) within this factor of `git reset --hard`
	inRunWalkFactor    = 0.1 // an in-run checkpoint within this fraction of a no-change checkpoint
	historyGitFactor   = 1.0 // the store of a real history within this factor of git's packed one
	storedZstdFactor   = 1.2 // stored bytes <= this × zstd of the changed files + storedSlack
	storedSlack        = 64 << 10
	peakRSSLimitMB     = 150    // MB (10^6 bytes) of peak RSS ...
	peakRSSAtFiles     = 100000 // ... for workspaces this large
)

type config struct {
	files     int
	runs      int
	seed      uint64
	changePct float64
	real      bool
	history   bool
	shared    bool
	agents    bool
	// agentCalls is the length of the long agent session; only limits the run to the named phase.
	agentCalls int
	only       string
	// fixed measures the fixed cost on a history of checkpoints checkpoints; fixedOnly skips
	// every other phase.
	watch     bool
	prune     bool
	pruneOnly bool
	// sharedOnly measures only the shared-store rows; clones is how many clones the shared store
	// at scale is measured with.
	sharedOnly bool
	clones     int
	// placement measures where the history is kept (placement.go); placementOnly skips every
	// other phase.
	placement     bool
	placementOnly bool
	fixed         bool
	fixedOnly     bool
	checkpoints   int
	jsonOut       bool
	strict        bool
	keep          bool
	planBin       string
	workDir       string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&cfg.files, "files", 10000, "number of files in the generated workspace (~9 KB each on average)")
	fs.IntVar(&cfg.runs, "runs", 3, "repetitions of each measurement; the median is reported")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the generated workspace and changes")
	fs.Float64Var(&cfg.changePct, "change", 1, "percent of the files the incremental and rollback runs rewrite")
	fs.BoolVar(&cfg.real, "real", true, "also measure a real tree: a copy of `go env GOROOT`")
	fs.BoolVar(&cfg.shared, "shared", true, "also measure a shared store (S3 on MinIO, PostgreSQL) against the local default; needs the servers `make bench` starts")
	fs.BoolVar(&cfg.history, "history", true, "also measure the store of 12 releases of "+historyModule+" (downloads them with go mod download)")
	fs.BoolVar(&cfg.agents, "agents", true, "also measure an AI agent's tool call through plan hook, and a long session")
	fs.IntVar(&cfg.agentCalls, "agent-calls", 2000, "tool calls of the long agent session")
	fs.StringVar(&cfg.only, "only", "", "run only this phase: agents, or history (the x/net store against git's)")
	fs.BoolVar(&cfg.fixed, "fixed", true, "also measure the fixed cost (start-up, read-only commands, a no-change checkpoint's phases and durable writes) on a history of -checkpoints checkpoints")
	fs.BoolVar(&cfg.fixedOnly, "fixed-only", false, "measure the fixed cost only (on the generated workspace)")
	fs.IntVar(&cfg.checkpoints, "checkpoints", 500, "checkpoints in the history the fixed cost is measured on")
	fs.BoolVar(&cfg.watch, "watch", true, "also measure checkpoints and rollback while `plan watch` runs (Linux)")
	fs.BoolVar(&cfg.prune, "prune", true, "also measure the store after `checkpoint prune` + `gc` against a fresh store of the kept checkpoints (appended, rewritten, mixed)")
	fs.BoolVar(&cfg.pruneOnly, "prune-only", false, "measure only the prune rows")
	fs.BoolVar(&cfg.placement, "placement", true, "also measure the history's placement: in .plan/, in a data directory on the workspace's file system, on a tmpfs (/dev/shm), against .plan/")
	fs.BoolVar(&cfg.placementOnly, "placement-only", false, "measure only the placement rows (on -files files)")
	fs.BoolVar(&cfg.sharedOnly, "shared-only", false, "measure only the shared-store rows (needs the servers `make bench` starts)")
	fs.IntVar(&cfg.clones, "clones", 440, "clones in the store the shared store at scale is measured with")
	fs.BoolVar(&cfg.jsonOut, "json", false, "print the results as JSON on stdout (progress still goes to stderr)")
	fs.BoolVar(&cfg.strict, "strict", false, "exit 1 when a target is missed")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (workspaces, repos, binary) for inspection")
	fs.StringVar(&cfg.planBin, "plan", "", "benchmark this plan binary instead of building ./cmd/plan")
	fs.StringVar(&cfg.workDir, "workdir", os.TempDir(), "directory to create the temporary benchmark directory in")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: go run ./bench [flags]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	switch {
	case fs.NArg() > 0:
		err := fmt.Errorf("unexpected arguments: %q", fs.Args())
		fmt.Fprintln(stderr, "bench:", err)
		return cfg, err
	case cfg.only != "" && !agentsOnly(cfg.only) && !historyOnly(cfg.only):
		err := fmt.Errorf("-only: the phases that run alone are agents and history, not %q", cfg.only)
		fmt.Fprintln(stderr, "bench:", err)
		return cfg, err
	case cfg.files < 10 || cfg.runs < 1 || cfg.changePct <= 0 || cfg.changePct > 100 || cfg.checkpoints < 1 || cfg.clones < 1:
		err := errors.New("need -files >= 10, -runs >= 1, -checkpoints >= 1, -clones >= 1 and 0 < -change <= 100")
		fmt.Fprintln(stderr, "bench:", err)
		return cfg, err
	}
	return cfg, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	b := &bench{cfg: cfg, log: stderr}
	rep, err := b.execute(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	if cfg.jsonOut {
		err = rep.writeJSON(stdout)
	} else {
		err = rep.writeText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	if cfg.strict && rep.Failed > 0 {
		fmt.Fprintf(stderr, "bench: %d target(s) missed\n", rep.Failed)
		return 1
	}
	return 0
}

type bench struct {
	ctx     context.Context
	cfg     config
	log     io.Writer
	base    string // the temporary directory everything lives in
	r       *runner
	planBin string
	rep     *report
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "bench: "+format+"\n", args...)
}

// phase is one part of a run. They run in order; a disabled one is skipped whole.
type phase struct {
	name    string
	enabled bool
	fn      func() error
}

func (b *bench) execute(ctx context.Context) (rep *report, err error) {
	for _, tool := range []string{"git", "cp", "find"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("the baselines need %s on PATH: %w", tool, err)
		}
	}
	b.base, err = os.MkdirTemp(b.cfg.workDir, "plan-bench-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if b.cfg.keep {
			b.logf("kept %s", b.base)
			return
		}
		if rmErr := os.RemoveAll(b.base); rmErr != nil && err == nil {
			err = fmt.Errorf("clean up: %w", rmErr)
		}
	}()

	b.ctx = ctx
	// Whatever the bench runs outside a run directory of its own still gets a data directory of
	// the bench's (datadir.go).
	if b.r, err = b.runnerFor(b.base); err != nil {
		return nil, err
	}
	if b.planBin, err = b.planBinary(ctx); err != nil {
		return nil, err
	}
	b.rep = &report{Runs: b.cfg.runs, Seed: b.cfg.seed, GitVersion: b.gitVersion()}

	if b.cfg.sharedOnly {
		for _, ph := range []phase{{"shared store", true, b.shared}, {"shared store at scale", true, b.sharedScale}} {
			start := time.Now()
			if err := ph.fn(); err != nil {
				return nil, fmt.Errorf("%s: %w", ph.name, err)
			}
			b.logf("%s: done in %v", ph.name, time.Since(start).Round(time.Millisecond))
		}
		return b.rep, nil
	}
	if historyOnly(b.cfg.only) {
		start := time.Now()
		if err := b.history(); err != nil {
			return nil, fmt.Errorf("real history storage: %w", err)
		}
		b.logf("real history storage: done in %v", time.Since(start).Round(time.Millisecond))
		return b.rep, nil
	}
	if b.cfg.placementOnly {
		start := time.Now()
		if err := b.placement(); err != nil {
			return nil, fmt.Errorf("placement: %w", err)
		}
		b.logf("placement: done in %v", time.Since(start).Round(time.Millisecond))
		return b.rep, nil
	}
	if b.cfg.pruneOnly {
		start := time.Now()
		if err := b.prune(); err != nil {
			return nil, fmt.Errorf("prune + gc: %w", err)
		}
		b.logf("prune + gc: done in %v", time.Since(start).Round(time.Millisecond))
		return b.rep, nil
	}
	gen, err := b.generatedSubject()
	if err != nil {
		return nil, err
	}
	all := !agentsOnly(b.cfg.only) && !b.cfg.fixedOnly
	phases := []phase{
		{"generated workspace", all, func() error { return b.measure(gen, true) }},
		{"in-run checkpoint", all, func() error { return b.inRun(gen) }},
		{"agent hooks", (b.cfg.agents && all) || agentsOnly(b.cfg.only), func() error { return b.agents(gen) }},
		{"placement", b.cfg.placement && all, b.placement},
		{"watch service", b.cfg.watch && all, func() error { return b.watchService(gen) }},
		{"fixed cost", (b.cfg.fixed && all) || b.cfg.fixedOnly, func() error { return b.fixedCost(gen) }},
		{"after gc --aggressive", all, func() error { return b.repacked(gen) }},
		{"real tree", all && b.cfg.real, b.realTree},
		{"real history storage", all && b.cfg.history, b.history},
		{"shared store", all && b.cfg.shared, b.shared},
		{"shared store at scale", all && b.cfg.shared, b.sharedScale},
		{"prune + gc", b.cfg.prune && all, b.prune},
	}
	for _, ph := range phases {
		if !ph.enabled {
			b.logf("%s: skipped", ph.name)
			continue
		}
		start := time.Now()
		if err := ph.fn(); err != nil {
			return nil, fmt.Errorf("%s: %w", ph.name, err)
		}
		b.logf("%s: done in %v", ph.name, time.Since(start).Round(time.Millisecond))
	}
	return b.rep, nil
}

// generatedSubject lays out the generated workspace and writes it.
func (b *bench) generatedSubject() (*subject, error) {
	dir := filepath.Join(b.base, "generated")
	w := planWorkload(filepath.Join(dir, "ws"), b.cfg.files, b.cfg.seed)
	b.rep.Files, b.rep.Dirs, b.rep.Bytes = len(w.files), len(w.dirs), w.totalBytes()
	b.rep.ChangedFiles = b.changedCount(len(w.files))
	if err := checkSpace(b.base, b.rep.Bytes); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := w.write(b.ctx); err != nil {
		return nil, fmt.Errorf("generate workspace: %w", err)
	}
	syscall.Sync()
	b.logf("generated %d files in %d directories, %s, in %v", b.rep.Files, b.rep.Dirs,
		humanBytes(b.rep.Bytes), time.Since(start).Round(time.Millisecond))
	return b.newSubject(dir, "", "", w, b.rep.ChangedFiles)
}

// changedCount is how many of n files a change rewrites.
func (b *bench) changedCount(n int) int {
	return max(1, int(float64(n)*b.cfg.changePct/100+0.5))
}

// newSubject wires a workspace at dir/ws with its plan CLI (its data directory dir/data) and a
// shadow repository at dir/shadow.git.
func (b *bench) newSubject(dir, id, label string, files fileSet, changed int) (*subject, error) {
	r, err := b.runnerFor(dir)
	if err != nil {
		return nil, err
	}
	ws := filepath.Join(dir, "ws")
	return &subject{
		id: id, label: label, dir: dir, ws: ws, files: files, changed: changed,
		plan: &planCLI{r: r, bin: b.planBin, ws: ws},
		git:  &shadowGit{r: b.r, gitDir: filepath.Join(dir, "shadow.git"), ws: ws},
	}, nil
}

// planBinary builds ./cmd/plan (or takes -plan) and says clearly when there is nothing to build.
func (b *bench) planBinary(ctx context.Context) (string, error) {
	if b.cfg.planBin != "" {
		abs, err := filepath.Abs(b.cfg.planBin)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("-plan: %w", err)
		}
		return abs, nil
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", errors.New("run from inside the plan module (go run ./bench), or pass -plan PATH")
	}
	root := filepath.Dir(gomod)
	if _, err := os.Stat(filepath.Join(root, "cmd", "plan")); err != nil {
		return "", fmt.Errorf("there is no plan CLI to benchmark yet: %s does not exist (or pass -plan PATH)",
			filepath.Join(root, "cmd", "plan"))
	}
	bin := filepath.Join(b.base, "plan")
	b.logf("building ./cmd/plan")
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "urfave_cli_no_docs", "-o", bin, "./cmd/plan") // as make build
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("the plan CLI does not build (go build ./cmd/plan: %w):\n%s", err, out)
	}
	return bin, nil
}

func (b *bench) gitVersion() string {
	out, err := exec.Command("git", "--version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(strings.TrimPrefix(string(out), "git version"))
}

// checkSpace refuses to start when the disk cannot hold a workspace, a copy of it, the shadow
// repository and plan's store at once: a full disk half-way would waste the run.
func checkSpace(dir string, wsBytes int64) error {
	avail, ok := freeSpace(dir)
	if need := 3 * wsBytes; ok && avail < need {
		return fmt.Errorf("%s has %s free; this run needs about %s (use -workdir or fewer -files)",
			dir, humanBytes(avail), humanBytes(need))
	}
	return nil
}

// freeSpace is the space available to an unprivileged user under dir; ok is false when the
// file system cannot tell.
func freeSpace(dir string) (avail int64, ok bool) {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return 0, false
	}
	return blocksBytes(st.Bavail, st.Bsize), true
}

// blocksBytes multiplies a block count by a block size whatever integer types the platform's
// statfs uses for them (they differ between Linux, macOS and FreeBSD).
func blocksBytes[C, S ~int32 | ~uint32 | ~int64 | ~uint64](count C, size S) int64 {
	return int64(count) * int64(size) // #nosec G115 -- a free block count and a block size fit in int64
}
