package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Fixed cost (issue 24, item 4): what every command pays whatever the workspace changed, measured
// on the generated workspace once it holds a realistic history (-checkpoints, a one-file change
// each, like an agent's hooks leave):
//
//   - start-up: `plan --version` (process, runtime and package init, flag parsing) against `true`,
//     and the package init alone (GODEBUG=inittrace=1, summed);
//   - read-only commands from a new process (checkpoint list, history --limit 10, cat @ FILE,
//     ls @ DIR) against the target of readOnlyLimitMS, with git's nearest command on the shadow
//     repository shown as the baseline, each split as PLAN_TIMINGS=1 sees it: start-up and exit
//     (what the process spends outside plan's own measure: runtime and package init, argument
//     parsing, exit), wiring and configuration, database open, lock, the command's own work;
//   - the phases of a no-change checkpoint as plan measures them (PLAN_TIMINGS=1): fx graph and
//     configuration, object store open, database open (schema check, ledger check), lock, the
//     walk, the commit (its record's durable write inside);
//   - the durable writes of a no-change checkpoint: the records it adds to the store, one per
//     committed transaction (target: exactly 1, the checkpoint and its log entry together).
const (
	readOnlyLimitMS      = 10.0
	noChangeRecordsLimit = 1
)

// fixedCost builds the history then measures the rows above on s.
func (b *bench) fixedCost(s *subject) error {
	if err := b.ensureHistory(s); err != nil {
		return err
	}
	runs := max(b.cfg.runs, 5) // these are milliseconds: more samples for a stable median
	if err := b.startupRows(s, runs); err != nil {
		return err
	}
	if err := b.readOnlyRows(s, runs); err != nil {
		return err
	}
	return b.phaseRows(s, runs)
}

// ensureHistory makes s hold at least -checkpoints checkpoints (a fresh workspace and shadow
// repository first, when the phase runs alone), each after a one-file change.
func (b *bench) ensureHistory(s *subject) error {
	if _, err := os.Stat(filepath.Join(s.ws, ".plan")); errors.Is(err, os.ErrNotExist) {
		if err := s.plan.init(); err != nil {
			return fmt.Errorf("plan init failed: %w", err)
		}
		if err := s.git.initRepo(); err != nil {
			return err
		}
		if _, err := s.git.commit(); err != nil {
			return err
		}
	}
	have, err := s.plan.count()
	if err != nil {
		return err
	}
	start := time.Now()
	for i := have; i < b.cfg.checkpoints; i++ {
		gen := uint64(1000 + i) // #nosec G115 -- i is a small non-negative count
		if err := s.files.rewrite(b.ctx, s.files.pickChanges(1, gen), gen); err != nil {
			return err
		}
		if _, _, err := s.plan.checkpoint(); err != nil {
			return fmt.Errorf("checkpoint %d of the history: %w", i+1, err)
		}
		if (i+1)%100 == 0 {
			b.logf("history: %d checkpoints (%v)", i+1, time.Since(start).Round(time.Second))
		}
	}
	// The shadow repository commits the same final state, for the read-only baselines.
	_, err = s.git.commit()
	return err
}

func (b *bench) startupRows(s *subject, runs int) error {
	var ours, base, inits []time.Duration
	for range runs {
		m, err := s.plan.r.quiet(s.ws, nil, b.planBin, "--version")
		if err != nil {
			return err
		}
		ours = append(ours, m.wall)
		t, err := s.plan.r.quiet(s.ws, nil, "true")
		if err != nil {
			return err
		}
		base = append(base, t.wall)
		m, err = s.plan.r.quiet(s.ws, []string{"GODEBUG=inittrace=1"}, b.planBin, "--version")
		if err != nil {
			return err
		}
		inits = append(inits, initTime(m.stderr))
	}
	b.rep.add(timeResult("fixed_startup", "start-up (plan --version)", ours, base, "true", "-", nil))
	res := timeResult("fixed_package_init", "start-up: package init", inits, nil, "", "-", nil)
	res.Note = "the sum of GODEBUG=inittrace=1's init clocks (mostly third-party: gorm's inflection, minio's s3utils, cpuid, snappy's crc table)"
	b.rep.add(res)
	return nil
}

