// Command bench measures plan's checkpoints and rollback against what users otherwise reach for:
// a shadow git repository beside the workspace, and a full copy.
//
// It builds ./cmd/plan, generates a workspace of -files files (~9 KB each on average: many small
// source files, some mid-sized, a few large ones, 3 directory levels deep), and times, as the median
// of -runs repetitions:
//
//   - the first checkpoint          vs `git add -A && git commit` into a fresh repo, and `cp -a`;
//   - a checkpoint after 1% change  vs the same two;
//   - a checkpoint with no change   vs a bare `find -printf` stat walk;
//   - a rollback of a 1% change     vs `git reset --hard`;
//
// and reports the bytes the incremental checkpoint stored against zstd of the changed files, and
// the peak RSS of the checkpoint processes. Each row has a target; -strict makes a missed target a
// non-zero exit. Run it from the module root: `go run ./bench -files=100000 -strict`, or
// `make bench BENCH_FLAGS=...`.
package main

import (
	"context"
	"crypto/sha256"
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

	"github.com/klauspost/compress/zstd"
)

// Targets (see the issue that introduced this harness).
const (
	firstSpeedup       = 3.0 // first checkpoint at least this many times faster than shadow git
	incrementalSpeedup = 5.0 // 1% change checkpoint likewise
	noChangeWalkFactor = 2.0 // a no-change checkpoint within this factor of a bare stat walk
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
	jsonOut   bool
	strict    bool
	keep      bool
	planBin   string
	workDir   string
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
	fs.BoolVar(&cfg.jsonOut, "json", false, "print the results as JSON on stdout (progress still goes to stderr)")
	fs.BoolVar(&cfg.strict, "strict", false, "exit 1 when a target is missed")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the temporary directory (workspace, repos, binary) for inspection")
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
	case cfg.files < 10 || cfg.runs < 1 || cfg.changePct <= 0 || cfg.changePct > 100:
		err := errors.New("need -files >= 10, -runs >= 1 and 0 < -change <= 100")
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
	ctx  context.Context
	cfg  config
	log  io.Writer
	base string // the temporary directory everything lives in
	ws   string
	w    *workload
	r    *runner
	plan *planCLI
	git  *shadowGit
	rep  *report

	peakRSSKiB int64  // of the checkpoint processes
	lastID     string // of the newest checkpoint
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "bench: "+format+"\n", args...)
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
	b.r = &runner{ctx: ctx}
	bin, err := b.planBinary(ctx)
	if err != nil {
		return nil, err
	}
	b.ws = filepath.Join(b.base, "ws")
	b.plan = &planCLI{r: b.r, bin: bin, ws: b.ws}
	b.git = &shadowGit{r: b.r, gitDir: filepath.Join(b.base, "shadow.git"), ws: b.ws}
	b.w = planWorkload(b.ws, b.cfg.files, b.cfg.seed)
	b.rep = &report{
		Files: len(b.w.files), Dirs: len(b.w.dirs), Bytes: b.w.totalBytes(), Runs: b.cfg.runs,
		Seed: b.cfg.seed, GitVersion: b.gitVersion(),
		ChangedFiles: max(1, int(float64(b.cfg.files)*b.cfg.changePct/100+0.5)),
	}
	if err := checkSpace(b.base, b.rep.Bytes); err != nil {
		return nil, err
	}

	start := time.Now()
	if err := b.w.write(ctx); err != nil {
		return nil, fmt.Errorf("generate workspace: %w", err)
	}
	syscall.Sync()
	b.logf("generated %d files in %d directories, %s, in %v", b.rep.Files, b.rep.Dirs,
		humanBytes(b.rep.Bytes), time.Since(start).Round(time.Millisecond))

	phases := []struct {
		name string
		fn   func() error
	}{
		{"first checkpoint", b.firstCheckpoint},
		{b.changeLabel(), b.incremental},
		{"no change", b.noChange},
		{"rollback", b.rollback},
	}
	for _, ph := range phases {
		start := time.Now()
		if err := ph.fn(); err != nil {
			return nil, fmt.Errorf("%s: %w", ph.name, err)
		}
		b.logf("%s: done in %v", ph.name, time.Since(start).Round(time.Millisecond))
	}
	b.rep.add(b.memoryResult())
	return b.rep, nil
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
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/plan")
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

