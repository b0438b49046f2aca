package persistence

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/ident"
)

// A surgical correction keeps its kind and conflicts; a full one reads back as full (the column's
// default is what corrections stored before kinds existed get).
func TestCorrectionKindsRoundTrip(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		repo := NewCorrections(e.open(t))
		now := time.Unix(1700000000, 0).UTC()
		p := correction.Params{
			ID: ident.New(now), DecisionID: "d", Reason: "r", Scope: []correction.Item{{DecisionID: "d", Attempt: 1}},
			SafetyCheckpointID: "s", RollbackCheckpointID: "p", ArchiveDir: "/a", CreatedAt: now,
			Conflicts: []correction.Conflict{{Path: "cfg", Why: "overlap", Written: "cfg"}, {Path: "img", Why: "binary"}},
		}
		s, err := correction.NewSurgical(p, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.Add(ctx, s); err != nil {
			t.Fatal(err)
		}
		got, err := repo.Get(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Kind() != correction.Surgical || got.Status() != correction.Succeeded || !slices.Equal(got.Params().Conflicts, p.Conflicts) {
			t.Fatalf("read back %s %s %v", got.Kind(), got.Status(), got.Params().Conflicts)
		}
		full := p
		full.ID, full.Conflicts = ident.New(now.Add(time.Second)), nil
		f, err := correction.New(full)
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.Add(ctx, f); err != nil {
			t.Fatal(err)
		}
		if err := repo.db.conn(ctx).Exec(`UPDATE corrections SET kind = 'full', conflicts = '[]' WHERE id = ?`, full.ID).Error; err != nil {
			t.Fatal(err)
		}
		got, err = repo.Get(ctx, full.ID)
		if err != nil || got.Kind() != correction.Full || got.NeedsAttention() {
			t.Fatalf("full: %v %v", got, err)
		}
	})
}
