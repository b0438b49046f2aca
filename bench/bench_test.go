package main

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

func TestPlanWorkloadShape(t *testing.T) {
	w := planWorkload("/ws", 10000, 1)
	if len(w.files) != 10000 {
		t.Fatalf("files = %d", len(w.files))
	}
	// ~90 MB for 10k files, within a tolerance for the random sizes.
	if mb := float64(w.totalBytes()) / 1e6; mb < 80 || mb > 110 {
		t.Errorf("total = %.1f MB, want ~90", mb)
	}
	var classes [3]int
	perDir := map[string]int{}
	seen := map[string]bool{}
	for _, f := range w.files {
		classes[f.class]++
		dir := f.rel[:strings.LastIndexByte(f.rel, '/')]
		perDir[dir]++
		if depth := strings.Count(f.rel, "/"); depth < 1 || depth > maxDepth {
			t.Fatalf("%s: depth %d", f.rel, depth)
		}
		if seen[f.rel] {
			t.Fatalf("duplicate path %s", f.rel)
		}
		seen[f.rel] = true
	}
	if classes[classLarge] != 8 || classes[classMedium] != 150 {
		t.Errorf("classes = %v, want 8 large and 150 medium", classes)
	}
	if avg := 10000 / len(perDir); avg < 20 || avg > 50 {
		t.Errorf("%d files per directory on average, want 20-50", avg)
	}

	again := planWorkload("/ws", 10000, 1)
	for i := range w.files {
		if w.files[i] != again.files[i] {
			t.Fatalf("layout is not reproducible at %d: %+v vs %+v", i, w.files[i], again.files[i])
		}
	}
	if other := planWorkload("/ws", 10000, 2); other.files[0] == w.files[0] && other.files[1] == w.files[1] {
		t.Error("a different seed gave the same layout")
	}
}

func TestLayoutDirs(t *testing.T) {
	for _, want := range []int{1, 2, 35, 285, 2857} {
		dirs := layoutDirs(want)
		if len(dirs) != want {
			t.Errorf("layoutDirs(%d) gave %d", want, len(dirs))
		}
	}
}

