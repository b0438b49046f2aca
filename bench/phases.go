package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/klauspost/compress/zstd"
)

// fileSet is the content of a workspace the benchmark changes and checks: the generated workload
// or a real tree.
type fileSet interface {
	// count is the number of regular files changes are picked from.
	count() int
	// entries is the number of files and symlinks a checkpoint of the set should report.
	entries() int64
	path(i int) string
	// pickChanges chooses count distinct files for round; the same round picks the same files.
	pickChanges(count int, round uint64) []int
	// rewrite changes files idx for generation gen. Applied to the same content, the same
	// generation writes the same bytes, so a change can be replayed after a rollback.
	rewrite(ctx context.Context, idx []int, gen uint64) error
}

// subject is one workspace under measurement with its two baselines' state: the shadow repository
// and the copy destination.
type subject struct {
	id      string // prefix of its rows' IDs: "" or "real_"
	label   string // prefix of its rows' names: "" or "real tree: "
	dir     string // holds ws, shadow.git and the cp -a destination
	ws      string
	files   fileSet
	changed int // files a change rewrites
	plan    *planCLI
	git     *shadowGit

	peakRSSKiB int64           // of the checkpoint processes
	lastID     string          // of the newest checkpoint
	noChange   []time.Duration // the no-change checkpoints' times, the in-run row's baseline
}

func (s *subject) row(id, name string) (string, string) { return s.id + id, s.label + name }

// measure runs the four comparisons on s, and the memory row when memory is set.
func (b *bench) measure(s *subject, memory bool) error {
	steps := []struct {
		name string
		fn   func(*subject) error
	}{
		{"first checkpoint", b.firstCheckpoint},
		{b.changeLabel(), b.incremental},
		{"no change", b.noChangeCheckpoint},
		{"rollback", b.rollback},
	}
	for _, st := range steps {
		start := time.Now()
		if err := st.fn(s); err != nil {
			return fmt.Errorf("%s%s: %w", s.label, st.name, err)
		}
		b.logf("%s%s: done in %v", s.label, st.name, time.Since(start).Round(time.Millisecond))
	}
	if memory {
		b.rep.add(b.memoryResult(s))
	}
	return nil
}

// checkpoint takes one of our checkpoints, timing it and tracking its memory.
func (s *subject) checkpoint() (time.Duration, checkpointView, error) {
	syscall.Sync()
	m, cp, err := s.plan.checkpoint()
	if err != nil {
		return 0, cp, fmt.Errorf("plan checkpoint create failed: %w", err)
	}
	s.peakRSSKiB = max(s.peakRSSKiB, m.maxRSSKiB)
	s.lastID = cp.ID
	return m.wall, cp, nil
}

func (s *subject) gitCommit() (time.Duration, error) {
	syscall.Sync()
	m, err := s.git.commit()
	return m.wall, err
}

func (s *subject) copyWorkspace(r *runner) (time.Duration, error) {
	syscall.Sync()
	dst := filepath.Join(s.dir, "copy")
	m, err := copyTree(r, s.ws, dst)
	if rmErr := os.RemoveAll(dst); err == nil {
		err = rmErr
	}
	return m.wall, err
}

// firstCheckpoint: a fresh .plan, a fresh history and a fresh shadow repository each run.
func (b *bench) firstCheckpoint(s *subject) error {
	var ours, git, cp []time.Duration
	for i := range b.cfg.runs {
		// The history too: init re-attaches a directory that lost only its .plan/.
		if err := removeWorkspaceState(b.base, s.ws); err != nil {
			return err
		}
		d, err := s.copyWorkspace(b.r)
		if err != nil {
			return err
		}
		cp = append(cp, d)

		if err := s.git.initRepo(); err != nil {
			return err
		}
		if d, err = s.gitCommit(); err != nil {
			return err
		}
		git = append(git, d)
		if i == 0 {
			if tracked, err := s.git.trackedFiles(); err != nil {
				return err
			} else if int64(tracked) != s.files.entries() {
				b.logf("warning: %sgit tracks %d files; the workspace has %d", s.label, tracked, s.files.entries())
			}
		}

		if err := s.plan.init(); err != nil {
			return fmt.Errorf("plan init failed: %w", err)
		}
		d, cpv, err := s.checkpoint()
		if err != nil {
			return err
		}
		ours = append(ours, d)
		if cpv.Files != s.files.entries() {
			b.logf("warning: %sthe checkpoint reports %d files; the workspace has %d", s.label, cpv.Files, s.files.entries())
		}
		b.logf("%sfirst checkpoint run %d: ours %v (%d files), git %v, cp %v", s.label, i+1, d.Round(time.Millisecond),
			cpv.Files, git[i].Round(time.Millisecond), cp[i].Round(time.Millisecond))
	}
	id, name := s.row("first_vs_git", "first checkpoint")
	b.rep.add(timeResult(id, name, ours, git, "git add -A && commit",
		fmt.Sprintf(">= %gx faster", firstSpeedup), func(o, g float64) bool { return g >= firstSpeedup*o }))
	id, name = s.row("first_vs_cp", "first checkpoint")
	b.rep.add(timeResult(id, name, ours, cp, "cp -a", "-", nil))
	return nil
}

