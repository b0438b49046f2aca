package objectstore

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/planhq/plan/domain/tree"
)

// BenchmarkFirstCheckpoint stores a 10k-file, ~90 MB source-like workspace with two workers, the
// shape of a first checkpoint.
func BenchmarkFirstCheckpoint(b *testing.B) {
	const nfiles = 10_000
	data := make([][]byte, nfiles)
	hashes := make([]tree.Hash, nfiles)
	var total int64
	for i := range data {
		data[i] = text(uint64(i), 1000+(i*7919)%17000)
		hashes[i] = tree.Sum(data[i])
		total += int64(len(data[i]))
	}
	b.SetBytes(total)
	b.ResetTimer()
	for range b.N {
		s, err := Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		batch := s.NewBatch()
		var next atomic.Int64
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= nfiles {
						return
					}
					if _, err := batch.PutBlob(bytes.NewReader(data[i]), hashes[i], int64(len(data[i]))); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		for d := 0; d < 500; d++ {
			var tr Tree
			for k := d * 20; k < d*20+20; k++ {
				tr = append(tr, TreeEntry{Name: string(rune('a'+k%20)) + "x", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(data[k])), Hash: hashes[k]})
			}
			if _, _, err := batch.PutTree(tr); err != nil {
				b.Fatal(err)
			}
		}
		t0 := time.Now()
		if err := batch.Commit(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(t0).Milliseconds()), "commit-ms")
		st := s.Stats()
		b.ReportMetric(float64(st.StoredBytes)/float64(total), "ratio")
		s.Close()
	}
}

// BenchmarkLargeBlob streams one 64 MiB blob in and out.
func BenchmarkLargeBlob(b *testing.B) {
	const size = 64 << 20
	data := text(1, size)
	h := tree.Sum(data)
	b.SetBytes(size)
	for range b.N {
		s, err := Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		batch := s.NewBatch()
		t0 := time.Now()
		if _, err := batch.PutBlob(bytes.NewReader(data), h, size); err != nil {
			b.Fatal(err)
		}
		if err := batch.Commit(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(t0).Milliseconds()), "put-ms")
		t0 = time.Now()
		r, err := s.OpenBlob(h)
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, r); err != nil || n != size {
			b.Fatal(n, err)
		}
		r.Close()
		b.ReportMetric(float64(time.Since(t0).Milliseconds()), "read-ms")
		s.Close()
	}
}

// BenchmarkTreeDelta measures a 35-entry directory changed in one entry: stored whole and as a
// delta of its previous version (sizes as metrics), the cost of each put, and of reading a tree
// at the end of a chain of each depth.
func BenchmarkTreeDelta(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	base := randomDirs(r, dirTree(r, 35))
	edits := make([]Tree, 4096)
	for i := range edits {
		edits[i] = editOne(r, base)
	}
	setup := func(b *testing.B) (*Store, tree.Hash) {
		s := TestStore(b)
		batch := s.NewBatch()
		h, _, err := batch.PutTree(base)
		if err != nil {
			b.Fatal(err)
		}
		commit(b, batch)
		return s, h
	}
	for _, mode := range []string{"whole", "delta"} {
		b.Run("put-"+mode, func(b *testing.B) {
			s, h := setup(b)
			batch := s.NewBatch()
			defer batch.Abort()
			var stored int64
			i := 0
			for b.Loop() {
				tr := edits[i%len(edits)]
				if i >= len(edits) {
					tr = editOne(r, base) // past the prepared ones, a fresh edit (rare)
				}
				i++
				var n int64
				var err error
				if mode == "whole" {
					_, n, err = batch.PutTree(tr)
				} else {
					_, n, err = batch.PutTreeDelta(tr, h)
				}
				if err != nil {
					b.Fatal(err)
				}
				stored += n
			}
			b.ReportMetric(float64(stored)/float64(i), "stored-B/op")
		})
	}
	b.Run("encode-only", func(b *testing.B) {
		enc0, _ := EncodeTree(base)
		enc1, _ := EncodeTree(edits[0])
		var dst []byte
		for b.Loop() {
			dst, _ = encodeWithDict(enc1, enc0, dst[:0])
		}
		b.ReportMetric(float64(len(dst)), "frame-B")
	})
	for _, depth := range []int{0, 1, maxDeltaDepth} {
		b.Run(fmt.Sprintf("read-depth-%d", depth), func(b *testing.B) {
			s, h := setup(b)
			tr := base
			for range depth {
				tr = editOne(r, tr)
				batch := s.NewBatch()
				h, _, _ = batch.PutTreeDelta(tr, h)
				commit(b, batch)
			}
			for b.Loop() {
				if _, err := s.ReadTree(h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPutModified stores new versions of 9 KB source-like files whose content is rewritten
// whole (the bench's 1% change: same vocabulary, nothing else in common) or edited (a few lines
// changed), as PutBlob (whole) and as PutBlobDelta against the previous version.
func BenchmarkPutModified(b *testing.B) {
	const n = 200
	for _, change := range []string{"rewritten", "edited"} {
		for _, mode := range []string{"whole", "delta"} {
			b.Run(change+"/"+mode, func(b *testing.B) {
				s := TestStore(b)
				r := rand.New(rand.NewPCG(3, 4))
				olds, news := make([][]byte, n), make([][]byte, n)
				bases := make([]tree.Hash, n)
				batch := s.NewBatch()
				for i := range olds {
					olds[i] = text(uint64(i), 9000)
					bases[i] = tree.Sum(olds[i])
					if _, err := batch.PutBlob(bytes.NewReader(olds[i]), bases[i], int64(len(olds[i]))); err != nil {
						b.Fatal(err)
					}
					if change == "rewritten" {
						news[i] = text(uint64(i+n), 9000)
					} else {
						news[i] = bytes.Clone(olds[i])
						copy(news[i][r.IntN(8000):], "edited here")
					}
				}
				commit(b, batch)
				var stored int64
				puts := 0
				cpu0 := cpuTime()
				for b.Loop() {
					batch := s.NewBatch()
					for i, d := range news {
						d = append(bytes.Clone(d), byte(puts)) // a new object every round
						base := tree.ZeroHash
						if mode == "delta" {
							base = bases[i]
						}
						m, err := batch.PutBlobDelta(bytes.NewReader(d), tree.Sum(d), int64(len(d)), base)
						if err != nil {
							b.Fatal(err)
						}
						stored += m
						puts++
					}
					batch.Abort()
				}
				b.ReportMetric(float64(stored)/float64(puts), "stored-B/file")
				b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(puts), "cpu-µs/file")
			})
		}
	}
}

// cpuTime is the CPU time the process has used: on a loaded machine it varies far less than the
// wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
