package persistence

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

const (
	corr1 = "0000000000010000000000c1"
	corr2 = "0000000000020000000000c2"
	corr3 = "0000000000020000000000c3"
)

func newCorrection(t *testing.T, id string, at time.Time) *correction.Correction {
	t.Helper()
	c, err := correction.New(correction.Params{
		ID: id, DecisionID: "build", Reason: "wrong flags", Command: "make -j1",
		Scope: []correction.Item{
			{
				DecisionID: "build", Attempt: 2, CheckpointID: checkpoint.ID(id1), ResultTree: tree.Sum([]byte("after build")),
				StartedAt: at.Add(-time.Minute).UTC(),
				Artifacts: []artifact.Artifact{
					{Path: "out/bin", Change: tree.Added, Size: 42, SHA256: strings.Repeat("a", 64)},
					{Path: "old.txt", Change: tree.Deleted},
				},
			},
			// An attempt whose result was not recorded keeps the zero hash, not a made-up one.
			{DecisionID: "test", Attempt: 1, CheckpointID: checkpoint.ID(id2), StartedAt: at.Add(-time.Second).UTC()},
		},
		SafetyCheckpointID: id2, RollbackCheckpointID: id1, ArchiveDir: "archive/" + id,
		CreatedAt: at.UTC(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sameCorrection(t *testing.T, got, want *correction.Correction) {
	t.Helper()
	if !reflect.DeepEqual(got.Params(), want.Params()) {
		t.Fatalf("params:\n got  %+v\n want %+v", got.Params(), want.Params())
	}
	if got.Status() != want.Status() || !got.FinishedAt().Equal(want.FinishedAt()) ||
		!slicesEqual(got.Reexecuted(), want.Reexecuted()) {
		t.Fatalf("state: got %s %v %v, want %s %v %v", got.Status(), got.FinishedAt(), got.Reexecuted(),
			want.Status(), want.FinishedAt(), want.Reexecuted())
	}
}

func slicesEqual(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}

// A correction comes back exactly as it was stored, scope, artifacts and hashes included: recovery
// and `plan corrections` rely on the scope to know which attempts were reverted.
func TestCorrectionsRoundTrip(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		repo := NewCorrections(e.open(t))
		at := time.Unix(1_700_000_000, 123456789)
		c := newCorrection(t, corr1, at)
		if err := repo.Add(ctx, c); err != nil {
			t.Fatal(err)
		}
		got, err := repo.Get(ctx, corr1)
		if err != nil {
			t.Fatal(err)
		}
		sameCorrection(t, got, c)
		if got.Params().Scope[1].ResultTree != (tree.Hash{}) {
			t.Fatalf("an unrecorded result tree came back as %v", got.Params().Scope[1].ResultTree)
		}
		if got.FinishedAt() != (time.Time{}) {
			t.Fatalf("an unfinished correction has FinishedAt %v", got.FinishedAt())
		}
		// The same ID twice is a conflict, and the stored correction is untouched.
		if err := repo.Add(ctx, newCorrection(t, corr1, at.Add(time.Hour))); !errors.Is(err, fault.ErrConflict) {
			t.Fatalf("duplicate add: %v", err)
		}
		if got, _ := repo.Get(ctx, corr1); !got.Params().CreatedAt.Equal(at) {
			t.Fatalf("a refused duplicate changed the stored correction: %v", got.Params().CreatedAt)
		}
		if _, err := repo.Get(ctx, corr2); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("get missing: %v", err)
		}
	})
}

// Update applies the change in one transaction; an error from fn leaves the stored correction as it
// was; status, re-executed decisions and the finish time survive.
func TestCorrectionsUpdate(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		repo := NewCorrections(e.open(t))
		at := time.Unix(1_700_000_000, 0)
		if err := repo.Add(ctx, newCorrection(t, corr1, at)); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		err := repo.Update(ctx, corr1, func(c *correction.Correction) error {
			if err := c.StartReexecution(); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("update error: %v", err)
		}
		if got, _ := repo.Get(ctx, corr1); got.Status() != correction.Reverted {
			t.Fatalf("a failed update was saved: %s", got.Status())
		}
		finished := at.Add(time.Hour).UTC()
		err = repo.Update(ctx, corr1, func(c *correction.Correction) error {
			if err := c.StartReexecution(); err != nil {
				return err
			}
			c.RecordReexecuted("build")
			c.RecordReexecuted("test")
			return c.Finish(true, finished)
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := repo.Get(ctx, corr1)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status() != correction.Succeeded || !got.FinishedAt().Equal(finished) || !reflect.DeepEqual(got.Reexecuted(), []string{"build", "test"}) {
			t.Fatalf("after update: %s %v %v", got.Status(), got.FinishedAt(), got.Reexecuted())
		}
		if err := repo.Update(ctx, corr2, func(*correction.Correction) error { return nil }); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("update of a missing correction: %v", err)
		}
	})
}

// List is newest first; Resolve takes a unique prefix and names the candidates of an ambiguous one.
func TestCorrectionsListAndResolve(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		repo := NewCorrections(e.open(t))
		if cs, err := repo.List(ctx); err != nil || len(cs) != 0 {
			t.Fatalf("empty list: %v, %v", cs, err)
		}
		at := time.Unix(1_700_000_000, 0)
		for i, id := range []string{corr1, corr2, corr3} {
			if err := repo.Add(ctx, newCorrection(t, id, at.Add(time.Duration(i)*time.Minute))); err != nil {
				t.Fatal(err)
			}
		}
		cs, err := repo.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range cs {
			ids = append(ids, c.ID())
		}
		if !reflect.DeepEqual(ids, []string{corr3, corr2, corr1}) {
			t.Fatalf("list order %v", ids)
		}
		if c, err := repo.Resolve(ctx, "00000000000100"); err != nil || c.ID() != corr1 {
			t.Fatalf("resolve unique prefix: %v, %v", c, err)
		}
		_, err = repo.Resolve(ctx, "00000000000200")
		if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), corr2) || !strings.Contains(err.Error(), corr3) {
			t.Fatalf("ambiguous prefix: %v", err)
		}
		if _, err := repo.Resolve(ctx, "ffff"); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("unknown prefix: %v", err)
		}
	})
}