// checkSpace refuses to start when the disk cannot hold the workspace, a copy of it, the shadow
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

// checkpoint takes one of our checkpoints, timing it and tracking its memory.
func (b *bench) checkpoint() (time.Duration, checkpointView, error) {
	syscall.Sync()
	m, cp, err := b.plan.checkpoint()
	if err != nil {
		return 0, cp, fmt.Errorf("plan checkpoint create failed: %w", err)
	}
	b.peakRSSKiB = max(b.peakRSSKiB, m.maxRSSKiB)
	b.lastID = cp.ID
	return m.wall, cp, nil
}

func (b *bench) gitCommit() (time.Duration, error) {
	syscall.Sync()
	m, err := b.git.commit()
	return m.wall, err
}

func (b *bench) copyWorkspace() (time.Duration, error) {
	syscall.Sync()
	dst := filepath.Join(b.base, "copy")
	m, err := copyTree(b.r, b.ws, dst)
	if rmErr := os.RemoveAll(dst); err == nil {
		err = rmErr
	}
	return m.wall, err
}

// firstCheckpoint: a fresh .plan and a fresh shadow repository each run.
func (b *bench) firstCheckpoint() error {
	var ours, git, cp []time.Duration
	for i := range b.cfg.runs {
		if err := os.RemoveAll(filepath.Join(b.ws, ".plan")); err != nil {
			return err
		}
		d, err := b.copyWorkspace()
		if err != nil {
			return err
		}
		cp = append(cp, d)

		if err := b.git.initRepo(); err != nil {
			return err
		}
		if d, err = b.gitCommit(); err != nil {
			return err
		}
		git = append(git, d)

		if err := b.plan.init(); err != nil {
			return fmt.Errorf("plan init failed: %w", err)
		}
		d, cpv, err := b.checkpoint()
		if err != nil {
			return err
		}
		ours = append(ours, d)
		if cpv.Files != int64(len(b.w.files)) {
			b.logf("warning: the checkpoint reports %d files; the workspace has %d", cpv.Files, len(b.w.files))
		}
		b.logf("first checkpoint run %d: ours %v (%d files), git %v, cp %v", i+1, d.Round(time.Millisecond),
			cpv.Files, git[i].Round(time.Millisecond), cp[i].Round(time.Millisecond))
	}
	b.rep.add(timeResult("first_vs_git", "first checkpoint", ours, git, "git add -A && commit",
		fmt.Sprintf(">= %gx faster", firstSpeedup), func(o, g float64) bool { return g >= firstSpeedup*o }))
	b.rep.add(timeResult("first_vs_cp", "first checkpoint", ours, cp, "cp -a", "-", nil))
	return nil
}