// initTime sums the clock of every `init <pkg> @… ms, N ms clock, …` line of inittrace.
func initTime(stderr []byte) time.Duration {
	var total float64
	for line := range strings.Lines(string(stderr)) {
		f := strings.Fields(line)
		if len(f) < 7 || f[0] != "init" || f[6] != "clock," {
			continue
		}
		if v, err := strconv.ParseFloat(f[4], 64); err == nil {
			total += v
		}
	}
	return time.Duration(total * float64(time.Millisecond))
}

func (b *bench) readOnlyRows(s *subject, runs int) error {
	w, ok := s.files.(*workload)
	if !ok || len(w.files) == 0 {
		return errors.New("the fixed-cost phase needs the generated workload")
	}
	file := w.files[0].rel
	dir := file[:strings.LastIndexByte(file, '/')]
	rows := []struct {
		id, name string
		ours     []string
		git      []string
	}{
		{"fixed_checkpoint_list", "read-only: checkpoint list", []string{"checkpoint", "list"}, []string{"log", "--oneline"}},
		{"fixed_history", "read-only: history --limit 10", []string{"history", "--limit", "10"}, []string{"log", "--oneline", "-10"}},
		{"fixed_cat", "read-only: cat @ FILE", []string{"cat", "@", file}, []string{"show", "HEAD:" + file}},
		{"fixed_ls", "read-only: ls @ DIR", []string{"ls", "@", dir}, []string{"ls-tree", "HEAD", dir + "/"}},
	}
	for _, row := range rows {
		var ours, base []time.Duration
		split := map[string][]time.Duration{}
		var untimed error
		for range runs {
			args := append([]string{"-C", s.ws}, row.ours...)
			m, err := s.plan.r.quiet(s.ws, nil, b.planBin, args...)
			if err != nil {
				return err
			}
			ours = append(ours, m.wall)
			g := s.git.git(row.git...)
			m, err = s.plan.r.quiet(s.ws, s.git.env(), g[0], g[1:]...)
			if err != nil {
				return err
			}
			base = append(base, m.wall)
			// The same command again, measuring itself: where its milliseconds go.
			m, err = s.plan.r.quiet(s.ws, []string{"PLAN_TIMINGS=1"}, b.planBin, args...)
			if err != nil {
				return err
			}
			t, err := parseTimings(m.stderr)
			if err != nil {
				untimed = err
				continue
			}
			for k, v := range readOnlySplit(m.wall, t) {
				split[k] = append(split[k], v)
			}
		}
		res := timeResult(row.id, row.name, ours, base, "git "+strings.Join(row.git[:1], " "),
			fmt.Sprintf("<= %g ms", readOnlyLimitMS), func(o, _ float64) bool { return o <= readOnlyLimitMS })
		res.Note = fmt.Sprintf("%d checkpoints; git's baseline on a shadow repository of %d commits", b.cfg.checkpoints, s.git.counter)
		b.rep.add(res)
		for _, p := range readOnlyParts {
			part := timeResult(row.id+"_"+p.key, "  "+p.name, split[p.key], nil, "", "-", nil)
			if untimed != nil {
				part.Note = untimed.Error()
			}
			b.rep.add(part)
		}
	}
	return nil
}

// readOnlyParts are the parts a read-only command's time is split into (readOnlySplit).
var readOnlyParts = []struct{ key, name string }{
	{"startup", "start-up and exit (runtime, package init, arguments, exit)"},
	{"wiring", "wiring, configuration, object store open"},
	{"db", "database open (schema check, ledger check)"},
	{"lock", "lock (read-only: try-lock and store settle)"},
	{"work", "the command's own work, close"},
}

// readOnlySplit splits one PLAN_TIMINGS=1 run of wall time wall by the phases it printed
// (milliseconds): what the process spent outside plan's own measure ("total") is start-up and
// exit.
func readOnlySplit(wall time.Duration, t map[string]float64) map[string]time.Duration {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	return map[string]time.Duration{
		"startup": max(0, wall-ms(t["total"])),
		"wiring":  ms(t["open"] - t["open.db"]),
		"db":      ms(t["open.db"]),
		"lock":    ms(t["lock"]),
		"work":    ms(t["total"] - t["open"] - t["lock"]),
	}
}

