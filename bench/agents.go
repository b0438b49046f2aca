package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Targets of the agent hook rows (issue 22).
const (
	hookP95LimitMs  = 50.0 // a mutating tool call's pre + post hooks, p95, at -files files
	sessionTailSlop = 1.10 // the last hundred calls of a long session within this factor of its first hundred
	sessionWindow   = 100
	sessionFiles    = 200 // the long session's workspace: small, so the session's own cost shows
)

// agents measures what plan adds to an AI coding agent's tool call: `plan hook claude PreToolUse`
// before it and `PostToolUse` after it, two processes on the agent's critical path, each call
// changing one file. On the generated workspace it reports the pre+post latency's p50 and p95
// against a no-change `plan checkpoint create` run in the same workspace; on a small workspace it
// runs a session of -agent-calls calls and compares its last hundred with its first hundred,
// which must not be slower: a call's cost must not grow with the session's length.
func (b *bench) agents(s *subject) error {
	w, ok := s.files.(*workload)
	if !ok {
		return errors.New("the agent phase needs the generated workload")
	}
	if _, err := os.Stat(filepath.Join(s.ws, ".plan")); err != nil {
		if err := s.plan.init(); err != nil {
			return err
		}
	}
	calls := max(20, 10*b.cfg.runs)
	// Without the change-tracking service first (every hook walks the workspace), then as
	// installed: the session's first prompt starts `plan watch`, which the hooks then ask.
	walkLat, _, _, err := b.hookSession(s.plan.r, s.ws, "bench-latency-walk", calls, []string{"PLAN_WATCH=0"}, func(i int) error {
		return w.rewrite(b.ctx, w.pickChanges(1, uint64(8000+i)), uint64(8000+i)) // #nosec G115 -- small i
	})
	if err != nil {
		return err
	}
	lat, latPhases, unwatched, err := b.hookSession(s.plan.r, s.ws, "bench-latency", calls, []string{"PLAN_TIMINGS=1"}, func(i int) error {
		return w.rewrite(b.ctx, w.pickChanges(1, uint64(9000+i)), uint64(9000+i)) // #nosec G115 -- small i
	})
	if err != nil {
		return err
	}
	var base []time.Duration
	for range b.cfg.runs {
		m, err := s.plan.r.quiet(s.ws, []string{"PLAN_WATCH=0"}, s.plan.bin, "-C", s.ws, "--json", "checkpoint", "create")
		if err != nil {
			return err
		}
		base = append(base, m.wall)
	}
	b.stopWatch(s.plan.r, s.ws)
	wp50, wp95 := percentile(walkLat, 50), percentile(walkLat, 95)
	p50, p95 := percentile(lat, 50), percentile(lat, 95)
	b.logf("agent hooks: %d tool calls at %d files: p50 %v, p95 %v with plan watch; p50 %v, p95 %v walking (no-change checkpoint %v)",
		calls, len(w.files), p50.Round(time.Millisecond), p95.Round(time.Millisecond), wp50.Round(time.Millisecond),
		wp95.Round(time.Millisecond), median(millis(base)))
	row50 := timeResult("agent_hook_p50", fmt.Sprintf("agent tool call, pre+post hooks, p50 (%d files)", len(w.files)),
		[]time.Duration{p50}, base, "no-change checkpoint walking, fresh process", "-", nil)
	row50.Note = fmt.Sprintf("%d mutating tool calls (Claude Code payloads, one file changed each): the wall time of "+
		"`plan hook claude PreToolUse` plus `plan hook claude PostToolUse`, with the `plan watch` the session's first "+
		"prompt started (as installed)", calls)
	if unwatched != "" {
		row50.Note += "; " + unwatched
	}
	b.rep.add(row50)
	row95 := timeResult("agent_hook_p95", fmt.Sprintf("agent tool call, pre+post hooks, p95 (%d files)", len(w.files)),
		[]time.Duration{p95}, base, "no-change checkpoint walking, fresh process", fmt.Sprintf("<= %g ms", hookP95LimitMs),
		func(o, _ float64) bool { return o <= hookP95LimitMs })
	row95.Note = "each hook is a fresh process that opens the workspace, takes its lock and asks plan watch for the snapshot; " +
		"PLAN_TIMINGS phases (ms, pre+post), median of all calls -> median of the slowest 5%: " + tailPhases(lat, latPhases)
	b.rep.add(row95)
	walk := timeResult("agent_hook_walk_p95", fmt.Sprintf("agent tool call without plan watch, p95 (%d files)", len(w.files)),
		[]time.Duration{wp95}, base, "no-change checkpoint walking, fresh process", "-", nil)
	walk.Note = fmt.Sprintf("the same calls with PLAN_WATCH=0 (or hooks.watch: false): each hook walks the workspace; p50 %.0f ms",
		millis([]time.Duration{wp50})[0])
	b.rep.add(walk)
	return b.longSession()
}