// incremental: each run rewrites a different 1% of the files, then all three snapshot it.
func (b *bench) incremental() error {
	var ours, git, cp []time.Duration
	stored := result{ID: "stored_vs_zstd", Name: "stored bytes, " + b.changeLabel(), Unit: "bytes", BaselineName: "zstd fastest of changed files",
		Target: fmt.Sprintf("<= %gx zstd + %d KiB", storedZstdFactor, storedSlack>>10), Status: statusPass}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	defer enc.Close()
	worstExcess := 0.0
	for i := range b.cfg.runs {
		gen := uint64(100 + i)
		idx := b.w.pickChanges(b.rep.ChangedFiles, gen)
		if err := b.w.rewrite(b.ctx, idx, gen); err != nil {
			return err
		}
		zbytes, err := zstdSize(enc, b.w, idx)
		if err != nil {
			return err
		}

		d, cpv, err := b.checkpoint()
		if err != nil {
			return err
		}
		ours = append(ours, d)
		dg, err := b.gitCommit()
		if err != nil {
			return err
		}
		git = append(git, dg)
		dc, err := b.copyWorkspace()
		if err != nil {
			return err
		}
		cp = append(cp, dc)

		stored.OursSamples = append(stored.OursSamples, float64(cpv.StoredBytes))
		stored.BaselineSamples = append(stored.BaselineSamples, float64(zbytes))
		limit := storedZstdFactor*float64(zbytes) + storedSlack
		if excess := float64(cpv.StoredBytes) / limit; excess > worstExcess || i == 0 {
			worstExcess = excess
			stored.Ours, stored.Baseline = float64(cpv.StoredBytes), float64(zbytes)
		}
		if float64(cpv.StoredBytes) > limit {
			stored.Status = statusFail
		}
		b.logf("%s run %d: ours %v (stored %s, zstd %s), git %v, cp %v", b.changeLabel(), i+1, d.Round(time.Millisecond),
			humanBytes(cpv.StoredBytes), humanBytes(zbytes), dg.Round(time.Millisecond), dc.Round(time.Millisecond))
	}
	b.rep.add(timeResult("change_vs_git", "checkpoint, "+b.changeLabel(), ours, git, "git add -A && commit",
		fmt.Sprintf(">= %gx faster", incrementalSpeedup), func(o, g float64) bool { return g >= incrementalSpeedup*o }))
	b.rep.add(timeResult("change_vs_cp", "checkpoint, "+b.changeLabel(), ours, cp, "cp -a", "-", nil))
	if stored.Baseline > 0 && stored.Ours > 0 {
		stored.Ratio = stored.Baseline / stored.Ours
	}
	if stored.Ours == 0 {
		stored.Note = "the checkpoint reported stored_bytes 0 (field missing?)"
	}
	if b.cfg.runs > 1 {
		stored.Note = strings.TrimPrefix(stored.Note+"; worst of the runs shown", "; ")
	}
	b.rep.add(stored)
	return nil
}

// changeLabel names the incremental change, "1% change" by default.
func (b *bench) changeLabel() string {
	return fmt.Sprintf("%g%% change", b.cfg.changePct)
}

// zstdSize is the sum of each file's size compressed with zstd at its fastest level.
func zstdSize(enc *zstd.Encoder, w *workload, idx []int) (int64, error) {
	var total int64
	var buf []byte
	for _, i := range idx {
		data, err := os.ReadFile(w.path(i))
		if err != nil {
			return 0, err
		}
		buf = enc.EncodeAll(data, buf[:0])
		total += int64(len(buf))
	}
	return total, nil
}

// noChange: checkpoints of an unchanged workspace against the stat walk every checkpoint needs.
func (b *bench) noChange() error {
	var ours, walk []time.Duration
	for i := range b.cfg.runs {
		d, _, err := b.checkpoint()
		if err != nil {
			return err
		}
		ours = append(ours, d)
		syscall.Sync()
		m, err := walkTree(b.r, b.ws)
		if err != nil {
			return err
		}
		walk = append(walk, m.wall)
		b.logf("no change run %d: ours %v, find %v", i+1, d.Round(time.Millisecond), m.wall.Round(time.Millisecond))
	}
	b.rep.add(timeResult("nochange_vs_find", "checkpoint, no change", ours, walk, "find -printf (stat walk)",
		fmt.Sprintf("<= %gx find", noChangeWalkFactor), func(o, f float64) bool { return o <= noChangeWalkFactor*f }))
	return nil
}

