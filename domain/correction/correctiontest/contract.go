// Package correctiontest is the behaviour every correction.Repository must have, as one test suite
// that the gorm adapter and the use cases' in-memory fake both run, so the fake cannot drift from
// what production does (checkpointtest does the same for checkpoints). It lives in non-test files
// so both packages' tests can call it.
package correctiontest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// base is the creation time of the first correction the suite makes: not UTC, with nanoseconds.
var base = time.Date(2025, 6, 1, 14, 0, 0, 123456789, time.FixedZone("CEST", 2*3600))

// ID returns the n-th test ID (24 hex characters); IDs 1 and 2 share the prefix "aaaa", 3 does not.
func ID(n int) string {
	if n == 3 {
		return "bbbb" + fmt.Sprintf("%020d", n)
	}
	return "aaaa" + fmt.Sprintf("%020d", n)
}

// params are a full correction's fields, created n minutes after base, every one of them set.
func params(id string, n int) correction.Params {
	at := base.Add(time.Duration(n) * time.Minute)
	return correction.Params{
		ID: id, DecisionID: "build", Reason: "build was wrong: " + id, Command: "make build-fixed",
		Scope: []correction.Item{
			{
				DecisionID: "build", Attempt: 2, CheckpointID: checkpoint.ID("cccc" + id[4:]), ResultTree: tree.Sum([]byte(id)),
				StartedAt: at.Add(-time.Hour),
				Artifacts: []artifact.Artifact{
					{Path: "bin/app", Change: tree.Added, Size: 10, SHA256: tree.Sum([]byte("app")).String()},
					{Path: "gone", Change: tree.Deleted, Size: 3, SHA256: tree.Sum([]byte("gone")).String()},
				},
			},
			{DecisionID: "test", Attempt: 1, StartedAt: at.Add(-time.Minute)}, // no checkpoint, no result, no artifacts
		},
		SafetyCheckpointID: "dddd" + id[4:], RollbackCheckpointID: "cccc" + id[4:], ArchiveDir: "/archive/" + id,
		CreatedAt: at,
	}
}

