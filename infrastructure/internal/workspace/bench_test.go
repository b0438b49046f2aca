package workspace

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// benchFiles is the size of the benchmark workspaces: PLAN_BENCH_FILES, or 10,000.
func benchFiles() int {
	if n, err := strconv.Atoi(os.Getenv("PLAN_BENCH_FILES")); err == nil && n > 0 {
		return n
	}
	return 10000
}

// benchWS is a workspace shaped like the bench command's generated one: about 35 files a
// directory, three levels deep, sizes from 200 bytes to 20 KB.
type benchWS struct {
	l     Layout
	store *objectstore.Store
	sc    *Scanner
	r     *Restorer
	files []string
}

func newBenchWS(b *testing.B, n int) *benchWS {
	b.Helper()
	l, err := NewLayout(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Init(); err != nil {
		b.Fatal(err)
	}
	store, err := objectstore.Open(l.Objects())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	w := &benchWS{l: l, store: store, sc: NewScanner(l, store)}
	w.r = NewRestorer(l, store, w.sc)
	w.r.Failpoint = func(string) error { return nil }
	rng := rand.New(rand.NewPCG(1, 2)) // #nosec G404 -- test data
	dirs := max(1, n/35)
	sizes := []int{200, 1000, 3000, 8000, 20000}
	buf := make([]byte, 20000)
	for i := range n {
		d := i % dirs
		rel := fmt.Sprintf("pkg%d/mod%d/d%d/file%d.go", d%10, (d/10)%10, d/100, i)
		p := filepath.Join(l.Root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		size := sizes[rng.IntN(len(sizes))]
		for j := range size {
			buf[j] = 'a' + byte(rng.IntN(26))
		}
		if err := os.WriteFile(p, buf[:size], 0o644); err != nil { // #nosec G306 -- test data
			b.Fatal(err)
		}
		w.files = append(w.files, rel)
	}
	return w
}

// cpuTime is the CPU time the process has used (user and system): on a shared, noisy machine a
// steadier measure than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per operation since start (setup done between StopTimer and
// StartTimer is counted too, so keep it small or measure it apart).
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/op")
}

func (w *benchWS) snapshot(b *testing.B) tree.Hash {
	b.Helper()
	s, err := w.sc.Snapshot(b.Context(), nil)
	if err != nil {
		b.Fatal(err)
	}
	return s.Root
}

// change rewrites 1% of the files with new content (generation gen).
func (w *benchWS) change(b *testing.B, gen int) {
	b.Helper()
	step := 100
	for i := gen % step; i < len(w.files); i += step {
		p := filepath.Join(w.l.Root, filepath.FromSlash(w.files[i]))
		if err := os.WriteFile(p, fmt.Appendf(nil, "generation %d of %s\n", gen, w.files[i]), 0o644); err != nil { // #nosec G306 -- test data
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshotNoChange is the no-change checkpoint's snapshot: walk, stat cache, trees.
func BenchmarkSnapshotNoChange(b *testing.B) {
	w := newBenchWS(b, benchFiles())
	first := w.snapshot(b)
	w.snapshot(b) // settle the stat cache (entries racy at the first snapshot)
	w.snapshot(b)
	start := cpuTime()
	defer reportCPU(b, start)
	for b.Loop() {
		if h := w.snapshot(b); h != first {
			b.Fatalf("root %s, want %s", h, first)
		}
	}
}

// BenchmarkSnapshotChange is a snapshot after 1% of the files changed.
func BenchmarkSnapshotChange(b *testing.B) {
	w := newBenchWS(b, benchFiles())
	w.snapshot(b)
	w.snapshot(b)
	gen := 0
	for b.Loop() {
		b.StopTimer()
		gen++
		w.change(b, gen)
		b.StartTimer()
		w.snapshot(b)
	}
}

// BenchmarkRollback is a 1% change rolled back: the safety snapshot, the diff and the restore.
func BenchmarkRollback(b *testing.B) {
	w := newBenchWS(b, benchFiles())
	base := w.snapshot(b)
	w.snapshot(b)
	gen := 0
	for b.Loop() {
		b.StopTimer()
		gen++
		w.change(b, gen)
		b.StartTimer()
		backup := w.snapshot(b)
		if _, err := w.r.Apply(b.Context(), backup, base, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApply is the restore of a 1% change alone (the safety snapshot is taken untimed).
func BenchmarkApply(b *testing.B) {
	w := newBenchWS(b, benchFiles())
	base := w.snapshot(b)
	w.snapshot(b)
	gen := 0
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		gen++
		w.change(b, gen)
		backup := w.snapshot(b)
		start := cpuTime()
		b.StartTimer()
		if _, err := w.r.Apply(b.Context(), backup, base, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += cpuTime() - start
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
}