// rollback: the same 1% change is made twice, undone once by plan and once by git. Both must bring
// back the exact bytes, or the row fails whatever the time.
func (b *bench) rollback() error {
	// Both roll back to the state of the last no-change checkpoint, which is also the shadow
	// repository's HEAD: both tools snapshotted the same tree in the 1% phase.
	last := b.lastID
	if last == "" {
		return errors.New("no checkpoint id to roll back to: checkpoint create printed an empty id")
	}
	var ours, git []time.Duration
	supported := true
	var notes []string
	for i := range b.cfg.runs {
		gen := uint64(200 + i)
		idx := b.w.pickChanges(b.rep.ChangedFiles, gen)
		want, err := hashFiles(b.w, idx)
		if err != nil {
			return err
		}
		if err := b.w.rewrite(b.ctx, idx, gen); err != nil {
			return err
		}
		if supported {
			syscall.Sync()
			m, err := b.plan.rollback(last)
			switch {
			case errors.Is(err, errUnsupported):
				supported = false
				notes = append(notes, "plan has no usable rollback command yet: "+err.Error())
			case err != nil:
				return fmt.Errorf("plan rollback failed: %w", err)
			default:
				ours = append(ours, m.wall)
				if bad, err := differing(b.w, idx, want); err != nil {
					return err
				} else if bad > 0 {
					notes = append(notes, fmt.Sprintf("run %d: plan rollback left %d of %d changed files wrong", i+1, bad, len(idx)))
				}
				// The same change again, for git to undo.
				if err := b.w.rewrite(b.ctx, idx, gen); err != nil {
					return err
				}
			}
		}
		syscall.Sync()
		m, err := b.git.resetHard()
		if err != nil {
			return err
		}
		git = append(git, m.wall)
		if bad, err := differing(b.w, idx, want); err != nil {
			return err
		} else if bad > 0 {
			return fmt.Errorf("git reset --hard left %d files wrong: the harness is broken", bad)
		}
		b.logf("rollback run %d: ours %s, git reset --hard %v", i+1, durText(ours, i), m.wall.Round(time.Millisecond))
	}
	res := timeResult("rollback_vs_git", "rollback, "+b.changeLabel(), ours, git, "git reset --hard", "<= git reset",
		func(o, g float64) bool { return o <= g })
	if len(notes) > 0 {
		res.Note = strings.Join(notes, "; ")
		if supported {
			res.Status = statusFail // restored the wrong bytes
		}
	}
	b.rep.add(res)
	return nil
}

func durText(ds []time.Duration, i int) string {
	if i >= len(ds) {
		return "n/a"
	}
	return ds[i].Round(time.Millisecond).String()
}

func hashFiles(w *workload, idx []int) ([][sha256.Size]byte, error) {
	sums := make([][sha256.Size]byte, len(idx))
	for k, i := range idx {
		data, err := os.ReadFile(w.path(i))
		if err != nil {
			return nil, err
		}
		sums[k] = sha256.Sum256(data)
	}
	return sums, nil
}

// differing counts files of idx whose content is not want (a missing file counts).
func differing(w *workload, idx []int, want [][sha256.Size]byte) (int, error) {
	bad := 0
	for k, i := range idx {
		data, err := os.ReadFile(w.path(i))
		if errors.Is(err, os.ErrNotExist) {
			bad++
			continue
		}
		if err != nil {
			return 0, err
		}
		if sha256.Sum256(data) != want[k] {
			bad++
		}
	}
	return bad, nil
}

func (b *bench) memoryResult() result {
	peakMB := float64(b.peakRSSKiB) * 1024 / 1e6
	res := result{
		ID: "peak_rss", Name: "peak RSS, checkpoint", Unit: "MB", Ours: peakMB,
		Target: fmt.Sprintf("< %d MB at %dk files", peakRSSLimitMB, peakRSSAtFiles/1000),
	}
	switch {
	case b.peakRSSKiB == 0:
		res.Status = statusNA
	case b.cfg.files < peakRSSAtFiles:
		res.Status = statusInfo
		res.Note = fmt.Sprintf("the memory target applies to -files=%d", peakRSSAtFiles)
	case peakMB < peakRSSLimitMB:
		res.Status = statusPass
	default:
		res.Status = statusFail
	}
	return res
}
