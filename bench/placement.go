package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Placement rows: what it costs to keep a workspace's history outside it. The same generated
// workload (-files files, -seed) is written three times and its history kept
//
//	(a) in the workspace, .plan/ (`plan init --store workspace`): the baseline;
//	(b) in a data directory on the workspace's file system (PLAN_DATA_DIR under the bench
//	    directory), the default since the data directory;
//	(c) in a data directory on another file system, a tmpfs (/dev/shm), when there is one:
//	    otherwise its rows are n/a, with the reason.
//
// Each is measured in the same run, their runs interleaved (the order rotated each round), so that
// what the machine does meanwhile weighs on all three alike: a no-change checkpoint, a 1% change
// checkpoint, a rollback of a 1% change, and an agent's tool call through `plan hook claude`
// (PreToolUse + PostToolUse, one file changed) with and without `plan watch`. (b) and (c) are
// reported against (a) as a ratio of medians, which must not exceed placementFactor. A restore
// stages inside the workspace whatever the placement (.plan/staging), so its renames stay on
// one file system.
const placementFactor = 1.10

// Placement keys, in the order of the report.
const (
	placeWorkspace = "workspace"
	placeSameFS    = "samefs"
	placeTmpfs     = "tmpfs"
)

// placementInfo describes the placement workload and where each history was kept.
type placementInfo struct {
	Files        int              `json:"files"`
	Bytes        int64            `json:"bytes"`
	ChangedFiles int              `json:"changed_files"`
	Where        []placementWhere `json:"where"`
	// Skipped says why the tmpfs placement (c) was not measured, when it was not.
	Skipped string `json:"skipped,omitempty"`
}

type placementWhere struct {
	Key        string `json:"key"`
	History    string `json:"history"`     // the state directory plan used
	FileSystem string `json:"file_system"` // its file system's type, as statfs names it
}

// placementRow is one measured quantity of the phase.
type placementRow struct{ key, name string }

// placementRows are the rows each of (b) and (c) gets.
var placementRows = []placementRow{
	{"nochange", "checkpoint, no change"},
	{"change", "checkpoint, %s"},
	{"rollback", "rollback, %s"},
	{"hook_p50", "agent tool call, pre+post hooks, p50"},
	{"hook_p95", "agent tool call, pre+post hooks, p95"},
	{"hook_walk_p95", "agent tool call without plan watch, p95"},
}

// placementLabels name (b) and (c) in the rows.
var placementLabels = map[string]string{
	placeSameFS: "data dir, same fs",
	placeTmpfs:  "data dir, tmpfs",
}

const placementBaseName = "(a) history in .plan/"

// placed is one placement's workspace and what was measured in it, by row key.
type placed struct {
	key     string
	s       *subject
	w       *workload
	samples map[string][]time.Duration
	// unwatched says why its hooks walked when they were to ask `plan watch` (hookDriver).
	unwatched string
}

// placement measures the three placements (see placementFactor).
func (b *bench) placement() (err error) {
	dir := filepath.Join(b.base, "placement")
	info := &placementInfo{}
	b.rep.Placement = info
	var places []*placed
	// The history of a fresh workspace and -runs rounds of changes: its content compressed, and
	// the changes' many times over; the workspace's size is a generous bound.
	tmpfs, reason := tmpfsDataDir(b.base, planWorkload(dir, b.cfg.files, b.cfg.seed).totalBytes())
	if tmpfs != "" {
		defer func() {
			if b.cfg.keep {
				b.logf("placement: kept %s", tmpfs)
				return
			}
			if rmErr := os.RemoveAll(tmpfs); rmErr != nil && err == nil {
				err = fmt.Errorf("clean up %s: %w", tmpfs, rmErr)
			}
		}()
	}
	// Registered after the tmpfs's removal, so run before it: a service is stopped while its
	// history is still there to find.
	defer func() {
		for _, p := range places {
			if p.s != nil {
				b.stopWatch(p.s.plan.r, p.s.ws) // nothing to stop, after a clean run
			}
		}
	}()
	keys := []string{placeWorkspace, placeSameFS}
	if tmpfs != "" {
		keys = append(keys, placeTmpfs)
	} else {
		info.Skipped = reason
		b.logf("placement: (c) skipped: %s", reason)
	}
	for _, key := range keys {
		w := planWorkload(filepath.Join(dir, key, "ws"), b.cfg.files, b.cfg.seed)
		if key == placeWorkspace {
			info.Files, info.Bytes, info.ChangedFiles = len(w.files), w.totalBytes(), b.changedCount(len(w.files))
			if avail, ok := freeSpace(b.base); ok && avail < int64(len(keys)+2)*info.Bytes {
				return fmt.Errorf("%s has %s free; the placement phase needs about %s (use -workdir or fewer -files)",
					b.base, humanBytes(avail), humanBytes(int64(len(keys)+2)*info.Bytes))
			}
		}
		if err := w.write(b.ctx); err != nil {
			return fmt.Errorf("generate workspace: %w", err)
		}
		s, err := b.newSubject(filepath.Join(dir, key), "placement_", "placement: ", w, info.ChangedFiles)
		if err != nil {
			return err
		}
		if key == placeTmpfs {
			s.plan.r = b.runnerWithData(tmpfs)
		}
		p := &placed{key: key, s: s, w: w, samples: map[string][]time.Duration{}}
		places = append(places, p)
		if err := b.placeInit(p, info); err != nil {
			return err
		}
	}
	if b.rep.Files == 0 { // alone: the summary line names this workload
		b.rep.Files, b.rep.Dirs, b.rep.Bytes, b.rep.ChangedFiles = info.Files, len(places[0].w.dirs), info.Bytes, info.ChangedFiles
	}
	syscall.Sync()
	b.logf("placement: %d workspaces of %d files, %s", len(places), info.Files, humanBytes(info.Bytes))
	for _, p := range places { // the first checkpoint of each, untimed
		if _, _, err := p.s.checkpoint(); err != nil {
			return fmt.Errorf("placement %s: %w", p.key, err)
		}
	}
	for i := range b.cfg.runs {
		if err := b.placementRound(places, i); err != nil {
			return err
		}
	}
	if err := b.placementHooks(places); err != nil {
		return err
	}
	for _, r := range placementResults(places, info.Skipped, b.changeLabel()) {
		b.rep.add(r)
	}
	return nil
}

