package objectstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The store's own state files must be readable: a damage list or a gc intent that cannot be read
// stops Open with an error, rather than being taken for "no damage known" (a damaged copy would be
// deduplicated onto) or "no gc under way" (packs half deleted would be loaded).
func TestUnreadableStateFilesStopOpen(t *testing.T) {
	for _, name := range []string{damagedFile, gcIntentFile} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			b := s.NewBatch()
			put(t, b, text(71, 1000))
			commit(t, b)
			s.Close()
			if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
				t.Fatal(err)
			}
			if s, err := Open(dir); err == nil {
				s.Close()
				t.Fatalf("Open with an unreadable %s succeeded", name)
			}
		})
	}
}

// A pack that cannot be examined (here a symlink loop where the pack should be) is an error, not
// a missing pack: a missing pack's objects are reported lost and its idx may be dropped.
func TestUnstattablePackStopsOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	loop := filepath.Join(dir, "packs", strings.Repeat("c", 32)+".pack")
	if err := os.Symlink(filepath.Base(loop), loop); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir)
	if err == nil {
		s.Close()
		t.Fatal("Open with an unstattable pack succeeded")
	}
	if !strings.Contains(err.Error(), filepath.Base(loop)) {
		t.Fatalf("the error does not name the pack: %v", err)
	}
}

// A damage-list line with a pack id and a hash field of the right length but not hex is skipped
// like a torn one, and the valid lines around it still count.
func TestDamageListSkipsNonHexHashes(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	h, _ := put(t, b, text(72, 1000))
	commit(t, b)
	pack := s.index.at(h).pack.id
	lines := pack + " " + strings.Repeat("zz", 32) + "\n" + pack + " " + h.String() + "\n"
	if err := os.WriteFile(filepath.Join(s.dir, damagedFile), []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	set, err := s.readDamaged()
	if err != nil {
		t.Fatal(err)
	}
	if len(set) != 1 {
		t.Fatalf("damage set %v, want only the valid line", set)
	}
	if _, ok := set[damageKey{pack, h}]; !ok {
		t.Fatalf("the valid line was lost: %v", set)
	}
}
