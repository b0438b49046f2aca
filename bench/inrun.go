package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// inRun times the pre_decision checkpoints inside one `plan run` whose decisions each change 1% of
// the files, as plan records them (duration_ms in `checkpoint list`), against a no-change
// checkpoint from a fresh process: a checkpoint in a running process could know what changed
// without walking the tree again. The run's first checkpoint is left out: nothing ran before it.
//
// A second run of the same shape with --no-checkpoints gives what checkpointing costs a decision in
// all (the pre_decision checkpoint, and the snapshot plan takes after a decision to record its
// artifacts), shown for information.
func (b *bench) inRun(s *subject) error {
	w, ok := s.files.(*workload)
	if !ok {
		return errors.New("the in-run phase needs the generated workload")
	}
	if len(s.noChange) == 0 {
		return errors.New("no no-change checkpoint time to compare with")
	}
	stageRoot := filepath.Join(s.dir, "stage")
	changing := b.cfg.runs
	planFile := func(name string, genBase uint64) (string, error) {
		var cmds []string
		for k := range changing {
			gen := genBase + uint64(k) // #nosec G115 -- k is a small non-negative count
			dir := filepath.Join(stageRoot, fmt.Sprintf("%s-%d", name, k))
			if err := stageChange(b.ctx, w, w.pickChanges(s.changed, gen), gen, dir); err != nil {
				return "", err
			}
			cmds = append(cmds, "cp -R "+shellQuote(dir+"/.")+" .")
		}
		path := filepath.Join(stageRoot, name+".yaml")
		return path, os.WriteFile(path, planFileText(name, cmds), 0o600)
	}
	withFile, err := planFile("bench-inrun", 300)
	if err != nil {
		return err
	}
	withoutFile, err := planFile("bench-inrun-nocp", 400)
	if err != nil {
		return err
	}

	syscall.Sync()
	with, v, err := s.plan.runPlan(withFile)
	if err != nil {
		return fmt.Errorf("plan run failed: %w", err)
	}
	if err := allSucceeded(v, changing+1, true); err != nil {
		return err
	}
	syscall.Sync()
	without, vn, err := s.plan.runPlan(withoutFile, "--no-checkpoints")
	if err != nil {
		return fmt.Errorf("plan run --no-checkpoints failed: %w", err)
	}
	if err := allSucceeded(vn, changing+1, false); err != nil {
		return err
	}

	cps, err := s.plan.list()
	if err != nil {
		return fmt.Errorf("plan checkpoint list failed: %w", err)
	}
	ours, stored, err := inRunSamples(v, cps)
	if err != nil {
		return err
	}
	b.logf("in-run: %d checkpoints after a %s decision: %v (duration_ms); plan run %v, with --no-checkpoints %v",
		len(ours), b.changeLabel(), ours, with.wall.Round(time.Millisecond), without.wall.Round(time.Millisecond))

	const baseName = "no-change checkpoint, fresh process"
	res := timeResult("inrun_vs_walk", "in-run checkpoint after a "+b.changeLabel()+" decision", ours, s.noChange, baseName,
		fmt.Sprintf("<= %gx no-change", inRunWalkFactor), func(o, f float64) bool { return o <= inRunWalkFactor*f })
	res.Note = fmt.Sprintf("ours is duration_ms: the snapshot (walk, hashing, storing) inside the running process, "+
		"without process start, database open, lock or the row's write. These checkpoints stored %s in all: "+
		"each decision's change was stored by the snapshot plan takes right after the decision to record its "+
		"artifacts, which no duration_ms covers (see the next row)", humanBytes(stored))
	b.rep.add(res)

	decisions := time.Duration(changing + 1)
	perDecision := (with.wall - without.wall) / decisions
	over := timeResult("inrun_overhead", "in-run checkpointing, per decision", []time.Duration{perDecision}, s.noChange,
		baseName, "-", nil)
	over.Note = fmt.Sprintf("(plan run %v - the same plan with --no-checkpoints %v) / %d decisions: the pre_decision "+
		"checkpoint plus the after-decision snapshot and their records, one run each", with.wall.Round(time.Millisecond),
		without.wall.Round(time.Millisecond), changing+1)
	if perDecision <= 0 {
		over.Status, over.Ours, over.Ratio = statusNA, 0, 0
		over.Note += "; the run with checkpoints was not slower: noise, not measured"
	}
	b.rep.add(over)
	return nil
}

// stageChange writes the content generation gen gives files idx under dir, at their workspace
// paths, for a decision to copy into the workspace.
func stageChange(ctx context.Context, w *workload, idx []int, gen uint64, dir string) error {
	st := *w
	st.root = dir
	for _, i := range idx {
		if err := os.MkdirAll(filepath.Dir(st.path(i)), 0o750); err != nil {
			return err
		}
	}
	return st.rewrite(ctx, idx, gen)
}

// planFileText is a plan file running cmds as decisions change-0, change-1, ..., then a decision
// "end" that changes nothing, so that the last change is followed by a pre_decision checkpoint too.
func planFileText(name string, cmds []string) []byte {
	q := func(s string) string {
		out, _ := json.Marshal(s) // a JSON string is a YAML double-quoted scalar; strings always marshal
		return string(out)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "name: %s\ndecisions:\n", q(name))
	for k, c := range cmds {
		fmt.Fprintf(&sb, "  - id: %s\n    run: %s\n", q(fmt.Sprintf("change-%d", k)), q(c))
	}
	fmt.Fprintf(&sb, "  - id: %s\n    run: %s\n", q("end"), q("true"))
	return []byte(sb.String())
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// allSucceeded checks that a run executed want decisions, all succeeded, each with a pre_decision
// checkpoint when checkpoints is set.
func allSucceeded(v runView, want int, checkpoints bool) error {
	if len(v.Decisions) != want {
		return fmt.Errorf("plan run reported %d decisions, want %d", len(v.Decisions), want)
	}
	for _, d := range v.Decisions {
		if d.Status != "succeeded" {
			return fmt.Errorf("decision %s: %s", d.ID, d.Status)
		}
		if checkpoints && d.CheckpointID == "" {
			return fmt.Errorf("decision %s has no pre_decision checkpoint", d.ID)
		}
	}
	return nil
}

// inRunSamples are the duration_ms of the pre_decision checkpoints of every decision but the first,
// and the bytes they stored.
func inRunSamples(v runView, cps []listedCheckpoint) ([]time.Duration, int64, error) {
	byID := make(map[string]listedCheckpoint, len(cps))
	for _, c := range cps {
		byID[c.ID] = c
	}
	var ours []time.Duration
	var stored int64
	for _, d := range v.Decisions[min(1, len(v.Decisions)):] {
		c, ok := byID[d.CheckpointID]
		switch {
		case !ok:
			return nil, 0, fmt.Errorf("checkpoint list lacks %s, the checkpoint of decision %s", d.CheckpointID, d.ID)
		case c.Type != "pre_decision":
			return nil, 0, fmt.Errorf("checkpoint %s of decision %s is a %s, not a pre_decision checkpoint", c.ID, d.ID, c.Type)
		case c.DurationMs <= 0:
			return nil, 0, fmt.Errorf("checkpoint %s reports duration_ms %v", c.ID, c.DurationMs)
		}
		ours = append(ours, time.Duration(c.DurationMs*float64(time.Millisecond)))
		stored += c.StoredBytes
	}
	if len(ours) == 0 {
		return nil, 0, errors.New("the run took no checkpoint after its first")
	}
	return ours, stored, nil
}
