// Package checkpointtest is the behaviour every checkpoint.Repository must have, as one test suite
// that the gorm adapter and the use cases' in-memory fake both run, so the fake cannot drift from
// what production does (wild-workouts does the same). It lives in non-test files so both packages'
// tests can call it.
package checkpointtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// base is the creation time of the first checkpoint the suite makes.
var base = time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)

// New builds a valid checkpoint with id (24 hex characters) created n minutes after base.
func New(t testing.TB, id string, n int) *checkpoint.Checkpoint {
	t.Helper()
	c, err := checkpoint.New(checkpoint.Params{
		ID: id, Type: checkpoint.Manual, CreatedAt: base.Add(time.Duration(n) * time.Minute),
		Note: "note " + id, Root: tree.Sum([]byte(id)),
		Stats: checkpoint.Stats{Files: int64(n), Bytes: 10 * int64(n), StoredBytes: 3, Duration: 1500 * time.Microsecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ID returns the n-th test ID; IDs 1 and 2 share the prefix "aaaa", 3 does not.
func ID(n int) string {
	if n == 3 {
		return "bbbb" + fmt.Sprintf("%020d", n)
	}
	return "aaaa" + fmt.Sprintf("%020d", n)
}

// Repository runs the suite against fresh repositories made by newRepo.
func Repository(t *testing.T, newRepo func(t *testing.T) checkpoint.Repository) {
	ctx := context.Background()
	t.Run("add and get", func(t *testing.T) {
		r := newRepo(t)
		want := New(t, ID(1), 1)
		if err := r.Add(ctx, want); err != nil {
			t.Fatal(err)
		}
		got, err := r.Get(ctx, want.ID())
		if err != nil {
			t.Fatal(err)
		}
		if got.ID() != want.ID() || got.Type() != want.Type() || !got.CreatedAt().Equal(want.CreatedAt()) ||
			got.Note() != want.Note() || got.Root() != want.Root() || got.Stats() != want.Stats() || got.RollbackCount() != 0 {
			t.Fatalf("got %+v, want %+v", got, want)
		}
		if err := r.Add(ctx, New(t, ID(1), 5)); !errors.Is(err, fault.ErrConflict) {
			t.Fatalf("a duplicate ID: %v, want a conflict", err)
		}
		if _, err := r.Get(ctx, checkpoint.ID(ID(9))); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("a missing ID: %v", err)
		}
	})
	t.Run("resolve", func(t *testing.T) {
		r := newRepo(t)
		for i := 1; i <= 3; i++ {
			if err := r.Add(ctx, New(t, ID(i), i)); err != nil {
				t.Fatal(err)
			}
		}
		if c, err := r.Resolve(ctx, "bbbb"); err != nil || string(c.ID()) != ID(3) {
			t.Fatalf("a unique prefix: %v, %v", c, err)
		}
		if c, err := r.Resolve(ctx, ID(2)); err != nil || string(c.ID()) != ID(2) {
			t.Fatalf("a full ID: %v, %v", c, err)
		}
		if _, err := r.Resolve(ctx, "aaaa"); !errors.Is(err, fault.ErrInvalid) {
			t.Fatalf("an ambiguous prefix: %v, want invalid", err)
		}
		if _, err := r.Resolve(ctx, "cccc"); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("no match: %v", err)
		}
	})
	t.Run("list and latest", func(t *testing.T) {
		r := newRepo(t)
		if _, err := r.Latest(ctx); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("latest of none: %v", err)
		}
		if l, err := r.List(ctx); err != nil || len(l) != 0 {
			t.Fatalf("list of none: %v, %v", l, err)
		}
		for _, i := range []int{2, 1, 3} { // out of order
			if err := r.Add(ctx, New(t, ID(i), i)); err != nil {
				t.Fatal(err)
			}
		}
		l, err := r.List(ctx)
		if err != nil || len(l) != 3 || string(l[0].ID()) != ID(3) || string(l[2].ID()) != ID(1) {
			t.Fatalf("list: %v, %v; want newest first", l, err)
		}
		if c, err := r.Latest(ctx); err != nil || string(c.ID()) != ID(3) {
			t.Fatalf("latest: %v, %v", c, err)
		}
		ids, err := r.IDs(ctx)
		slices.Sort(ids)
		if err != nil || len(ids) != 3 || string(ids[0]) != ID(1) || string(ids[2]) != ID(3) {
			t.Fatalf("ids: %v, %v; want the three", ids, err)
		}
		since, err := r.ListSince(ctx, l[1].CreatedAt())
		if err != nil || len(since) != 2 || string(since[0].ID()) != ID(2) || string(since[1].ID()) != ID(3) {
			t.Fatalf("list since the second: %v, %v; want it and the third, oldest first", since, err)
		}
		if none, err := r.ListSince(ctx, l[0].CreatedAt().Add(time.Nanosecond)); err != nil || len(none) != 0 {
			t.Fatalf("list since after the newest: %v, %v", none, err)
		}
	})
	t.Run("update", func(t *testing.T) {
		r := newRepo(t)
		if err := r.Add(ctx, New(t, ID(1), 1)); err != nil {
			t.Fatal(err)
		}
		if err := r.Update(ctx, checkpoint.ID(ID(1)), func(c *checkpoint.Checkpoint) error {
			c.RecordRollback()
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("refused")
		if err := r.Update(ctx, checkpoint.ID(ID(1)), func(c *checkpoint.Checkpoint) error {
			c.RecordRollback()
			return boom
		}); !errors.Is(err, boom) {
			t.Fatalf("a failing update: %v", err)
		}
		if c, err := r.Get(ctx, checkpoint.ID(ID(1))); err != nil || c.RollbackCount() != 1 {
			t.Fatalf("after one update and one refused: %v, %v; want a count of 1", c, err)
		}
		if err := r.Update(ctx, checkpoint.ID(ID(9)), func(*checkpoint.Checkpoint) error { return nil }); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("update of a missing ID: %v", err)
		}
	})
	t.Run("delete", func(t *testing.T) {
		r := newRepo(t)
		if err := r.Add(ctx, New(t, ID(1), 1)); err != nil {
			t.Fatal(err)
		}
		if err := r.Delete(ctx, checkpoint.ID(ID(1))); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Get(ctx, checkpoint.ID(ID(1))); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("get after delete: %v", err)
		}
		if err := r.Delete(ctx, checkpoint.ID(ID(1))); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("delete of a missing ID: %v", err)
		}
	})
}
