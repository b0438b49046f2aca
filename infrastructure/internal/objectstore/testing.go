package objectstore

import (
	"fmt"
	"testing"

	"github.com/planhq/plan/domain/tree"
)

// TestStore opens a store in a fresh t.TempDir() and closes it when the test ends. It lives in a
// non-test file so that other packages' tests can use it.
func TestStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatalf("open object store: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close object store: %v", err)
		}
	})
	return s
}

// MarkDamagedForTest records the copy of h the index points at as damaged, as a read that found it
// so does (in memory, and in the damaged-object list other processes read).
func (s *Store) MarkDamagedForTest(h tree.Hash) error {
	if err := s.Load(); err != nil {
		return err
	}
	l, ok := s.lookup(h)
	if !ok {
		return fmt.Errorf("object %s is not in the store", h)
	}
	s.markDamaged(h, l)
	return nil
}
