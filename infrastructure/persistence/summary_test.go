package persistence

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/objectstore"
)

// dbRoots is what the workspace's own gc keeps, read from the database.
func dbRoots(t *testing.T, db *DB) (roots []tree.Hash, n int, last time.Time) {
	t.Helper()
	ctx := context.Background()
	cps, err := NewCheckpoints(db).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cps {
		roots = append(roots, c.Root())
		if c.CreatedAt().After(last) {
			last = c.CreatedAt()
		}
	}
	plans, err := NewPlans(db).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range plans {
		for _, d := range p.Decisions() {
			for _, a := range d.Attempts() {
				if !a.ResultTree.IsZero() && a.Status != plan.Reverted {
					roots = append(roots, a.ResultTree)
				}
			}
		}
	}
	sortHashes(roots)
	return roots, len(cps), last
}

// The records alone say what the database says a gc must keep, through deletions, reverts and
// compactions; pending records add their trees as maybe-roots.
func TestSummarizeLedgerMatchesTheDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	recs, err := objectstore.OpenRecords(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, filepath.Join(dir, "plan.db"), true, WithLedger(recs))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	rng := rand.New(rand.NewPCG(3, 5))
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	var cps []checkpoint.ID
	var p *plan.Plan
	for i := range 150 {
		now := base.Add(time.Duration(i) * time.Minute)
		switch rng.IntN(6) {
		case 0, 1:
			id := fmt.Sprintf("%016x%08x", i, rng.Uint32())
			c, err := checkpoint.New(checkpoint.Params{ID: id, Type: checkpoint.Manual, CreatedAt: now, Root: tree.Sum([]byte(id))})
			if err != nil {
				t.Fatal(err)
			}
			if err := NewCheckpoints(db).Add(ctx, c); err != nil {
				t.Fatal(err)
			}
			cps = append(cps, checkpoint.ID(id))
		case 2:
			if len(cps) > 0 {
				k := rng.IntN(len(cps))
				if err := NewCheckpoints(db).Delete(ctx, cps[k]); err != nil {
					t.Fatal(err)
				}
				cps = slices.Delete(cps, k, k+1)
			}
		case 3, 4:
			if p == nil {
				if p, err = plan.New(fmt.Sprintf("%024d", i), "p", "", true, now); err != nil {
					t.Fatal(err)
				}
			}
			d, err := p.Append(plan.Definition{ID: fmt.Sprintf("d%d", i), Run: "true"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Start(d.ID(), "", "", now); err != nil {
				t.Fatal(err)
			}
			code := 0
			if err := p.Finish(d.ID(), plan.Outcome{Status: plan.Succeeded, ExitCode: &code, ResultTree: tree.Sum([]byte{byte(i), 1})}, now); err != nil {
				t.Fatal(err)
			}
			if err := NewPlans(db).Save(ctx, p); err != nil {
				t.Fatal(err)
			}
		case 5:
			if p != nil {
				p.RevertStartedSince(now.Add(-20*time.Minute), fmt.Sprintf("op%d", i))
				if err := NewPlans(db).Save(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
		}
		if i == 90 {
			if _, err := db.Compact(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if i%25 != 24 {
			continue
		}
		want, n, last := dbRoots(t, db)
		s, err := SummarizeLedger(recs)
		if err != nil {
			t.Fatal(err)
		}
		listed, err := NewCheckpoints(db).List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(listed) != len(s.List) {
			t.Fatalf("%d checkpoints listed from the records, %d in the database", len(s.List), len(listed))
		}
		for k, c := range listed {
			if got := s.List[k]; got.ID != string(c.ID()) || got.Root != c.Root() || !got.CreatedAt.Equal(c.CreatedAt()) || got.Type != string(c.Type()) {
				t.Fatalf("checkpoint %d: records say %+v, the database %s %s %v", k, got, c.ID(), c.Root(), c.CreatedAt())
			}
		}
		if !slices.Equal(s.Roots, want) || s.Checkpoints != n || !s.LastCheckpoint.Equal(last) || len(s.MaybeRoots) != 0 {
			t.Fatalf("after %d operations: summary roots %d, checkpoints %d, last %v, maybe %d; database roots %d, checkpoints %d, last %v",
				i+1, len(s.Roots), s.Checkpoints, s.LastCheckpoint, len(s.MaybeRoots), len(want), n, last)
		}
	}
	// A pending record (a transaction that may be committing): its trees are maybe-roots.
	body := []byte(`{"format":1,"seq":99999,"at":"2026-01-01T00:00:00Z","schema":1,"changes":[{"kind":"checkpoint","key":"x","rows":{"checkpoints":[{"id":"x","root_tree":"` +
		tree.Sum([]byte("pending")).String() + `"}]}}]}`)
	if _, err := recs.Prepare(99999, body); err != nil {
		t.Fatal(err)
	}
	s, err := SummarizeLedger(recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.MaybeRoots) != 1 || s.MaybeRoots[0] != tree.Sum([]byte("pending")) {
		t.Fatalf("maybe-roots of a pending record: %v", s.MaybeRoots)
	}
}

// A damaged record is damage, not something to skip: a gc must not collect around it.
func TestSummarizeLedgerRefusesDamage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	recs, err := objectstore.OpenRecords(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, filepath.Join(dir, "plan.db"), true, WithLedger(recs))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	c, _ := checkpoint.New(checkpoint.Params{ID: fmt.Sprintf("%024d", 1), Type: checkpoint.Manual, CreatedAt: time.Now(), Root: tree.Sum([]byte("r"))})
	if err := NewCheckpoints(db).Add(ctx, c); err != nil {
		t.Fatal(err)
	}
	names, _ := recs.Committed()
	corrupt(t, filepath.Join(dir, "objects", "records", names[0]))
	if _, err := SummarizeLedger(recs); err == nil || !isIntegrity(err) {
		t.Fatalf("a damaged record: %v", err)
	}
}

func isIntegrity(err error) bool { return fault.Kind(err) == fault.ErrIntegrity }

// corrupt flips one byte in the middle of the file at p.
func corrupt(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x55
	_ = os.Chmod(p, 0o600)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