// longSession runs -agent-calls tool calls in one session on a small workspace and compares the
// cost of its last hundred with the first hundred of a new session on an identical workspace, the
// two sessions' calls interleaved one for one: both hundreds are measured in the same minute, so
// that what the machine's load does between the session's start and its end (minutes on a shared
// machine) is not taken for the session's own growth. The session's own first hundred is reported
// beside it.
func (b *bench) longSession() error {
	n := b.cfg.agentCalls
	if n < 2*sessionWindow {
		return fmt.Errorf("-agent-calls must be at least %d", 2*sessionWindow)
	}
	dir := filepath.Join(b.base, "agent-session")
	r, err := b.runnerFor(dir)
	if err != nil {
		return err
	}
	workspace := func(name string) (*workload, error) {
		w := planWorkload(filepath.Join(dir, name), sessionFiles, b.cfg.seed)
		if err := w.write(b.ctx); err != nil {
			return nil, err
		}
		p := &planCLI{r: r, bin: b.planBin, ws: w.root}
		return w, p.init()
	}
	long, err := workspace("ws")
	if err != nil {
		return err
	}
	// PLAN_TIMINGS=1: the phases of each call, so that what grows is named.
	env := []string{"PLAN_TIMINGS=1"}
	start := time.Now()
	ld, err := b.startSession(r, long.root, "bench-long", env)
	if err != nil {
		return err
	}
	edit := func(w *workload, i int) func() error {
		return func() error {
			return w.rewrite(b.ctx, w.pickChanges(1, uint64(20000+i)), uint64(20000+i)) // #nosec G115 -- small i
		}
	}
	var lat []time.Duration
	var phases []map[string]float64
	for i := range n - sessionWindow {
		d, ph, err := ld.call(i, edit(long, i))
		if err != nil {
			return err
		}
		lat, phases = append(lat, d), append(phases, ph)
	}
	fresh, err := workspace("fresh")
	if err != nil {
		return err
	}
	fd, err := b.startSession(r, fresh.root, "bench-fresh", env)
	if err != nil {
		return err
	}
	var freshLat []time.Duration
	var freshPhases []map[string]float64
	for k := range sessionWindow {
		i := n - sessionWindow + k
		longCall := func() error {
			d, ph, err := ld.call(i, edit(long, i))
			lat, phases = append(lat, d), append(phases, ph)
			return err
		}
		freshCall := func() error {
			d, ph, err := fd.call(k, edit(fresh, k))
			freshLat, freshPhases = append(freshLat, d), append(freshPhases, ph)
			return err
		}
		order := []func() error{longCall, freshCall}
		if k%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, f := range order {
			if err := f(); err != nil {
				return err
			}
		}
	}
	for _, d := range []*hookDriver{ld, fd} {
		if err := d.stop(); err != nil {
			return err
		}
	}
	for _, ws := range []string{long.root, fresh.root} {
		b.stopWatch(r, ws)
	}
	first, last := lat[:sessionWindow], lat[len(lat)-sessionWindow:]
	grew := phaseGrowth(freshPhases, phases[len(phases)-sessionWindow:])
	b.logf("agent session: %d tool calls in %v: its last hundred %.1f ms, a new session's first hundred beside them %.1f ms, "+
		"its own first hundred %.1f ms (median pre+post); phases, new session -> last hundred: %s", n,
		time.Since(start).Round(time.Second), median(millis(last)), median(millis(freshLat)), median(millis(first)), grew)
	res := timeResult("agent_session_tail", fmt.Sprintf("agent session of %d tool calls: its last hundred", n),
		last, freshLat, "a new session's first hundred, interleaved", fmt.Sprintf("<= %gx first hundred", sessionTailSlop),
		func(o, f float64) bool { return o <= sessionTailSlop*f })
	res.Note = fmt.Sprintf("medians of pre+post hook wall time per call, on a %d-file workspace so the session's own "+
		"bookkeeping shows; the baseline is the first hundred calls of a new session on an identical workspace, its calls "+
		"and the last hundred taken in turn, so that both are measured under the same load (the session's own first hundred, "+
		"minutes earlier: %.1f ms); the margin is for noise on a shared machine. PLAN_TIMINGS phases (ms, pre+post), "+
		"new session -> last hundred: %s", sessionFiles, median(millis(first)), grew)
	if ld.unwatched != "" {
		res.Note += "; " + ld.unwatched
	}
	res.OursSamples, res.BaselineSamples = nil, nil // 200 samples would drown the report
	b.rep.add(res)
	return nil
}

