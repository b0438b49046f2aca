package objectstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An idx path that cannot be read as a file (a directory sits there) stops Open: it is neither
// taken for a missing idx (and rebuilt over) nor skipped.
func TestUnreadableIdxStopsOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	h, _ := put(t, b, text(95, 1000))
	commit(t, b)
	idx := filepath.Join(s.packsDir, s.index.at(h).pack.id+".idx")
	s.Close()
	if err := os.Remove(idx); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(idx, 0o700); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(dir); err == nil {
		s.Close()
		t.Fatal("Open with an idx that is a directory succeeded")
	} else if !strings.Contains(err.Error(), idx) {
		t.Fatalf("the error does not name the idx: %v", err)
	}
}
