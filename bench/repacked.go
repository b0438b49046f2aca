package main

import (
	"fmt"
	"syscall"
	"time"
)

// repacked measures a no-change checkpoint (walking, as without `plan watch`) once `plan gc
// --aggressive` has put every live object into one pack, against the same `find -printf` baseline
// as the no-change row: a store after a repack holds one large idx in which most records are
// deltas (bundled files count as such), and a lookup's cost must not grow with that idx (it did:
// each delta's base was found by counting every entry before it, 10x the time at 10,000 files).
// It runs last on the generated workspace: it changes how the store is packed.
func (b *bench) repacked(s *subject) error {
	if _, err := s.plan.r.run(s.ws, nil, s.plan.bin, "-C", s.ws, "gc", "--aggressive", "--grace", "0s"); err != nil {
		return fmt.Errorf("plan gc --aggressive: %w", err)
	}
	var ours, walk []time.Duration
	for i := range b.cfg.runs {
		syscall.Sync()
		m, err := s.plan.r.run(s.ws, []string{"PLAN_WATCH=0"}, s.plan.bin, "-C", s.ws, "--json", "checkpoint", "create", "--note", "bench repacked")
		if err != nil {
			return fmt.Errorf("a checkpoint after gc --aggressive: %w", err)
		}
		ours = append(ours, m.wall)
		syscall.Sync()
		w, err := walkTree(b.r, s.ws)
		if err != nil {
			return err
		}
		walk = append(walk, w.wall)
		b.logf("after gc --aggressive: no change run %d: ours %v, find %v", i+1, m.wall.Round(time.Millisecond), w.wall.Round(time.Millisecond))
	}
	res := timeResult("repacked_nochange_vs_find", "after gc --aggressive: checkpoint, no change", ours, walk, "find -printf (stat walk)",
		fmt.Sprintf("<= %gx find", noChangeWalkFactor), func(o, f float64) bool { return o <= noChangeWalkFactor*f })
	res.Note = "every live object repacked into one pack (most of its records deltas or bundled files); walking (PLAN_WATCH=0)"
	b.rep.add(res)
	return nil
}