// placeInit makes p's workspace a plan workspace with its history where p.key says, and checks it
// is there.
func (b *bench) placeInit(p *placed, info *placementInfo) error {
	args := []string{"-C", p.s.ws, "--json", "init"}
	if p.key == placeWorkspace {
		args = append(args, "--store", "workspace")
	}
	if _, err := p.s.plan.r.run(p.s.ws, nil, b.planBin, args...); err != nil {
		return fmt.Errorf("placement %s: plan init: %w", p.key, err)
	}
	home := historyDir(p.s.ws)
	data := strings.TrimPrefix(p.s.plan.r.env[0], envDataDir+"=")
	switch {
	case p.key == placeWorkspace && home != filepath.Join(p.s.ws, ".plan"):
		return fmt.Errorf("placement %s: plan init --store workspace kept the history in %s, not in .plan/", p.key, home)
	case p.key != placeWorkspace && !within(home, data):
		return fmt.Errorf("placement %s: plan init kept the history in %s, not in its data directory %s (a plan binary from before the data directory?)",
			p.key, home, data)
	}
	info.Where = append(info.Where, placementWhere{Key: p.key, History: home, FileSystem: fsType(home)})
	if p.key == placeSameFS && !sameDevice(home, p.s.ws) {
		b.logf("warning: placement %s: %s and %s are not on one file system", p.key, home, p.s.ws)
	}
	return nil
}

// rotated is ps starting at its i-th element (mod its length): each round of the phase starts
// with another placement.
func rotated[T any](ps []T, i int) []T {
	if len(ps) == 0 {
		return nil
	}
	k := i % len(ps)
	return append(append([]T{}, ps[k:]...), ps[:k]...)
}

// placementRound is round i of the checkpoint and rollback rows, the placements in turn.
func (b *bench) placementRound(places []*placed, i int) error {
	order := rotated(places, i)
	gen := uint64(100 + i) // #nosec G115 -- small i
	for _, p := range places {
		if err := p.w.rewrite(b.ctx, p.w.pickChanges(p.s.changed, gen), gen); err != nil {
			return err
		}
	}
	for _, p := range order {
		d, _, err := p.s.checkpoint()
		if err != nil {
			return fmt.Errorf("placement %s: %w", p.key, err)
		}
		p.samples["change"] = append(p.samples["change"], d)
	}
	for _, p := range order {
		d, _, err := p.s.checkpoint()
		if err != nil {
			return fmt.Errorf("placement %s: %w", p.key, err)
		}
		p.samples["nochange"] = append(p.samples["nochange"], d)
	}
	// A 1% change rolled back to the no-change checkpoint; the bytes must come back.
	gen = uint64(200 + i) // #nosec G115 -- small i
	idx := places[0].w.pickChanges(places[0].s.changed, gen)
	want, err := hashFiles(places[0].w, idx)
	if err != nil {
		return err
	}
	for _, p := range places {
		if err := p.w.rewrite(b.ctx, idx, gen); err != nil {
			return err
		}
	}
	for _, p := range order {
		syscall.Sync()
		m, err := p.s.plan.rollback(p.s.lastID)
		if err != nil {
			return fmt.Errorf("placement %s: plan rollback: %w", p.key, err)
		}
		if bad, err := differing(p.w, idx, want); err != nil {
			return err
		} else if bad > 0 {
			return fmt.Errorf("placement %s: plan rollback left %d of %d changed files wrong", p.key, bad, len(idx))
		}
		p.samples["rollback"] = append(p.samples["rollback"], m.wall)
	}
	var parts []string
	for _, p := range places {
		parts = append(parts, fmt.Sprintf("%s %v/%v/%v", p.key, p.samples["nochange"][i].Round(time.Millisecond),
			p.samples["change"][i].Round(time.Millisecond), p.samples["rollback"][i].Round(time.Millisecond)))
	}
	b.logf("placement run %d (no change/%s/rollback): %s", i+1, b.changeLabel(), strings.Join(parts, ", "))
	return nil
}

