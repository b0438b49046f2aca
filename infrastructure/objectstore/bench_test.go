package objectstore

import (
	"bytes"
	"io"
	"sync"
	"sync/atomic"
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
