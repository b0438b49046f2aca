package objectstore

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
)

// Once every damaged copy is retired, the damage list goes too: verify --read-data is clean again,
// and the healed object reads back byte for byte from its fresh copy.
func TestRetireHealedClearsTheDamageList(t *testing.T) {
	s := TestStore(t)
	d := text(51, 5000)
	b := s.NewBatch()
	h, _ := put(t, b, d)
	put(t, b, text(52, 3000))
	commit(t, b)
	flipData(t, s, h, 10)
	if problems, _ := s.ScanPacks(); len(problems) == 0 {
		t.Fatal("setup: the flipped record was not found")
	}
	if _, err := os.Stat(filepath.Join(s.dir, damagedFile)); err != nil {
		t.Fatalf("setup: no damage list: %v", err)
	}
	nb := s.NewBatch()
	put(t, nb, d)
	commit(t, nb)
	rep, err := s.RetireHealed()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Healed, []tree.Hash{h}) || len(rep.Unhealed) != 0 || rep.PacksRewritten != 1 {
		t.Fatalf("report %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(s.dir, damagedFile)); !os.IsNotExist(err) {
		t.Fatalf("the damage list outlived the damage: %v", err)
	}
	if problems, err := s.ScanPacks(); err != nil || len(problems) != 0 {
		t.Fatalf("after healing: %v, %v", problems, err)
	}
	mustRead(t, s, h, d)
}

// A missing pack's idx stays while an object it lists has no copy elsewhere (verify must still name
// that object), and a damage line for a pack that no longer exists is ignored.
func TestRetireHealedKeepsWhatIsNotHealed(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	lost, _ := put(t, b, text(53, 4000))
	commit(t, b)
	p := s.index.at(lost).pack
	if err := os.Remove(p.path); err != nil {
		t.Fatal(err)
	}
	stale := strings.Repeat("e", 32) + " " + tree.Sum([]byte("gone")).String() + "\n"
	if err := os.WriteFile(filepath.Join(s.dir, damagedFile), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	rep, err := s.RetireHealed()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Unhealed, []tree.Hash{lost}) || len(rep.Healed) != 0 || rep.IdxDropped != 0 || rep.PacksRewritten != 0 {
		t.Fatalf("report %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(s.packsDir, p.id+".idx")); err != nil {
		t.Fatalf("the idx naming an unhealed object was dropped: %v", err)
	}
	if !s.Has(lost) {
		t.Fatal("the lost object is no longer listed, so verify cannot name it")
	}
}

// The idx of a missing pack that is itself damaged stops RetireHealed with an integrity error: it
// cannot tell what the pack held, so it retires nothing.
func TestRetireHealedRefusesADamagedIdxOfAMissingPack(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	h, _ := put(t, b, text(54, 4000))
	commit(t, b)
	p := s.index.at(h).pack
	if err := os.Remove(p.path); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	writeAt(filepath.Join(s.packsDir, p.id+".idx"), 20, 0xff)
	_, err := s.RetireHealed()
	faulttest.Require(t, err, fault.ErrIntegrity, "RetireHealed with a damaged idx")
	if !strings.Contains(err.Error(), p.id+".idx") {
		t.Fatalf("the error does not name the idx: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.packsDir, p.id+".idx")); err != nil {
		t.Fatalf("the damaged idx was removed: %v", err)
	}
}