func TestFillIsReproducibleAndCompressible(t *testing.T) {
	gen := func(seed uint64, incompressible bool) []byte {
		return fill(nil, rand.New(rand.NewPCG(seed, 0)), 64<<10, incompressible)
	}
	a, b := gen(7, false), gen(7, false)
	if !bytes.Equal(a, b) || len(a) != 64<<10 {
		t.Fatal("same seed, different text")
	}
	if bytes.Equal(a, gen(8, false)) {
		t.Fatal("different seeds, same text")
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	if z := len(enc.EncodeAll(a, nil)); z > len(a)/2 {
		t.Errorf("text compresses to %d of %d bytes; want source-like (< 1/2)", z, len(a))
	}
	bin := gen(7, true)
	if z := len(enc.EncodeAll(bin, nil)); z < len(bin)*95/100 {
		t.Errorf("binary compresses to %d of %d bytes; want incompressible", z, len(bin))
	}
}

func TestRewriteReplaysTheSameChange(t *testing.T) {
	w := planWorkload(t.TempDir(), 40, 3)
	if err := w.write(context.Background()); err != nil {
		t.Fatal(err)
	}
	idx := w.pickChanges(4, 9)
	before, err := hashFiles(w, idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.rewrite(context.Background(), idx, 9); err != nil {
		t.Fatal(err)
	}
	if bad, err := differing(w, idx, before); err != nil || bad != len(idx) {
		t.Fatalf("after a rewrite %d of %d files differ (%v)", bad, len(idx), err)
	}
	changed, _ := hashFiles(w, idx)
	if err := w.rewrite(context.Background(), idx, 9); err != nil {
		t.Fatal(err)
	}
	if bad, err := differing(w, idx, changed); err != nil || bad != 0 {
		t.Fatalf("replaying the change differs in %d files (%v)", bad, err)
	}
	if err := os.Remove(w.path(idx[0])); err != nil {
		t.Fatal(err)
	}
	if bad, _ := differing(w, idx, changed); bad != 1 {
		t.Fatalf("a missing file counts as differing: got %d", bad)
	}
	if _, err := os.Stat(filepath.Join(w.root, filepath.FromSlash(w.dirs[0]))); err != nil {
		t.Fatal(err)
	}
}

func TestMedianAndResults(t *testing.T) {
	if m := median([]float64{5, 1, 3}); m != 3 {
		t.Errorf("median = %v", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median = %v", m)
	}
	ms := func(xs ...int) []time.Duration {
		out := make([]time.Duration, len(xs))
		for i, x := range xs {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	faster3 := func(o, g float64) bool { return g >= 3*o }
	if r := timeResult("x", "x", ms(100, 90, 110), ms(300, 310, 290), "git", "", faster3); r.Status != statusPass || r.Ratio != 3 {
		t.Errorf("3x faster: %+v", r)
	}
	if r := timeResult("x", "x", ms(200), ms(300), "git", "", faster3); r.Status != statusFail || ratioText(r) != "1.5x faster" {
		t.Errorf("1.5x: %+v %q", r, ratioText(r))
	}
	if r := timeResult("x", "x", ms(200), ms(100), "git", "", nil); r.Status != statusInfo || ratioText(r) != "2.0x slower" {
		t.Errorf("info: %+v %q", r, ratioText(r))
	}
	if r := timeResult("x", "x", nil, ms(100), "git", "", faster3); r.Status != statusNA || ratioText(r) != "-" {
		t.Errorf("n/a: %+v", r)
	}
}

func TestDecodeCheckpoint(t *testing.T) {
	cp, err := decodeCheckpoint([]byte(`{"id":"01J","stored_bytes":42,"files":3,"bytes":9,"duration_ms":1.5}`))
	if err != nil || cp.ID != "01J" || cp.StoredBytes != 42 {
		t.Fatalf("%+v %v", cp, err)
	}
	cp, err = decodeCheckpoint([]byte(`{"checkpoint":{"id":"01K","stored_bytes":7}}`))
	if err != nil || cp.ID != "01K" || cp.StoredBytes != 7 {
		t.Fatalf("wrapped: %+v %v", cp, err)
	}
	for _, bad := range []string{``, `created`, `{"note":"x"}`} {
		if _, err := decodeCheckpoint([]byte(bad)); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

func TestReportText(t *testing.T) {
	rep := &report{Files: 10, Bytes: 2048, RealTree: &treeInfo{Source: "/go", Files: 15000, ChangedFiles: 150},
		History: &historyInfo{Module: "golang.org/x/net", Versions: []string{"v0.1.0", "v0.2.0"}}}
	rep.add(timeResult("a", "first checkpoint", []time.Duration{time.Second}, []time.Duration{4 * time.Second}, "git", ">= 3x faster",
		func(o, g float64) bool { return g >= 3*o }))
	rep.add(result{ID: "m", Name: "peak RSS", Unit: "MB", Ours: 12.5, Status: statusInfo, Note: "small run"})
	var buf bytes.Buffer
	if err := rep.writeText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"4.0x faster", "PASS", "12.5 MB", "small run", "1 passed, 0 failed, 1 info, 0 n/a",
		"real tree: a copy of /go, 15000 files", "a change edits 150 files", "2 releases of golang.org/x/net, v0.1.0..v0.2.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if err := rep.writeJSON(io.Discard); err != nil {
		t.Fatal(err)
	}
}

func TestParseFlags(t *testing.T) {
	if _, err := parseFlags([]string{"-files=5"}, io.Discard); err == nil {
		t.Error("-files=5 accepted")
	}
	if _, err := parseFlags([]string{"extra"}, io.Discard); err == nil {
		t.Error("a positional argument accepted")
	}
	if _, err := parseFlags([]string{"-only=prune"}, io.Discard); err == nil {
		t.Error("-only=prune accepted")
	}
	if cfg, err := parseFlags([]string{"-only=history"}, io.Discard); err != nil || !historyOnly(cfg.only) || agentsOnly(cfg.only) {
		t.Errorf("-only=history: %+v %v", cfg, err)
	}
	cfg, err := parseFlags([]string{"-files=100000", "-strict", "-json"}, io.Discard)
	if err != nil || cfg.files != 100000 || !cfg.strict || !cfg.jsonOut || cfg.runs != 3 {
		t.Errorf("%+v %v", cfg, err)
	}
}

func TestInitTime(t *testing.T) {
	trace := "init internal/bytealg @0.008 ms, 0 ms clock, 0 bytes, 0 allocs\n" +
		"init github.com/jinzhu/inflection @3.6 ms, 1.2 ms clock, 563928 bytes, 5683 allocs\n" +
		"plan version (devel)\n" +
		"init runtime @0.039 ms, 0.20 ms clock, 0 bytes, 0 allocs\n"
	if got := initTime([]byte(trace)); got != 1400*time.Microsecond {
		t.Fatalf("init time %v, want 1.4ms", got)
	}
}

func TestParseTimings(t *testing.T) {
	got, err := parseTimings([]byte("plan: warning: x\nplan: timings: {\"total\": 12.5, \"open\": 3.25}\n"))
	if err != nil || got["total"] != 12.5 || got["open"] != 3.25 {
		t.Fatalf("%v, %v", got, err)
	}
	if _, err := parseTimings([]byte("nothing here\n")); err == nil {
		t.Fatal("no timings line parsed")
	}
	if _, err := parseTimings([]byte("plan: timings: {broken\n")); err == nil {
		t.Fatal("a broken timings line parsed")
	}
}

// The session row names the phases whose medians changed most between the first and the last calls.
func TestPhaseGrowthOrdersByChange(t *testing.T) {
	first := []map[string]float64{{"commit": 5, "index.load": 0.3, "tiny": 0.01}, {"commit": 6, "index.load": 0.4}}
	last := []map[string]float64{{"commit": 5, "index.load": 2.3}, {"commit": 6, "index.load": 2.4, "new": 1}}
	got := phaseGrowth(first, last)
	want := "index.load 0.40 -> 2.40, new 0.00 -> 1.00, commit 6.00 -> 6.00"
	if got != want {
		t.Fatalf("phaseGrowth = %q, want %q", got, want)
	}
	if phaseGrowth(nil, nil) != "n/a" {
		t.Fatal("no phases")
	}
}

// The p95 row names what its slowest calls spend more on than the others.
func TestTailPhasesComparesTheSlowest(t *testing.T) {
	lat := []time.Duration{10, 11, 12, 50}
	phases := []map[string]float64{{"commit": 5}, {"commit": 5}, {"commit": 5}, {"commit": 6, "consolidate": 30}}
	if got, want := tailPhases(lat, phases), "consolidate 0.00 -> 30.00, commit 5.00 -> 6.00"; got != want {
		t.Fatalf("tailPhases = %q, want %q", got, want)
	}
	if tailPhases(lat, nil) != "n/a" {
		t.Fatal("calls without phases")
	}
}