// phases are the PLAN_TIMINGS phases reported as rows, with what each measures.
var phases = []struct{ key, name string }{
	{"graph", "wiring, configuration"},
	{"open.store", "object store open"},
	{"open.db.schema", "database open: schema check"},
	{"open.db.ledger", "database open: ledger check (records vs ledger table)"},
	{"lock", "lock (and store refresh)"},
	{"walk", "walk and compare (the rest)"},
	{"commit.record", "commit: the record's durable write"},
	{"commit", "commit: the whole transaction"},
	{"close", "close"},
}

func (b *bench) phaseRows(s *subject, runs int) error {
	samples := map[string][]time.Duration{}
	var totals, records []time.Duration
	var untimed error // a binary that does not know PLAN_TIMINGS: its phases are n/a
	for range runs {
		before, err := countRecords(historyDir(s.ws))
		if err != nil {
			return err
		}
		m, err := s.plan.r.quiet(s.ws, []string{"PLAN_TIMINGS=1"}, b.planBin, "-C", s.ws, "checkpoint", "create", "--note", "bench")
		if err != nil {
			return err
		}
		after, err := countRecords(historyDir(s.ws))
		if err != nil {
			return err
		}
		records = append(records, time.Duration(after-before))
		totals = append(totals, m.wall)
		t, err := parseTimings(m.stderr)
		if err != nil {
			untimed = err
			continue
		}
		open := t["open"] - t["open.config"] - t["open.store"] - t["open.db"]
		t["graph"] = open + t["open.config"]
		t["walk"] = t["total"] - t["open"] - t["lock"] - t["commit"] - t["close"]
		for _, p := range phases {
			samples[p.key] = append(samples[p.key], time.Duration(t[p.key]*float64(time.Millisecond)))
		}
	}
	res := timeResult("fixed_nochange_total", "no-change checkpoint (PLAN_TIMINGS=1)", totals, nil, "", "-", nil)
	res.Note = fmt.Sprintf("the phases below are plan's own measure of it (-checkpoints %d)", b.cfg.checkpoints)
	b.rep.add(res)
	for _, p := range phases {
		res := timeResult("fixed_phase_"+strings.ReplaceAll(p.key, ".", "_"), "  "+p.name, samples[p.key], nil, "", "-", nil)
		if untimed != nil {
			res.Note = untimed.Error()
		}
		b.rep.add(res)
	}
	n := make([]float64, len(records))
	for i, r := range records {
		n[i] = float64(r)
	}
	rec := result{ID: "fixed_nochange_records", Name: "durable writes per no-change checkpoint", Unit: "count",
		OursSamples: n, Ours: median(n), Target: fmt.Sprintf("= %d", noChangeRecordsLimit), Status: statusPass,
		Note: "records the store gained: one per committed transaction (the checkpoint and its log entry in one)"}
	for _, v := range n {
		if v != noChangeRecordsLimit {
			rec.Status = statusFail
		}
	}
	b.rep.add(rec)
	return nil
}

// count is the number of checkpoints the workspace holds.
func (p *planCLI) count() (int, error) {
	l, err := p.list()
	return len(l), err
}

// countRecords counts the committed records of the private store of the history kept in home
// (historyDir).
func countRecords(home string) (int, error) {
	des, err := os.ReadDir(filepath.Join(home, "objects", "records"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, de := range des {
		if !de.IsDir() {
			n++
		}
	}
	return n, nil
}

// parseTimings reads the `plan: timings: {…}` line PLAN_TIMINGS=1 prints (milliseconds).
func parseTimings(stderr []byte) (map[string]float64, error) {
	for line := range bytes.Lines(stderr) {
		if rest, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("plan: timings: ")); ok {
			var t map[string]float64
			if err := json.Unmarshal(rest, &t); err != nil {
				return nil, fmt.Errorf("PLAN_TIMINGS printed %q: %w", line, err)
			}
			return t, nil
		}
	}
	return nil, fmt.Errorf("PLAN_TIMINGS printed no timings (stderr: %.300q)", stderr)
}
