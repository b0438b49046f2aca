package objectstore

import "testing"

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
