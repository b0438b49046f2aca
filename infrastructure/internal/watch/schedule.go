package watch

import (
	"context"
	"fmt"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/tree"
)

// schedule takes the periodic and idle checkpoints until the service stops. Every tick, the
// tracker's newest event says whether the workspace is being worked on: a tick within
// activeWindow of a change counts as active time, and Every of it makes a periodic checkpoint;
// a change followed by Quiet without one makes an idle checkpoint. What changed before the
// service watched (first, the tree its first walk found, differs from the newest checkpoint's:
// work done while no service ran, or while its first walk went by, which no event reports)
// counts as a change made when the schedule starts.
func (s *Server) schedule(ctx context.Context, first tree.Hash) {
	t := time.NewTicker(scheduleTick)
	defer t.Stop()
	var active time.Duration
	var seen time.Time // the newest change the schedule has accounted for
	pending := false   // a change not yet followed by an idle checkpoint
	last := time.Now()
	if s.opts.Quiet > 0 && !first.IsZero() {
		if root, ok, err := s.opts.Newest(ctx); err == nil && (!ok || root != first) {
			seen, pending = last, true
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.stopc:
			return
		case now := <-t.C:
			if why := s.outlived(now); why != "" {
				s.stopBecause(why)
				return
			}
			s.mergeIfQuiet(ctx, now)
			step := now.Sub(last)
			last = now
			if lc, ok := s.snap.LastChange(); ok && lc.After(seen) {
				seen, pending = lc, true
			}
			if seen.IsZero() {
				continue
			}
			if now.Sub(seen) <= activeWindow {
				active += step
			}
			if s.opts.Every > 0 && active >= s.opts.Every {
				active = 0
				s.timed(ctx, checkpoint.Periodic, fmt.Sprintf("plan watch: every %s of active work", s.opts.Every))
			}
			if s.opts.Quiet > 0 && pending && now.Sub(seen) >= s.opts.Quiet {
				pending = false
				s.timed(ctx, checkpoint.Idle, fmt.Sprintf("plan watch: after %s without changes", s.opts.Quiet))
			}
		}
	}
}

// timed takes a periodic or idle checkpoint unless the workspace is what the newest checkpoint
// holds (compared under the workspace lock; the checkpoint takes it again).
func (s *Server) timed(ctx context.Context, typ checkpoint.Type, note string) {
	err := func() error {
		snap, err := s.lockedSnapshot(ctx)
		if err != nil {
			return err
		}
		root, ok, err := s.opts.Newest(ctx)
		if err != nil {
			return err
		}
		if ok && root == snap.Root {
			s.smu.Lock()
			s.status.Skipped++
			s.smu.Unlock()
			return nil
		}
		if err := s.opts.Checkpoint(ctx, typ, note); err != nil {
			return err
		}
		s.smu.Lock()
		s.status.Checkpoints++
		s.smu.Unlock()
		return nil
	}()
	s.smu.Lock()
	s.status.LastError = ""
	if err != nil {
		s.status.LastError = fmt.Sprintf("%s checkpoint: %v", typ, err)
	}
	s.smu.Unlock()
	if err != nil {
		s.log(fmt.Sprintf("%s checkpoint failed: %v", typ, err))
	}
}

// mergeQuiet is how long no command must have asked the service before it merges packs: a merge
// holds the workspace lock, and a command in the middle of a burst (an agent's pre and post hooks)
// would wait for it. mergeBusy is how many snapshots that stored something make it merge even
// without that quiet (a session with no pause between its calls still has its packs merged, a
// merge in every mergeBusy calls at most).
var (
	mergeQuiet       = 300 * time.Millisecond
	mergeBusy  int32 = 32
)

// mergeIfQuiet merges the store's small packs (Options.Merge) when a snapshot stored something
// since the last try and no command has asked for mergeQuiet, or mergeBusy of them did; a failure
// is logged and kept as the last error, and the next snapshot that stores something tries again.
func (s *Server) mergeIfQuiet(ctx context.Context, now time.Time) {
	stored := s.stored.Load()
	if s.opts.Merge == nil || stored == 0 ||
		stored < mergeBusy && now.Sub(time.Unix(0, s.lastUse.Load())) < mergeQuiet {
		return
	}
	s.stored.Add(-stored)
	n, err := s.opts.Merge(ctx)
	s.smu.Lock()
	s.status.Merged += n
	if err != nil {
		s.status.LastError = "merging small packs: " + err.Error()
	}
	s.smu.Unlock()
	if err != nil {
		s.log("merging the store's small packs failed (nothing was lost; the next command or snapshot tries again): " + err.Error())
	}
}