// New builds a valid full correction with id created n minutes after base.
func New(t testing.TB, id string, n int) *correction.Correction {
	t.Helper()
	c, err := correction.New(params(id, n))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// surgical builds a surgical correction with conflicts, one of them resolved.
func surgical(t testing.TB, id string, n int) *correction.Correction {
	t.Helper()
	p := params(id, n)
	p.Command, p.Scope = "", p.Scope[:1]
	p.Conflicts = []correction.Conflict{
		{Path: "a.go", Why: "both changed it", Written: "a.go"},
		{Path: "b.go", Why: "deleted since", Written: "b.go.reverted"},
		{Path: "c.go", Why: "binary"},
	}
	c, err := correction.NewSurgical(p, p.CreatedAt.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Resolve("b.go", p.CreatedAt.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	return c
}

// Same fails t unless got is want as a repository should give it back: every field, times to the
// nanosecond (as UTC); nil and empty lists are the same.
func Same(t testing.TB, got, want *correction.Correction) {
	t.Helper()
	if err := diff(got, want); err != nil {
		t.Fatalf("correction %s: %v", want.ID(), err)
	}
}

func utc(a, b time.Time) bool {
	return a.Equal(b) && a.IsZero() == b.IsZero() && a.Location() == time.UTC
}

func diff(got, want *correction.Correction) error {
	g, w := got.Params(), want.Params()
	switch {
	case g.ID != w.ID || g.DecisionID != w.DecisionID || g.Reason != w.Reason || g.Command != w.Command:
		return fmt.Errorf("got %q %q %q %q, want %q %q %q %q", g.ID, g.DecisionID, g.Reason, g.Command, w.ID, w.DecisionID, w.Reason, w.Command)
	case g.SafetyCheckpointID != w.SafetyCheckpointID || g.RollbackCheckpointID != w.RollbackCheckpointID || g.ArchiveDir != w.ArchiveDir:
		return fmt.Errorf("checkpoints and archive %q %q %q, want %q %q %q", g.SafetyCheckpointID, g.RollbackCheckpointID, g.ArchiveDir,
			w.SafetyCheckpointID, w.RollbackCheckpointID, w.ArchiveDir)
	case !utc(g.CreatedAt, w.CreatedAt):
		return fmt.Errorf("created at %v, want %v in UTC", g.CreatedAt, w.CreatedAt)
	case got.Kind() != want.Kind() || got.Status() != want.Status() || got.ShownStatus() != want.ShownStatus():
		return fmt.Errorf("kind, status %s %s (%s), want %s %s (%s)", got.Kind(), got.Status(), got.ShownStatus(), want.Kind(), want.Status(), want.ShownStatus())
	case !slices.Equal(got.Reexecuted(), want.Reexecuted()):
		return fmt.Errorf("re-executed %v, want %v", got.Reexecuted(), want.Reexecuted())
	case !got.FinishedAt().Equal(want.FinishedAt()) || got.FinishedAt().IsZero() != want.FinishedAt().IsZero() ||
		(!got.FinishedAt().IsZero() && got.FinishedAt().Location() != time.UTC):
		return fmt.Errorf("finished at %v, want %v", got.FinishedAt(), want.FinishedAt())
	case len(g.Scope) != len(w.Scope):
		return fmt.Errorf("%d items in scope, want %d", len(g.Scope), len(w.Scope))
	case len(g.Conflicts) != len(w.Conflicts):
		return fmt.Errorf("%d conflicts, want %d", len(g.Conflicts), len(w.Conflicts))
	}
	for i := range w.Scope {
		a, b := g.Scope[i], w.Scope[i]
		if a.DecisionID != b.DecisionID || a.Attempt != b.Attempt || a.CheckpointID != b.CheckpointID || a.ResultTree != b.ResultTree ||
			!utc(a.StartedAt, b.StartedAt) || !slices.Equal(a.Artifacts, b.Artifacts) {
			return fmt.Errorf("scope item %d: got %+v, want %+v", i, a, b)
		}
	}
	for i := range w.Conflicts {
		a, b := g.Conflicts[i], w.Conflicts[i]
		if a.Path != b.Path || a.Why != b.Why || a.Written != b.Written || !a.ResolvedAt.Equal(b.ResolvedAt) ||
			a.ResolvedAt.IsZero() != b.ResolvedAt.IsZero() {
			return fmt.Errorf("conflict %d: got %+v, want %+v", i, a, b)
		}
	}
	return nil
}

// Repository runs the suite against fresh repositories made by newRepo.
func Repository(t *testing.T, newRepo func(t *testing.T) correction.Repository) {
	ctx := context.Background()
	get := func(t *testing.T, r correction.Repository, id string) *correction.Correction {
		t.Helper()
		c, err := r.Get(ctx, id)
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		return c
	}
	t.Run("add and get", func(t *testing.T) {
		r := newRepo(t)
		full, surg := New(t, ID(1), 1), surgical(t, ID(2), 2)
		for _, c := range []*correction.Correction{full, surg} {
			if err := r.Add(ctx, c); err != nil {
				t.Fatal(err)
			}
			Same(t, get(t, r, c.ID()), c)
		}
		if got := get(t, r, surg.ID()); !got.NeedsAttention() || len(got.Unresolved()) != 2 {
			t.Fatalf("the surgical correction's conflicts: %+v", got.Unresolved())
		}
		if err := r.Add(ctx, New(t, ID(1), 5)); !errors.Is(err, fault.ErrConflict) {
			t.Fatalf("a duplicate ID: %v, want a conflict", err)
		}
		Same(t, get(t, r, ID(1)), full)
		if _, err := r.Get(ctx, ID(9)); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("a missing ID: %v, want not found", err)
		}
	})
	t.Run("resolve", func(t *testing.T) {
		r := newRepo(t)
		for i := 1; i <= 3; i++ {
			if err := r.Add(ctx, New(t, ID(i), i)); err != nil {
				t.Fatal(err)
			}
		}
		if c, err := r.Resolve(ctx, "bbbb"); err != nil || c.ID() != ID(3) {
			t.Fatalf("a unique prefix: %v, %v", c, err)
		}
		if c, err := r.Resolve(ctx, ID(2)); err != nil || c.ID() != ID(2) {
			t.Fatalf("a full ID: %v, %v", c, err)
		} else {
			Same(t, c, New(t, ID(2), 2))
		}
		if _, err := r.Resolve(ctx, "aaaa"); !errors.Is(err, fault.ErrInvalid) {
			t.Fatalf("an ambiguous prefix: %v, want invalid", err)
		}
		if _, err := r.Resolve(ctx, "cccc"); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("no match: %v, want not found", err)
		}
	})
	t.Run("list newest first", func(t *testing.T) {
		r := newRepo(t)
		if l, err := r.List(ctx); err != nil || len(l) != 0 {
			t.Fatalf("list of none: %v, %v", l, err)
		}
		// Created in the order 3, 1, 2: the list follows creation, not the IDs.
		for i, id := range []string{ID(3), ID(1), ID(2)} {
			if err := r.Add(ctx, New(t, id, 10+i)); err != nil {
				t.Fatal(err)
			}
		}
		l, err := r.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range l {
			got = append(got, c.ID())
		}
		if want := []string{ID(2), ID(1), ID(3)}; !slices.Equal(got, want) {
			t.Fatalf("list %v, want %v: newest first", got, want)
		}
		Same(t, l[0], New(t, ID(2), 12))
	})
	t.Run("update", func(t *testing.T) {
		r := newRepo(t)
		if err := r.Add(ctx, New(t, ID(1), 1)); err != nil {
			t.Fatal(err)
		}
		finished := base.Add(time.Hour)
		if err := r.Update(ctx, ID(1), func(c *correction.Correction) error {
			if err := c.StartReexecution(); err != nil {
				return err
			}
			c.RecordReexecuted("build")
			c.RecordReexecuted("test")
			return c.Finish(false, finished)
		}); err != nil {
			t.Fatal(err)
		}
		want := correction.Rehydrate(params(ID(1), 1), correction.Failed, []string{"build", "test"}, finished)
		Same(t, get(t, r, ID(1)), want)
		// An update that fails changes nothing, whatever it did to the correction before failing.
		boom := errors.New("refused")
		if err := r.Update(ctx, ID(1), func(c *correction.Correction) error {
			c.RecordReexecuted("ship")
			return boom
		}); !errors.Is(err, boom) {
			t.Fatalf("a failing update: %v, want its error", err)
		}
		Same(t, get(t, r, ID(1)), want)
		if err := r.Update(ctx, ID(9), func(*correction.Correction) error { return nil }); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("update of a missing ID: %v, want not found", err)
		}
	})
	t.Run("update resolves conflicts", func(t *testing.T) {
		r := newRepo(t)
		c := surgical(t, ID(1), 1)
		if err := r.Add(ctx, c); err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"a.go", "c.go"} {
			if err := r.Update(ctx, ID(1), func(c *correction.Correction) error { return c.Resolve(path, base.Add(2*time.Hour)) }); err != nil {
				t.Fatal(err)
			}
		}
		got := get(t, r, ID(1))
		if got.NeedsAttention() || got.ShownStatus() != string(correction.Succeeded) {
			t.Fatalf("after resolving every conflict: %s, unresolved %+v", got.ShownStatus(), got.Unresolved())
		}
		for _, x := range got.Params().Conflicts {
			if x.ResolvedAt.IsZero() {
				t.Fatalf("conflict %s is not resolved", x.Path)
			}
		}
		// Resolving it again is the correction's refusal, and is not stored.
		if err := r.Update(ctx, ID(1), func(c *correction.Correction) error { return c.Resolve("a.go", base.Add(3*time.Hour)) }); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("resolving a resolved conflict: %v, want not found", err)
		}
		Same(t, get(t, r, ID(1)), got)
	})
	t.Run("what a caller holds is not the stored correction", func(t *testing.T) {
		r := newRepo(t)
		c := New(t, ID(1), 1)
		if err := r.Add(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := get(t, r, ID(1)).StartReexecution(); err != nil { // changed, never saved
			t.Fatal(err)
		}
		if err := c.StartReexecution(); err != nil { // changed after it was added
			t.Fatal(err)
		}
		if got := get(t, r, ID(1)); got.Status() != correction.Reverted {
			t.Fatalf("the store has it %s: a change not saved through Update reached it", got.Status())
		}
	})
}