// hookSession drives one Claude Code session of n mutating tool calls through `plan hook` in ws,
// with r's environment and env added to the hooks' environment: a prompt, then per call PreToolUse, change (what the
// tool does), PostToolUse; last, Stop. When the prompt started `plan watch` (as it does unless env
// turns it off), the calls wait for its first walk. It returns each call's pre+post wall time and,
// when env sets PLAN_TIMINGS=1, the sum of the two hooks' phases; unwatched says why the hooks
// walked when they were to ask a `plan watch` that did not run.
func (b *bench) hookSession(r *runner, ws, session string, n int, env []string, change func(i int) error) (lat []time.Duration, phases []map[string]float64, unwatched string, err error) {
	d, err := b.startSession(r, ws, session, env)
	if err != nil {
		return nil, nil, "", err
	}
	out := make([]time.Duration, 0, n)
	var perCall []map[string]float64
	for i := range n {
		lat, ph, err := d.call(i, func() error { return change(i) })
		if err != nil {
			return nil, nil, "", err
		}
		out = append(out, lat)
		if d.timed {
			perCall = append(perCall, ph)
		}
	}
	if err := d.stop(); err != nil {
		return nil, nil, "", err
	}
	return out, perCall, d.unwatched, nil
}

// hookDriver is one agent session driven call by call (see hookSession), so that two sessions'
// calls can be interleaved.
type hookDriver struct {
	b     *bench
	r     *runner // its environment (the data directory) is the hooks'
	env   []string
	timed bool
	base  map[string]any
	ws    string
	// unwatched says why the session's hooks walk although it was to use `plan watch` (the
	// service did not start); "" when it runs, or when the session turned it off.
	unwatched string
}

// startSession sends the session's first prompt in ws and waits for the `plan watch` it started.
func (b *bench) startSession(r *runner, ws, session string, env []string) (*hookDriver, error) {
	d := &hookDriver{b: b, r: r, env: env, timed: slices.Contains(env, "PLAN_TIMINGS=1"), ws: ws,
		base: map[string]any{"session_id": session, "cwd": ws, "transcript_path": filepath.Join(ws, "t.jsonl"), "permission_mode": "default"}}
	if _, _, err := d.send("UserPromptSubmit", map[string]any{"prompt": "benchmark"}); err != nil {
		return nil, err
	}
	if !slices.Contains(env, "PLAN_WATCH=0") {
		d.unwatched = b.awaitWatch(r, ws)
	}
	return d, nil
}

