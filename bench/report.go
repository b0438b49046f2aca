package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Result statuses. INFO rows compare against a baseline without a target; n/a rows could not be
// measured (the CLI lacks the command).
const (
	statusPass = "PASS"
	statusFail = "FAIL"
	statusInfo = "INFO"
	statusNA   = "n/a"
)

// result is one row of the report, in Unit: milliseconds, bytes, or MB (10^6 bytes) of memory.
type result struct {
	ID           string  `json:"id"` // stable key for scripts: "first_vs_git", ...
	Name         string  `json:"name"`
	Unit         string  `json:"unit"` // "ms", "bytes", "MB" or "count"
	Ours         float64 `json:"ours"`
	Baseline     float64 `json:"baseline"`
	BaselineName string  `json:"baseline_name,omitempty"`
	Ratio        float64 `json:"ratio"` // baseline / ours: above 1, ours is faster or smaller
	// OfBaseline is ours / baseline, for the rows whose target is a bound on it (the placement
	// rows: at most 1.10x the history in .plan/); the text report shows it rather than Ratio.
	OfBaseline      float64   `json:"of_baseline,omitempty"`
	Target          string    `json:"target"`
	Status          string    `json:"status"`
	Note            string    `json:"note,omitempty"`
	OursSamples     []float64 `json:"ours_samples,omitempty"`
	BaselineSamples []float64 `json:"baseline_samples,omitempty"`
}

// report is everything one benchmark run found.
type report struct {
	Files        int    `json:"files"`
	Dirs         int    `json:"dirs"`
	Bytes        int64  `json:"bytes"`
	Runs         int    `json:"runs"`
	Seed         uint64 `json:"seed"`
	ChangedFiles int    `json:"changed_files"`
	GitVersion   string `json:"git_version"`
	// RealTree and History describe the real-tree and real-history workloads, when measured.
	RealTree     *treeInfo      `json:"real_tree,omitempty"`
	History      *historyInfo   `json:"history,omitempty"`
	Placement    *placementInfo `json:"placement,omitempty"`
	Results      []result       `json:"results"`
	Passed       int            `json:"passed"`
	Failed       int            `json:"failed"`
	Infos        int            `json:"info"`
	NotAvailable int            `json:"not_available"`
}

// treeInfo describes the real tree: a copy of Source.
type treeInfo struct {
	Source       string `json:"source"`
	Files        int    `json:"files"` // regular files
	Symlinks     int    `json:"symlinks"`
	Dirs         int    `json:"dirs"`
	Bytes        int64  `json:"bytes"`
	ChangedFiles int    `json:"changed_files"`
}

// historyInfo describes the real history: the releases of Module replayed, oldest first.
type historyInfo struct {
	Module   string   `json:"module"`
	Versions []string `json:"versions"`
	Files    int      `json:"files"` // of the newest release
	Bytes    int64    `json:"bytes"` // likewise
}

func (r *report) add(res result) {
	r.Results = append(r.Results, res)
	switch res.Status {
	case statusPass:
		r.Passed++
	case statusFail:
		r.Failed++
	case statusInfo:
		r.Infos++
	default:
		r.NotAvailable++
	}
}

// timeResult builds a time row from samples, comparing medians.
func timeResult(id, name string, ours, base []time.Duration, baseName, target string, pass func(ours, base float64) bool) result {
	res := result{
		ID: id, Name: name, Unit: "ms", BaselineName: baseName, Target: target,
		OursSamples: millis(ours), BaselineSamples: millis(base),
	}
	res.Ours, res.Baseline = median(res.OursSamples), median(res.BaselineSamples)
	if res.Ours > 0 {
		res.Ratio = res.Baseline / res.Ours
	}
	switch {
	case len(ours) == 0:
		res.Status = statusNA
	case pass == nil:
		res.Status = statusInfo
	case pass(res.Ours, res.Baseline):
		res.Status = statusPass
	default:
		res.Status = statusFail
	}
	return res
}

func millis(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d) / float64(time.Millisecond)
	}
	return out
}

