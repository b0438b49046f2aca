package objectstore

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/planhq/plan/domain/tree"
)

// BenchmarkOpen measures what every command pays to open a store of 100k objects: one pack
// holding most of them (a first checkpoint) and 30 small ones (later checkpoints).
func BenchmarkOpen(b *testing.B) {
	dir := b.TempDir()
	s, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	put := func(n, from int) {
		batch := s.NewBatch()
		for i := from; i < from+n; i++ {
			var raw [64]byte
			binary.BigEndian.PutUint64(raw[:], uint64(i))
			if _, err := batch.PutBlob(bytes.NewReader(raw[:]), tree.Sum(raw[:]), int64(len(raw))); err != nil {
				b.Fatal(err)
			}
		}
		if err := batch.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	put(97_000, 0)
	for i := range 30 {
		put(100, 97_000+i*100)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	var probe [64]byte
	binary.BigEndian.PutUint64(probe[:], 5)
	h := tree.Sum(probe[:])
	for b.Loop() {
		s, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		if !s.Present(h) {
			b.Fatal("object missing")
		}
		_ = s.Close()
	}
}
