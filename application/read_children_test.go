package application

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// childrenStore is subtreeStore that also lists one directory alone, counting how often.
type childrenStore struct {
	*subtreeStore
	children int
}

func (s *childrenStore) Children(root tree.Hash, path string) ([]tree.Entry, bool, error) {
	s.children++
	if s.subErr != nil {
		return nil, false, s.subErr
	}
	all, err := s.fakeStore.Flatten(root)
	if err != nil {
		return nil, false, err
	}
	if path == "" {
		return direct(all, ""), true, nil
	}
	sel := direct(under(all, path), path)
	return sel, len(sel) > 0, nil
}

func entryPaths(es []tree.Entry) string {
	var p []string
	for _, e := range es {
		p = append(p, e.Path)
	}
	return strings.Join(p, " ")
}

// ls PATH reads one directory through the store's Children when it has it, and otherwise keeps
// the direct content of the whole listing: the same entries either way.
func TestChildrenOfAPath(t *testing.T) {
	e := newUseCaseEnv(t)
	e.setFile("d/a.txt", "alpha")
	e.setFile("d/e/b.txt", "beta")
	e.setFile("top.txt", "top")
	ctx := context.Background()
	if _, err := e.cps.Create(ctx, CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	// The fake store lists files alone, no directories.
	want := map[string]string{"": "top.txt", "d": "d/a.txt", "d/e": "d/e/b.txt", "d/a.txt": "d/a.txt"}
	plain := NewReadService(e.ops, nil)
	for path, w := range want {
		if _, got, err := plain.Children(ctx, "@", path); err != nil || entryPaths(got) != w {
			t.Fatalf("without Children, %q: %q, %v; want %q", path, entryPaths(got), err, w)
		}
	}
	if _, _, err := plain.Children(ctx, "@", "nope"); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("without Children, a missing path: %v", err)
	}

	st := &childrenStore{subtreeStore: &subtreeStore{fakeStore: e.store}}
	e.ops.store = st
	e.rewire()
	rs := NewReadService(e.ops, nil)
	for path, w := range want {
		if _, got, err := rs.Children(ctx, "@", path); err != nil || entryPaths(got) != w {
			t.Fatalf("%q: %q, %v; want %q", path, entryPaths(got), err, w)
		}
	}
	if st.children != len(want) || st.flattens != 0 {
		t.Fatalf("%d Children, %d whole listings", st.children, st.flattens)
	}
	if _, _, err := rs.Children(ctx, "@", "nope"); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("missing path: %v", err)
	}
	if _, _, err := rs.Children(ctx, "@", "../x"); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("invalid path: %v", err)
	}
	if _, _, err := rs.Children(ctx, "nosuch", "d"); !errors.Is(err, fault.ErrNotFound) && !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("unknown checkpoint: %v", err)
	}
	st.subErr = fault.Integrity("damaged tree")
	if _, _, err := rs.Children(ctx, "@", "d"); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("damaged store: %v", err)
	}
}
