package persistence

import (
	"context"
	"testing"
	"time"

	"github.com/planhq/plan/domain/correction"
)

// A resolved conflict keeps when it was resolved across a save and a read.
func TestConflictResolvedAtRoundTrips(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		db := e.open(t)
		repo := NewCorrections(db)
		c := newCorrection(t, corr1, time.Unix(1_700_000_000, 0))
		p := c.Params()
		p.Scope = p.Scope[:1]
		p.Conflicts = []correction.Conflict{{Path: "a", Why: "w", Written: "a"}, {Path: "b", Why: "w"}}
		s, err := correction.NewSurgical(p, time.Unix(1_700_000_001, 0))
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.Add(ctx, s); err != nil {
			t.Fatal(err)
		}
		at := time.Unix(1_700_000_500, 42).UTC()
		if err := repo.Update(ctx, corr1, func(x *correction.Correction) error { return x.Resolve("a", at) }); err != nil {
			t.Fatal(err)
		}
		got, err := repo.Get(ctx, corr1)
		if err != nil {
			t.Fatal(err)
		}
		cs := got.Params().Conflicts
		if len(cs) != 2 || !cs[0].ResolvedAt.Equal(at) || !cs[1].ResolvedAt.IsZero() || len(got.Unresolved()) != 1 {
			t.Fatalf("%+v", cs)
		}
	})
}
