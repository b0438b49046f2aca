package application

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// subtreeStore is fakeStore that reads one path of a tree (as the object store does), counting
// the whole-tree listings it is asked for.
type subtreeStore struct {
	*fakeStore
	flattens int
	subErr   error
}

func (s *subtreeStore) Flatten(root tree.Hash) ([]tree.Entry, error) {
	s.flattens++
	return s.fakeStore.Flatten(root)
}

func (s *subtreeStore) Subtree(root tree.Hash, path string) ([]tree.Entry, bool, error) {
	if s.subErr != nil {
		return nil, false, s.subErr
	}
	all, err := s.fakeStore.Flatten(root)
	if err != nil {
		return nil, false, err
	}
	sel := under(all, path)
	return sel, len(sel) > 0, nil
}

// cat and ls PATH read the path through the store's Subtree, never listing the whole checkpoint.
func TestEntriesOfAPathReadOnlyThatPath(t *testing.T) {
	e := newUseCaseEnv(t)
	e.setFile("a.txt", "alpha")
	ctx := context.Background()
	if _, err := e.cps.Create(ctx, CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	st := &subtreeStore{fakeStore: e.store}
	e.ops.store = st
	e.rewire()
	rs := NewReadService(e.ops, nil)
	_, ent, rc, err := rs.Open(ctx, "@", "a.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	_ = rc.Close()
	if string(b) != "alpha" || ent.Path != "a.txt" || st.flattens != 0 {
		t.Fatalf("cat: %q %+v, %d whole listings", b, ent, st.flattens)
	}
	if _, _, err := rs.Entries(ctx, "@", "nope"); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("missing path: %v", err)
	}
	if _, _, err := rs.Entries(ctx, "@", "../x"); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("invalid path: %v", err)
	}
	st.subErr = fault.Integrity("damaged tree")
	if _, _, err := rs.Entries(ctx, "@", "a.txt"); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("damaged store: %v", err)
	}
	if _, all, err := rs.Entries(ctx, "@", ""); err != nil || len(all) != 1 || st.flattens != 1 {
		t.Fatalf("whole checkpoint: %+v, %v", all, err)
	}
}

// A store that cannot read one path alone is listed whole, with the same answers.
func TestEntriesOfAPathWithoutSubtree(t *testing.T) {
	e := newUseCaseEnv(t)
	e.setFile("d/a.txt", "alpha")
	ctx := context.Background()
	if _, err := e.cps.Create(ctx, CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	rs := NewReadService(e.ops, nil)
	if _, sel, err := rs.Entries(ctx, "@", "d/a.txt"); err != nil || len(sel) != 1 || sel[0].Path != "d/a.txt" {
		t.Fatalf("path: %+v, %v", sel, err)
	}
	if _, _, err := rs.Entries(ctx, "@", "nope"); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("missing path: %v", err)
	}
	if _, _, err := rs.Entries(ctx, "@", "../x"); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("invalid path: %v", err)
	}
}