// median of xs; the mean of the middle two for an even count; 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// ratioText says how ours compares: "6.2x faster", "1.3x slower", "0.98x of zstd".
func ratioText(res result) string {
	switch {
	case res.Status == statusNA || res.Baseline == 0 || res.Ours == 0:
		return "-"
	case res.Unit == "bytes":
		return fmt.Sprintf("%.2fx of %s", res.Ours/res.Baseline, shortName(res.BaselineName))
	case res.OfBaseline > 0:
		return fmt.Sprintf("%.2fx of %s", res.OfBaseline, shortName(res.BaselineName))
	case res.Ratio >= 1:
		return fmt.Sprintf("%.1fx faster", res.Ratio)
	default:
		return fmt.Sprintf("%.1fx slower", 1/res.Ratio)
	}
}

func shortName(s string) string {
	first, _, _ := strings.Cut(s, " ")
	return first
}

func valueText(v float64, unit string, na bool) string {
	switch {
	case na:
		return "-"
	case unit == "bytes":
		return humanBytes(int64(v))
	case unit == "MB":
		return fmt.Sprintf("%.1f MB", v)
	case unit == "count":
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.0f ms", v)
	default:
		return fmt.Sprintf("%.1f ms", v)
	}
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}

// summary is the closing line of the text report.
func (r *report) summary() string {
	return fmt.Sprintf("bench summary: %d files, %s: %d passed, %d failed, %d info, %d n/a",
		r.Files, humanBytes(r.Bytes), r.Passed, r.Failed, r.Infos, r.NotAvailable)
}

// workloads says what was measured, one line each.
func (r *report) workloads() []string {
	lines := []string{fmt.Sprintf("generated: %d files in %d directories, %s; a change rewrites %d files; %d runs, seed %d; git %s",
		r.Files, r.Dirs, humanBytes(r.Bytes), r.ChangedFiles, r.Runs, r.Seed, r.GitVersion)}
	if t := r.RealTree; t != nil {
		lines = append(lines, fmt.Sprintf("real tree: a copy of %s, %d files, %d symlinks, %d directories, %s; a change edits %d files",
			t.Source, t.Files, t.Symlinks, t.Dirs, humanBytes(t.Bytes), t.ChangedFiles))
	}
	if h := r.History; h != nil && len(h.Versions) > 0 {
		lines = append(lines, fmt.Sprintf("real history: %d releases of %s, %s..%s (the newest: %d files, %s)",
			len(h.Versions), h.Module, h.Versions[0], h.Versions[len(h.Versions)-1], h.Files, humanBytes(h.Bytes)))
	}
	if p := r.Placement; p != nil {
		lines = append(lines, p.line())
	}
	return lines
}

// line says where the placement phase kept each history.
func (p *placementInfo) line() string {
	var where []string
	for _, w := range p.Where {
		where = append(where, fmt.Sprintf("%s %s (%s)", w.Key, w.History, w.FileSystem))
	}
	l := fmt.Sprintf("placement: %d files, %s, a change rewrites %d files; histories: %s", p.Files, humanBytes(p.Bytes),
		p.ChangedFiles, strings.Join(where, ", "))
	if p.Skipped != "" {
		l += "; (c) tmpfs skipped: " + p.Skipped
	}
	return l
}

func (r *report) writeText(w io.Writer) error {
	for _, l := range r.workloads() {
		fmt.Fprintln(w, l)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "operation\tours\tbaseline\t\tratio\ttarget\tresult\n")
	for _, res := range r.Results {
		na := res.Status == statusNA
		baseVal := valueText(res.Baseline, res.Unit, res.Baseline == 0)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", res.Name, valueText(res.Ours, res.Unit, na),
			baseVal, res.BaselineName, ratioText(res), res.Target, res.Status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, res := range r.Results {
		if res.Note != "" {
			fmt.Fprintf(w, "  %s: %s\n", res.Name, res.Note)
		}
	}
	_, err := fmt.Fprintln(w, r.summary())
	return err
}

func (r *report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}