// placementHooks drives one agent session per placement, their tool calls in turn, first with
// every hook walking the workspace (PLAN_WATCH=0), then with the `plan watch` the session's first
// prompt starts (as installed); the p50 and p95 of each call's pre+post hooks are its samples.
func (b *bench) placementHooks(places []*placed) error {
	calls := max(20, 10*b.cfg.runs)
	for _, mode := range []struct {
		key     string
		env     []string
		session string
	}{
		{"hook_walk", []string{"PLAN_WATCH=0"}, "bench-placement-walk"},
		{"hook", nil, "bench-placement"},
	} {
		drivers := make([]*hookDriver, len(places))
		lat := make([][]time.Duration, len(places))
		for j, p := range places {
			d, err := b.startSession(p.s.plan.r, p.s.ws, mode.session, mode.env)
			if err != nil {
				return fmt.Errorf("placement %s: %w", p.key, err)
			}
			drivers[j] = d
		}
		for k := range calls {
			gen := uint64(8000 + k) // #nosec G115 -- small k
			for _, j := range rotated(indexes(len(places)), k) {
				w := places[j].w
				d, _, err := drivers[j].call(k, func() error { return w.rewrite(b.ctx, w.pickChanges(1, gen), gen) })
				if err != nil {
					return fmt.Errorf("placement %s: %w", places[j].key, err)
				}
				lat[j] = append(lat[j], d)
			}
		}
		for j, p := range places {
			if err := drivers[j].stop(); err != nil {
				return err
			}
			if mode.env == nil {
				b.stopWatch(p.s.plan.r, p.s.ws)
				p.unwatched = drivers[j].unwatched
			}
			p.samples[mode.key+"_p50"] = []time.Duration{percentile(lat[j], 50)}
			p.samples[mode.key+"_p95"] = []time.Duration{percentile(lat[j], 95)}
		}
	}
	var parts []string
	for _, p := range places {
		parts = append(parts, fmt.Sprintf("%s p50 %v p95 %v (walking p95 %v)", p.key, p.samples["hook_p50"][0].Round(time.Millisecond),
			p.samples["hook_p95"][0].Round(time.Millisecond), p.samples["hook_walk_p95"][0].Round(time.Millisecond)))
	}
	b.logf("placement: %d agent tool calls each: %s", calls, strings.Join(parts, ", "))
	return nil
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// placementResults are the rows of (b) and (c) against (a), of the placements measured; skipped
// is why (c) is not among them. change names the change ("1% change").
func placementResults(places []*placed, skipped, change string) []result {
	by := map[string]*placed{}
	for _, p := range places {
		by[p.key] = p
	}
	base := by[placeWorkspace]
	var out []result
	for _, key := range []string{placeSameFS, placeTmpfs} {
		for _, row := range placementRows {
			name := row.name
			if strings.Contains(name, "%s") {
				name = fmt.Sprintf(name, change)
			}
			id, name := "placement_"+key+"_"+row.key, "placement, "+placementLabels[key]+": "+name
			p, ok := by[key]
			if !ok || base == nil {
				note := "not measured"
				if key == placeTmpfs && skipped != "" {
					note = "(c) not measured: " + skipped
				}
				out = append(out, result{ID: id, Name: name, Unit: "ms", BaselineName: placementBaseName,
					Target: placementTarget(), Status: statusNA, Note: note})
				continue
			}
			res := placementResult(id, name, p.samples[row.key], base.samples[row.key])
			if strings.HasPrefix(row.key, "hook_p") {
				res.Note = watchNote(p, base)
			}
			out = append(out, res)
		}
	}
	return out
}

// watchNote says, for a row of hooks that ask `plan watch`, when p's or (a)'s did not run: the
// hooks walked, and the ratio compares a walk with the service.
func watchNote(p, base *placed) string {
	var notes []string
	for _, q := range []*placed{p, base} {
		if q.unwatched != "" {
			notes = append(notes, q.key+": "+q.unwatched)
		}
	}
	return strings.Join(notes, "; ")
}

func placementTarget() string { return fmt.Sprintf("<= %.2fx (a)", placementFactor) }

// placementResult is a row of one placement against (a): the ratio of the medians, ours over
// (a)'s, within placementFactor.
func placementResult(id, name string, ours, base []time.Duration) result {
	res := timeResult(id, name, ours, base, placementBaseName, placementTarget(),
		func(o, a float64) bool { return a > 0 && o <= placementFactor*a })
	if res.Ours > 0 && res.Baseline > 0 {
		res.OfBaseline = res.Ours / res.Baseline
	}
	return res
}

// sameDevice reports whether a and b are on one file system.
func sameDevice(a, b string) bool {
	var sa, sb syscall.Stat_t
	return syscall.Stat(a, &sa) == nil && syscall.Stat(b, &sb) == nil && sa.Dev == sb.Dev
}