// send runs `plan hook claude event` with the session's payload plus extra, and returns its wall
// time and, when timed, its phases.
func (d *hookDriver) send(event string, extra map[string]any) (time.Duration, map[string]float64, error) {
	m := map[string]any{"hook_event_name": event}
	for k, v := range d.base {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	payload, err := json.Marshal(m)
	if err != nil {
		return 0, nil, err
	}
	cmd := exec.CommandContext(d.b.ctx, d.b.planBin, "hook", "claude", event) // #nosec G204 -- the plan binary under test
	cmd.Dir, cmd.Stdin, cmd.Env = d.ws, bytes.NewReader(payload), d.r.environ(d.env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t := time.Now()
	err = cmd.Run()
	lat := time.Since(t)
	var ph map[string]float64
	if d.timed && err == nil {
		if ph, err = parseTimings(stderr.Bytes()); err != nil {
			return lat, nil, fmt.Errorf("plan hook claude %s: %w", event, err)
		}
		stderr.Reset() // the timings line is all it printed
	}
	if err != nil || stdout.Len() > 0 || stderr.Len() > 0 {
		return lat, nil, fmt.Errorf("plan hook claude %s: %w: stdout %q stderr %q", event, err, stdout.String(), stderr.String())
	}
	return lat, ph, nil
}

// call is tool call i: its PreToolUse, change, its PostToolUse; it returns the two hooks' wall
// time and, when timed, the sum of their phases.
func (d *hookDriver) call(i int, change func() error) (time.Duration, map[string]float64, error) {
	id := fmt.Sprintf("toolu_bench%06d", i)
	input := map[string]any{"command": fmt.Sprintf("./edit.sh %d", i)}
	pre, prePh, err := d.send("PreToolUse", map[string]any{"tool_name": "Bash", "tool_input": input, "tool_use_id": id})
	if err != nil {
		return 0, nil, err
	}
	if err := change(); err != nil {
		return 0, nil, err
	}
	post, postPh, err := d.send("PostToolUse", map[string]any{"tool_name": "Bash", "tool_input": input, "tool_use_id": id,
		"tool_response": map[string]any{"stdout": "", "stderr": "", "interrupted": false}})
	if err != nil {
		return 0, nil, err
	}
	var ph map[string]float64
	if d.timed {
		ph = map[string]float64{}
		for _, m := range []map[string]float64{prePh, postPh} {
			for k, v := range m {
				ph[k] += v
			}
		}
	}
	return pre + post, ph, nil
}

// stop ends the session's turn.
func (d *hookDriver) stop() error {
	_, _, err := d.send("Stop", map[string]any{"stop_hook_active": false})
	return err
}

// tailPhases compares the phases of all calls with those of the slowest twentieth (by wall time
// lat): what the p95 pays for.
func tailPhases(lat []time.Duration, phases []map[string]float64) string {
	if len(phases) != len(lat) || len(lat) == 0 {
		return "n/a"
	}
	p95 := percentile(lat, 95)
	var slow []map[string]float64
	for i, d := range lat {
		if d >= p95 {
			slow = append(slow, phases[i])
		}
	}
	return phaseGrowth(phases, slow)
}

// phaseGrowth names, for the phases of the calls first and last (PLAN_TIMINGS, pre+post of each
// call), the median of each in both, largest change first: where a long session's later calls
// spend more. Phases under 0.05 ms in both are left out.
func phaseGrowth(first, last []map[string]float64) string {
	names := map[string]bool{}
	for _, m := range append(slices.Clone(first), last...) {
		for k := range m {
			names[k] = true
		}
	}
	type row struct {
		name   string
		f, l   float64
		change float64
	}
	var rows []row
	for name := range names {
		med := func(ms []map[string]float64) float64 {
			v := make([]float64, len(ms))
			for i, m := range ms {
				v[i] = m[name]
			}
			slices.Sort(v)
			if len(v) == 0 {
				return 0
			}
			return v[len(v)/2]
		}
		f, l := med(first), med(last)
		if f < 0.05 && l < 0.05 {
			continue
		}
		rows = append(rows, row{name, f, l, l - f})
	}
	slices.SortFunc(rows, func(a, b row) int {
		if c := cmp.Compare(b.change, a.change); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = fmt.Sprintf("%s %.2f -> %.2f", r.name, r.f, r.l)
	}
	if len(parts) == 0 {
		return "n/a"
	}
	return strings.Join(parts, ", ")
}

// awaitWatch waits until the `plan watch` a prompt started in ws has taken its first snapshot
// (a minute at most: on a system without inotify it never runs, and the hooks walk). It returns
// "" once the service runs, or why the hooks will walk: the bench measures them as they are.
func (b *bench) awaitWatch(r *runner, ws string) string {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		m, err := r.run(ws, nil, b.planBin, "-C", ws, "--json", "watch", "status")
		if err != nil {
			why := "plan watch did not run, every hook walked (plan watch status: " + shortErr(err) + ")"
			b.logf("agent hooks: %s in %s", why, ws)
			return why
		}
		var st struct {
			Running   bool `json:"running"`
			Snapshots int  `json:"snapshots"`
		}
		if err := json.Unmarshal(m.stdout, &st); err != nil {
			why := fmt.Sprintf("plan watch status printed no status object (%v: %.200q): the hooks may have walked", err, m.stdout)
			b.logf("agent hooks: %s", why)
			return why
		}
		if st.Running && st.Snapshots > 0 {
			return ""
		}
	}
	b.logf("agent hooks: plan watch did not start in %s: the hooks walk", ws)
	return "plan watch did not start within a minute: every hook walked"
}

// stopWatch stops the `plan watch` a session started in ws; a failure is a warning (a service
// that never started has nothing to stop).
func (b *bench) stopWatch(r *runner, ws string) {
	if _, err := r.quiet(ws, nil, b.planBin, "-C", ws, "watch", "stop"); err != nil {
		b.logf("warning: plan watch stop in %s: %s", ws, shortErr(err))
	}
}

// shortErr is err on one line, without the command line a failed command's error starts with.
func shortErr(err error) string {
	if ee, ok := errors.AsType[*exitError](err); ok {
		return fmt.Sprintf("exit %d: %s", ee.code, oneLine(ee.stderr, 200))
	}
	return oneLine(err.Error(), 200)
}

// oneLine is s on one line, at most n bytes of it.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// percentile is the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s) + 99) / 100
	return s[min(max(i, 1), len(s))-1]
}

// agentsOnly reports whether only the agent rows were asked for.
func agentsOnly(only string) bool { return strings.TrimSpace(only) == "agents" }
