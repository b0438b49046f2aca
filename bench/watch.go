package main

import (
	"fmt"
	"syscall"
	"time"
)

// Targets of the watch service (issue 24).
const (
	watchWalkFactor   = 0.1 // a no-change checkpoint through the service within this fraction of a walk
	watchGitFactor    = 1.0 // ... and of `git status`
	watchChangeFactor = 5.0 // a 1% change checkpoint through the service this many times faster than git
)

// watchService measures checkpoints from new processes while `plan watch` runs in the workspace:
// a no-change checkpoint against plan's own full walk (the same checkpoint with PLAN_WATCH=0, so
// it walks) and `git status` (no fsmonitor), a 1% change checkpoint against `git add -A && git
// commit`, and a rollback of a 1% change against `git reset --hard`. Every baseline is measured
// in the same run, interleaved with ours.
func (b *bench) watchService(s *subject) error {
	if _, err := s.plan.r.run(s.ws, nil, s.plan.bin, "-C", s.ws, "--json", "watch", "--daemon"); err != nil {
		return fmt.Errorf("plan watch --daemon: %w", err)
	}
	defer func() {
		if _, err := s.plan.r.run(s.ws, nil, s.plan.bin, "-C", s.ws, "watch", "stop"); err != nil {
			b.logf("warning: plan watch stop: %v", err)
		}
	}()
	// The tree both tools hold from here on: the service's first snapshot, and git's commit.
	if _, _, err := s.checkpoint(); err != nil {
		return err
	}
	if _, err := s.gitCommit(); err != nil {
		return err
	}
	var ours, walk, status, oursSnap, walkSnap []time.Duration
	for i := range b.cfg.runs {
		d, cpv, err := s.checkpoint()
		if err != nil {
			return err
		}
		ours = append(ours, d)
		oursSnap = append(oursSnap, time.Duration(cpv.DurationMS*float64(time.Millisecond)))
		syscall.Sync()
		m, err := s.plan.r.run(s.ws, []string{"PLAN_WATCH=0"}, s.plan.bin, "-C", s.ws, "--json", "checkpoint", "create", "--note", "bench walk")
		if err != nil {
			return fmt.Errorf("a walking checkpoint: %w", err)
		}
		walk = append(walk, m.wall)
		wv, err := decodeCheckpoint(m.stdout)
		if err != nil {
			return err
		}
		walkSnap = append(walkSnap, time.Duration(wv.DurationMS*float64(time.Millisecond)))
		syscall.Sync()
		st, err := s.git.status()
		if err != nil {
			return err
		}
		status = append(status, st.wall)
		b.logf("watch: no change run %d: ours %v, walk %v, git status %v", i+1, d.Round(time.Millisecond),
			m.wall.Round(time.Millisecond), st.wall.Round(time.Millisecond))
	}
	b.rep.add(timeResult("watch_nochange_vs_walk", "plan watch: checkpoint, no change", ours, walk, "checkpoint walking (PLAN_WATCH=0)",
		fmt.Sprintf("<= %gx walk", watchWalkFactor), func(o, w float64) bool { return o <= watchWalkFactor*w }))
	snapRow := timeResult("watch_nochange_snapshot_vs_walk", "plan watch: snapshot, no change", oursSnap, walkSnap, "snapshot walking (PLAN_WATCH=0)",
		fmt.Sprintf("<= %gx walk", watchWalkFactor), func(o, w float64) bool { return o <= watchWalkFactor*w })
	snapRow.Note = "duration_ms of both checkpoints: the snapshot alone, without process start, database, lock or the row's write"
	b.rep.add(snapRow)
	b.rep.add(timeResult("watch_nochange_vs_git_status", "plan watch: checkpoint, no change", ours, status, "git status --porcelain",
		fmt.Sprintf("<= %gx git status", watchGitFactor), func(o, g float64) bool { return o <= watchGitFactor*g }))

	var change, changeSnap, commit []time.Duration
	for i := range b.cfg.runs {
		gen := uint64(500 + i)
		if err := s.files.rewrite(b.ctx, s.files.pickChanges(s.changed, gen), gen); err != nil {
			return err
		}
		d, cpv, err := s.checkpoint()
		if err != nil {
			return err
		}
		change = append(change, d)
		changeSnap = append(changeSnap, time.Duration(cpv.DurationMS*float64(time.Millisecond)))
		dg, err := s.gitCommit()
		if err != nil {
			return err
		}
		commit = append(commit, dg)
		b.logf("watch: %s run %d: ours %v (stored %s), git %v", b.changeLabel(), i+1, d.Round(time.Millisecond),
			humanBytes(cpv.StoredBytes), dg.Round(time.Millisecond))
	}
	b.rep.add(timeResult("watch_change_vs_git", "plan watch: checkpoint, "+b.changeLabel(), change, commit, "git add -A && commit",
		fmt.Sprintf(">= %gx faster", watchChangeFactor), func(o, g float64) bool { return g >= watchChangeFactor*o }))
	changeSnapRow := timeResult("watch_change_snapshot_vs_git", "plan watch: snapshot, "+b.changeLabel(), changeSnap, commit,
		"git add -A && commit", "", nil)
	changeSnapRow.Note = "duration_ms of the checkpoints above: what the service's snapshot (reading, hashing, storing what changed) and the command's store refresh cost, without process start, database, lock or the row's write"
	b.rep.add(changeSnapRow)

	// Rollback: both go back to the tree both last recorded.
	last := s.lastID
	back, reset, _, notes, err := b.rollbackRuns(s, last, 600, "watch: ")
	if err != nil {
		return err
	}
	res := timeResult("watch_rollback_vs_git", "plan watch: rollback, "+b.changeLabel(), back, reset, "git reset --hard",
		fmt.Sprintf("<= %gx git reset", rollbackGitFactor), func(o, g float64) bool { return o <= rollbackGitFactor*g })
	res.Note = "ours includes the pre_rollback safety checkpoint, taken through the service"
	if len(notes) > 0 {
		res.Status, res.Note = statusFail, fmt.Sprint(notes)
	}
	b.rep.add(res)
	return nil
}
