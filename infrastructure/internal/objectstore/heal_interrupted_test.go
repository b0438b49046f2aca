package objectstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
)

// healSetup stores a blob, damages its copy, and stores a fresh one: RetireHealed then has one pack
// to rewrite without the damaged record.
func healSetup(t *testing.T) (*Store, tree.Hash, []byte, tree.Hash, []byte) {
	t.Helper()
	s := TestStore(t)
	d, otherD := text(91, 5000), text(92, 3000)
	b := s.NewBatch()
	h, _ := put(t, b, d)
	other, _ := put(t, b, otherD)
	commit(t, b)
	flipData(t, s, h, 10)
	if problems, _ := s.ScanPacks(); len(problems) == 0 {
		t.Fatal("setup: no damage found")
	}
	nb := s.NewBatch()
	put(t, nb, d)
	commit(t, nb)
	return s, h, d, other, otherD
}

// RetireHealed stopped before its rewrite is committed, or once its deletion intent is durable,
// loses nothing: every object reads back, the damage stays listed until the retirement completes,
// and a second run (after the next lock holder finished any interrupted deletion) completes it.
func TestRetireHealedInterrupted(t *testing.T) {
	for _, point := range []string{"store.pack-installed", "gc.intent"} {
		t.Run(point, func(t *testing.T) {
			s, h, d, other, otherD := healSetup(t)
			failAt(s, point)
			if _, err := s.RetireHealed(); !errors.Is(err, errCrash) {
				t.Fatalf("RetireHealed stopped at %s: %v", point, err)
			}
			s.Failpoint = nil
			if err := s.Refresh(); err != nil {
				t.Fatal(err)
			}
			mustRead(t, s, h, d)
			mustRead(t, s, other, otherD)
			rep, err := s.RetireHealed()
			if err != nil {
				t.Fatal(err)
			}
			if point == "store.pack-installed" && (len(rep.Healed) != 1 || rep.Healed[0] != h) {
				t.Fatalf("second run: %+v", rep)
			}
			mustRead(t, s, h, d)
			mustRead(t, s, other, otherD)
			if problems, err := s.ScanPacks(); err != nil || len(problems) != 0 {
				t.Fatalf("after the completed retirement: %v, %v", problems, err)
			}
			// The damage list names no copy that still exists (a line for the deleted pack is
			// harmless: pack ids are never reused), and the object is whole again.
			set, err := s.readDamaged()
			if err != nil {
				t.Fatal(err)
			}
			for k := range set {
				if _, err := os.Stat(filepath.Join(s.packsDir, k.pack+".pack")); err == nil {
					t.Fatalf("the damage list still names a copy that exists: %v", k)
				}
			}
			if !s.Present(h) {
				t.Fatal("the healed object is not Present")
			}
		})
	}
}

// An idx with a valid checksum that points at the wrong offsets is still reported by ScanPacks:
// the records are compared with what the pack holds, not trusted.
func TestScanPacksCatchesAnIdxWithWrongOffsets(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	h, _ := put(t, b, text(93, 2000))
	put(t, b, text(94, 2000))
	commit(t, b)
	p := s.index.at(h).pack
	idxPath := filepath.Join(s.packsDir, p.id+".idx")
	raw, err := os.ReadFile(idxPath)
	if err != nil {
		t.Fatal(err)
	}
	entries, version, err := decodeIdx(raw)
	if err != nil {
		t.Fatal(err)
	}
	entries[0].offset++
	os.Chmod(idxPath, 0o600)
	if err := os.WriteFile(idxPath, encodeIdx(entries, version), 0o600); err != nil {
		t.Fatal(err)
	}
	problems, err := s.ScanPacks()
	if err != nil || len(problems) != 1 || problems[0].Problem != "idx does not describe the pack's records" {
		t.Fatalf("ScanPacks: %+v, %v", problems, err)
	}
}

// A pack replaced by a directory after it was indexed is damage to whatever is read from it, an
// integrity error, never content.
func TestPackReplacedByADirectory(t *testing.T) {
	f := newFixture(t)
	s := f.open(t)
	if err := os.Remove(f.smallPack); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(f.smallPack, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := readBlob(s, f.small)
	faulttest.Require(t, err, fault.ErrIntegrity, "read from a pack that is a directory")
	faulttest.Require(t, s.CheckObject(f.small, false), fault.ErrIntegrity, "CheckObject of a pack that is a directory")
}