// A stored correction whose scope, record of re-executed decisions or result tree was damaged is
// an integrity error naming it, from Get, Resolve and List alike: never a half-read correction.
func TestDamagedCorrectionIsIntegrity(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		for _, tc := range []struct{ name, column, value, want string }{
			{"scope", "scope", "{not json", "damaged scope"},
			{"reexecuted", "reexecuted", "[1,", "damaged record"},
			{"result tree", "scope", `[{"decision_id":"build","attempt":2,"result_tree":"zz"}]`, "result tree of build attempt 2"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				db := e.open(t)
				repo := NewCorrections(db)
				if err := repo.Add(ctx, newCorrection(t, corr1, time.Unix(1_700_000_000, 0))); err != nil {
					t.Fatal(err)
				}
				if err := db.gorm.Exec(`UPDATE corrections SET `+tc.column+` = ?`, tc.value).Error; err != nil {
					t.Fatal(err)
				}
				check := func(what string, err error) {
					t.Helper()
					if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), corr1) {
						t.Fatalf("%s of a damaged correction: %v", what, err)
					}
				}
				_, err := repo.Get(ctx, corr1)
				check("Get", err)
				_, err = repo.Resolve(ctx, corr1[:8])
				check("Resolve", err)
				_, err = repo.List(ctx)
				check("List", err)
				check("Update", repo.Update(ctx, corr1, func(*correction.Correction) error {
					t.Fatal("fn ran on a damaged correction")
					return nil
				}))
			})
		}
	})
}
