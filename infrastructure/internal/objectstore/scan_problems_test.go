package objectstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ScanPacks names each kind of damage it finds after the store was opened, pack by pack, instead of
// stopping at the first or calling the store clean: an idx that is damaged, missing, or describes
// other records than its pack holds, and a pack whose structure is broken.
func TestScanPacksNamesEveryDamage(t *testing.T) {
	for name, tc := range map[string]struct {
		damage func(t *testing.T, s *Store, pack, idx, otherIdx string)
		want   string
	}{
		"idx flipped": {func(t *testing.T, s *Store, pack, idx, _ string) { writeAt(idx, 20, 0xff) }, "idx is damaged"},
		"idx removed": {func(t *testing.T, s *Store, pack, idx, _ string) {
			if err := os.Remove(idx); err != nil {
				t.Fatal(err)
			}
		}, "cannot read the idx"},
		"idx of another pack": {func(t *testing.T, s *Store, pack, idx, otherIdx string) {
			b, err := os.ReadFile(otherIdx)
			if err != nil {
				t.Fatal(err)
			}
			os.Chmod(idx, 0o600)
			if err := os.WriteFile(idx, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "idx does not describe the pack's records"},
		"pack magic": {func(t *testing.T, s *Store, pack, idx, _ string) { writeAt(pack, 0, 'X') }, "pack structure is damaged"},
		"pack is a directory": {func(t *testing.T, s *Store, pack, idx, _ string) {
			if err := os.Remove(pack); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(pack, 0o700); err != nil {
				t.Fatal(err)
			}
		}, "pack structure is damaged"},
	} {
		t.Run(name, func(t *testing.T) {
			s := TestStore(t)
			b := s.NewBatch()
			h, _ := put(t, b, text(61, 3000))
			commit(t, b)
			b = s.NewBatch()
			other, _ := put(t, b, text(62, 4000))
			put(t, b, text(63, 4000))
			commit(t, b)
			p := s.index.at(h).pack
			idx := filepath.Join(s.packsDir, p.id+".idx")
			otherIdx := filepath.Join(s.packsDir, s.index.at(other).pack.id+".idx")
			tc.damage(t, s, p.path, idx, otherIdx)
			problems, err := s.ScanPacks()
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) == 0 {
				t.Fatal("damage was not reported")
			}
			for _, pr := range problems {
				if pr.Pack != p.id {
					t.Fatalf("a healthy pack was reported: %+v", pr)
				}
			}
			if !strings.Contains(problems[0].Problem, tc.want) {
				t.Fatalf("problems %+v, want %q", problems, tc.want)
			}
		})
	}
}
