package persistence

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// BenchmarkAddCheckpoint measures what a checkpoint's row costs, alone and with its record (the
// record's write and fsyncs, its directory's fsync and the rename): the figure the records issue
// holds to a few percent of a checkpoint's time.
func BenchmarkAddCheckpoint(b *testing.B) {
	for _, withLedger := range []bool{false, true} {
		b.Run(fmt.Sprintf("ledger=%v", withLedger), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			var opts []Option
			if withLedger {
				recs, err := objectstore.OpenRecords(filepath.Join(dir, "objects"))
				if err != nil {
					b.Fatal(err)
				}
				opts = append(opts, WithLedger(recs))
			}
			db, err := Open(ctx, filepath.Join(dir, "plan.db"), true, opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = db.Close() }()
			repo := NewCheckpoints(db)
			b.ResetTimer()
			for i := range b.N {
				id := fmt.Sprintf("%024x", i+1)
				c, err := checkpoint.New(checkpoint.Params{ID: id, Type: checkpoint.Manual, CreatedAt: time.Unix(int64(i), 0), Root: tree.Sum([]byte(id))})
				if err != nil {
					b.Fatal(err)
				}
				if err := repo.Add(ctx, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRebuild1000 measures a rebuild of a database of 1,000 checkpoints from their records.
func BenchmarkRebuild1000(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	recs, err := objectstore.OpenRecords(filepath.Join(dir, "objects"))
	if err != nil {
		b.Fatal(err)
	}
	db, err := Open(ctx, filepath.Join(dir, "plan.db"), true, WithLedger(recs))
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1000 {
		id := fmt.Sprintf("%024x", i+1)
		c, _ := checkpoint.New(checkpoint.Params{ID: id, Type: checkpoint.Manual, CreatedAt: time.Unix(int64(i), 0), Root: tree.Sum([]byte(id))})
		if err := NewCheckpoints(db).Add(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	_ = db.Close()
	b.ResetTimer()
	for i := range b.N {
		if _, err := Rebuild(ctx, filepath.Join(dir, fmt.Sprintf("r%d.db", i)), recs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen measures what every command pays to open a workspace's database whose ledger
// holds 2,000 records (just under the compaction threshold), and to close it.
func BenchmarkOpen(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	recs, err := objectstore.OpenRecords(filepath.Join(dir, "objects"))
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "plan.db")
	db, err := Open(ctx, path, true, WithLedger(recs))
	if err != nil {
		b.Fatal(err)
	}
	repo := NewCheckpoints(db)
	for i := range 2000 {
		id := fmt.Sprintf("%024x", i+1)
		c, err := checkpoint.New(checkpoint.Params{ID: id, Type: checkpoint.Manual, CreatedAt: time.Unix(int64(i), 0), Root: tree.Sum([]byte(id))})
		if err != nil {
			b.Fatal(err)
		}
		if err := repo.Add(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		db, err := Open(ctx, path, false, WithLedger(recs))
		if err != nil {
			b.Fatal(err)
		}
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
