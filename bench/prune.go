package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// Prune rows (issue 24): a history of pruneCheckpoints checkpoints of pruneFiles files, each
// checkpoint appending to them (logs), rewriting a part of them in place (edited sources), or a mix
// of both with files left alone; `checkpoint prune --keep N` then `gc`; the store (packs and idx)
// against a fresh store of the N kept checkpoints, made by checkpointing their states in order in
// a new workspace. Before the fix, a kept version stayed a delta against a pruned one, which gc
// kept as its base.
const (
	pruneFiles       = 400
	pruneCheckpoints = 20
	pruneFactor      = 1.2 // the store after prune + gc within this factor of a fresh one
)

var pruneKeeps = []int{1, 5}

// pruneWorkloads are the three histories, by row id.
var pruneWorkloads = []string{"appended", "rewritten", "mixed"}

// prune measures every workload at every keep.
func (b *bench) prune() error {
	for _, kind := range pruneWorkloads {
		for _, keep := range pruneKeeps {
			if err := b.pruneOne(kind, keep); err != nil {
				return fmt.Errorf("%s, keep %d: %w", kind, keep, err)
			}
		}
	}
	return nil
}

// pruneState is the content of every file at one checkpoint.
type pruneState map[string][]byte

func (b *bench) pruneOne(kind string, keep int) error {
	dir := filepath.Join(b.base, fmt.Sprintf("prune-%s-%d", kind, keep))
	ws, fresh := filepath.Join(dir, "ws"), filepath.Join(dir, "fresh")
	r := rand.New(rand.NewPCG(b.cfg.seed, uint64(len(kind)))) // #nosec G404 -- reproducible test data, not secrets
	cur := pruneState{}
	for i := range pruneFiles {
		cur[fmt.Sprintf("f%03d.txt", i)] = pruneLines(r, 60)
	}
	run, err := b.runnerFor(dir)
	if err != nil {
		return err
	}
	p := &planCLI{r: run, bin: b.planBin, ws: ws}
	if err := os.MkdirAll(ws, 0o750); err != nil {
		return err
	}
	if err := p.init(); err != nil {
		return err
	}
	var states []pruneState
	for c := range pruneCheckpoints {
		next := pruneState{}
		for i := range pruneFiles {
			name := fmt.Sprintf("f%03d.txt", i)
			next[name] = pruneChange(kind, r, i, cur[name])
		}
		if err := writeState(ws, next); err != nil {
			return err
		}
		if _, _, err := p.checkpoint(); err != nil {
			return fmt.Errorf("checkpoint %d: %w", c, err)
		}
		states = append(states, next)
		cur = next
	}
	before, _, err := planStoreBytes(filepath.Join(historyDir(ws), "objects"))
	if err != nil {
		return err
	}
	if _, err := run.run(ws, nil, b.planBin, "-C", ws, "--json", "--yes", "checkpoint", "prune", "--keep", fmt.Sprint(keep)); err != nil {
		return err
	}
	start := time.Now()
	m, err := run.run(ws, nil, b.planBin, "-C", ws, "--json", "gc")
	if err != nil {
		return err
	}
	gcTime := time.Since(start)
	var gc struct {
		BytesReclaimed   int64 `json:"bytes_reclaimed"`
		ObjectsReencoded int   `json:"objects_reencoded"`
	}
	if err := json.Unmarshal(m.stdout, &gc); err != nil {
		return fmt.Errorf("gc printed no JSON: %w", err)
	}
	after, _, err := planStoreBytes(filepath.Join(historyDir(ws), "objects"))
	if err != nil {
		return err
	}
	f := &planCLI{r: run, bin: b.planBin, ws: fresh}
	if err := os.MkdirAll(fresh, 0o750); err != nil {
		return err
	}
	if err := f.init(); err != nil {
		return err
	}
	for _, st := range states[len(states)-keep:] {
		if err := writeState(fresh, st); err != nil {
			return err
		}
		if _, _, err := f.checkpoint(); err != nil {
			return err
		}
	}
	want, _, err := planStoreBytes(filepath.Join(historyDir(fresh), "objects"))
	if err != nil {
		return err
	}
	b.logf("prune %s keep %d: store %s before, %s after prune + gc (%v, %d objects re-encoded, %s reclaimed), fresh %s",
		kind, keep, humanBytes(before), humanBytes(after), gcTime.Round(time.Millisecond), gc.ObjectsReencoded,
		humanBytes(gc.BytesReclaimed), humanBytes(want))
	pass := func(o, base float64) bool { return o <= pruneFactor*base }
	id := fmt.Sprintf("prune_%s_keep%d_vs_fresh", kind, keep)
	name := fmt.Sprintf("store after prune --keep %d + gc (%s)", keep, kind)
	b.rep.add(sizeResult(id, name, after, want, "fresh store of the kept checkpoints", fmt.Sprintf("<= %gx fresh", pruneFactor), pass,
		fmt.Sprintf("%d files, %d checkpoints; %s before the prune; gc %v, %d objects re-encoded", pruneFiles, pruneCheckpoints,
			humanBytes(before), gcTime.Round(time.Millisecond), gc.ObjectsReencoded)))
	return os.RemoveAll(dir)
}

// pruneLines returns n lines of log-like text.
func pruneLines(r *rand.Rand, n int) []byte {
	var out bytes.Buffer
	for range n {
		fmt.Fprintf(&out, "%s %06d level=%s msg=%q\n", time.Unix(1_700_000_000+r.Int64N(1_000_000), 0).UTC().Format(time.RFC3339),
			r.IntN(1_000_000), []string{"info", "warn", "debug"}[r.IntN(3)], fmt.Sprintf("step %d of %d", r.IntN(100), r.IntN(1000)))
	}
	return out.Bytes()
}

// pruneChange is a file's next content under kind: appended to, an eighth of its lines rewritten,
// or (mixed) one of those or left alone, by file.
func pruneChange(kind string, r *rand.Rand, i int, old []byte) []byte {
	if kind == "mixed" {
		kind = []string{"appended", "rewritten", "same", "same"}[i%4]
	}
	switch kind {
	case "appended":
		return append(bytes.Clone(old), pruneLines(r, 8)...)
	case "rewritten":
		lines := bytes.SplitAfter(old, []byte("\n"))
		for range len(lines) / 8 {
			lines[r.IntN(len(lines))] = pruneLines(r, 1)
		}
		return bytes.Join(lines, nil)
	}
	return old
}

// writeState writes every file of st into ws.
func writeState(ws string, st pruneState) error {
	for name, data := range st {
		if err := os.WriteFile(filepath.Join(ws, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