// incremental: each run rewrites a different 1% of the files, then all three snapshot it.
func (b *bench) incremental(s *subject) error {
	var ours, git, cp []time.Duration
	id, name := s.row("stored_vs_zstd", "stored bytes, "+b.changeLabel())
	stored := result{ID: id, Name: name, Unit: "bytes", BaselineName: "zstd fastest of changed files",
		Target: fmt.Sprintf("<= %gx zstd + %d KiB", storedZstdFactor, storedSlack>>10), Status: statusPass}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	defer enc.Close()
	worstExcess := 0.0
	for i := range b.cfg.runs {
		gen := uint64(100 + i)
		idx := s.files.pickChanges(s.changed, gen)
		if err := s.files.rewrite(b.ctx, idx, gen); err != nil {
			return err
		}
		zbytes, err := zstdSize(enc, s.files, idx)
		if err != nil {
			return err
		}

		d, cpv, err := s.checkpoint()
		if err != nil {
			return err
		}
		ours = append(ours, d)
		dg, err := s.gitCommit()
		if err != nil {
			return err
		}
		git = append(git, dg)
		dc, err := s.copyWorkspace(b.r)
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
		b.logf("%s%s run %d: ours %v (stored %s, zstd %s), git %v, cp %v", s.label, b.changeLabel(), i+1, d.Round(time.Millisecond),
			humanBytes(cpv.StoredBytes), humanBytes(zbytes), dg.Round(time.Millisecond), dc.Round(time.Millisecond))
	}
	id, name = s.row("change_vs_git", "checkpoint, "+b.changeLabel())
	b.rep.add(timeResult(id, name, ours, git, "git add -A && commit",
		fmt.Sprintf(">= %gx faster", incrementalSpeedup), func(o, g float64) bool { return g >= incrementalSpeedup*o }))
	id, name = s.row("change_vs_cp", "checkpoint, "+b.changeLabel())
	b.rep.add(timeResult(id, name, ours, cp, "cp -a", "-", nil))
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
func zstdSize(enc *zstd.Encoder, w fileSet, idx []int) (int64, error) {
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

// noChangeCheckpoint: checkpoints of an unchanged workspace against the stat walk every checkpoint
// needs, and against what git does to find out nothing changed since its commit.
func (b *bench) noChangeCheckpoint(s *subject) error {
	var ours, walk, status []time.Duration
	var notes []string
	for i := range b.cfg.runs {
		d, _, err := s.checkpoint()
		if err != nil {
			return err
		}
		ours = append(ours, d)
		syscall.Sync()
		m, err := walkTree(b.r, s.ws)
		if err != nil {
			return err
		}
		walk = append(walk, m.wall)
		syscall.Sync()
		st, err := s.git.status()
		if err != nil {
			return err
		}
		status = append(status, st.wall)
		if len(bytes.TrimSpace(st.stdout)) > 0 {
			// The shadow repository committed this very tree: anything listed means the baseline is
			// not measuring what it claims.
			notes = append(notes, fmt.Sprintf("run %d: git status listed changes: %.200q", i+1, st.stdout))
		}
		b.logf("%sno change run %d: ours %v, find %v, git status %v", s.label, i+1, d.Round(time.Millisecond),
			m.wall.Round(time.Millisecond), st.wall.Round(time.Millisecond))
	}
	s.noChange = ours
	id, name := s.row("nochange_vs_find", "checkpoint, no change")
	b.rep.add(timeResult(id, name, ours, walk, "find -printf (stat walk)",
		fmt.Sprintf("<= %gx find", noChangeWalkFactor), func(o, f float64) bool { return o <= noChangeWalkFactor*f }))
	id, name = s.row("nochange_vs_git_status", "checkpoint, no change")
	res := timeResult(id, name, ours, status, "git status --porcelain",
		fmt.Sprintf("<= %gx git status", noChangeGitFactor), func(o, g float64) bool { return o <= noChangeGitFactor*g })
	if len(notes) > 0 {
		res.Status, res.Note = statusFail, strings.Join(notes, "; ")
	}
	b.rep.add(res)
	return nil
}

// rollback: the same 1% change is made twice, undone once by plan and once by git. Both must bring
// back the exact bytes, or the row fails whatever the time. plan's time includes the pre_rollback
// safety checkpoint it always takes.
func (b *bench) rollback(s *subject) error {
	// Both roll back to the state of the last no-change checkpoint, which is also the shadow
	// repository's HEAD: both tools snapshotted the same tree in the 1% phase.
	last := s.lastID
	if last == "" {
		return errors.New("no checkpoint id to roll back to: checkpoint create printed an empty id")
	}
	ours, git, supported, notes, err := b.rollbackRuns(s, last, 200, s.label)
	if err != nil {
		return err
	}
	id, name := s.row("rollback_vs_git", "rollback, "+b.changeLabel())
	res := timeResult(id, name, ours, git, "git reset --hard",
		fmt.Sprintf("<= %gx git reset", rollbackGitFactor), func(o, g float64) bool { return o <= rollbackGitFactor*g })
	if len(notes) > 0 {
		res.Note = strings.Join(notes, "; ")
		if supported {
			res.Status = statusFail // restored the wrong bytes
		}
	} else {
		res.Note = "ours includes the pre_rollback safety checkpoint plan always takes"
	}
	b.rep.add(res)
	return nil
}

// rollbackRuns times -runs rollbacks of a fresh change to checkpoint last, by plan and by
// `git reset --hard` (the same change made again for git), each checked byte for byte: plan's
// wrong bytes are notes (the row fails), git's a broken harness. supported is false when plan has
// no usable rollback command (git is still timed). gen0 seeds the changes; label prefixes the log.
func (b *bench) rollbackRuns(s *subject, last string, gen0 uint64, label string) (ours, git []time.Duration, supported bool, notes []string, err error) {
	supported = true
	for i := range b.cfg.runs {
		gen := gen0 + uint64(i) // #nosec G115 -- small i
		idx := s.files.pickChanges(s.changed, gen)
		want, err := hashFiles(s.files, idx)
		if err != nil {
			return nil, nil, false, nil, err
		}
		if err := s.files.rewrite(b.ctx, idx, gen); err != nil {
			return nil, nil, false, nil, err
		}
		if supported {
			syscall.Sync()
			m, err := s.plan.rollback(last)
			switch {
			case errors.Is(err, errUnsupported):
				supported = false
				notes = append(notes, "plan has no usable rollback command yet: "+err.Error())
			case err != nil:
				return nil, nil, false, nil, fmt.Errorf("plan rollback failed: %w", err)
			default:
				ours = append(ours, m.wall)
				if bad, err := differing(s.files, idx, want); err != nil {
					return nil, nil, false, nil, err
				} else if bad > 0 {
					notes = append(notes, fmt.Sprintf("run %d: plan rollback left %d of %d changed files wrong", i+1, bad, len(idx)))
				}
				// The same change again, for git to undo.
				if err := s.files.rewrite(b.ctx, idx, gen); err != nil {
					return nil, nil, false, nil, err
				}
			}
		}
		syscall.Sync()
		m, err := s.git.resetHard()
		if err != nil {
			return nil, nil, false, nil, err
		}
		git = append(git, m.wall)
		if bad, err := differing(s.files, idx, want); err != nil {
			return nil, nil, false, nil, err
		} else if bad > 0 {
			return nil, nil, false, nil, fmt.Errorf("git reset --hard left %d files wrong: the harness is broken", bad)
		}
		b.logf("%srollback run %d: ours %s, git reset --hard %v", label, i+1, durText(ours, i), m.wall.Round(time.Millisecond))
	}
	return ours, git, supported, notes, nil
}

func durText(ds []time.Duration, i int) string {
	if i >= len(ds) {
		return "n/a"
	}
	return ds[i].Round(time.Millisecond).String()
}

func hashFiles(w fileSet, idx []int) ([][sha256.Size]byte, error) {
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
func differing(w fileSet, idx []int, want [][sha256.Size]byte) (int, error) {
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

func (b *bench) memoryResult(s *subject) result {
	peakMB := float64(s.peakRSSKiB) * 1024 / 1e6
	id, name := s.row("peak_rss", "peak RSS, checkpoint")
	res := result{
		ID: id, Name: name, Unit: "MB", Ours: peakMB,
		Target: fmt.Sprintf("< %d MB at %dk files", peakRSSLimitMB, peakRSSAtFiles/1000),
	}
	switch {
	case s.peakRSSKiB == 0:
		res.Status = statusNA
	case s.files.count() < peakRSSAtFiles:
		res.Status = statusInfo
		res.Note = fmt.Sprintf("the memory target applies to -files=%d", peakRSSAtFiles)
	case peakMB < peakRSSLimitMB:
		res.Status = statusPass
	default:
		res.Status = statusFail
	}
	return res
}
