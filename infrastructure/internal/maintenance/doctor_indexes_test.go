package maintenance_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/infrastructure/internal/maintenance"
)

// idxFiles lists the idx files of the file:// store in dir.
func idxFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "packs", "*.idx"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no idx in %s: %v", dir, err)
	}
	return m
}

func sgFinding(r maintenance.Report, check string) (maintenance.Finding, bool) {
	for _, f := range r.Findings {
		if f.Check == check {
			return f, true
		}
	}
	return maintenance.Finding{}, false
}

// A shared store's pack whose idx was deleted: doctor reports it (its checkpoint's data is not
// gone, only unindexed) and --repair indexes it from the pack's own records.
func TestDoctorIndexesASharedPackThatLostItsIdx(t *testing.T) {
	ctx := context.Background()
	store := t.TempDir()
	app := onStore(t, store, "alpha\n")
	for _, p := range idxFiles(t, store) {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	tg := sharedTarget(t, app)
	r := maintenance.Doctor(ctx, tg, false)
	f, ok := sgFinding(r, "pack indexes")
	if r.OK || !ok || f.OK || !strings.Contains(f.Problem, "without an index") || !strings.Contains(f.Repair, "doctor --repair") {
		t.Fatalf("doctor: %+v", r)
	}
	if c, ok := sgFinding(r, "checkpoints"); !ok || !strings.Contains(c.Repair, "indexes any pack") {
		t.Fatalf("doctor's advice for the checkpoints: %+v", c)
	}
	r = maintenance.Doctor(ctx, sharedTarget(t, app), true)
	if f, ok := sgFinding(r, "pack indexes"); !r.OK || !ok || !f.Repaired {
		t.Fatalf("doctor --repair: %+v", r)
	}
	if r := maintenance.Doctor(ctx, sharedTarget(t, app), false); !r.OK {
		t.Fatalf("doctor after the repair: %+v", r)
	}
}

// A shared store's damaged idx keeps the store from opening; doctor's advice is --repair (never
// to delete it), and --repair rebuilds it from the pack.
func TestDoctorRebuildsADamagedSharedIdx(t *testing.T) {
	ctx := context.Background()
	store := t.TempDir()
	app := onStore(t, store, "alpha\n")
	for _, p := range idxFiles(t, store) {
		_ = os.Chmod(p, 0o600)
		if err := os.WriteFile(p, []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := maintenance.Doctor(ctx, sharedTarget(t, app), false)
	f, ok := sgFinding(r, "store")
	if r.OK || !ok || !strings.Contains(f.Repair, "doctor --repair") || strings.Contains(f.Repair, "delete") {
		t.Fatalf("doctor: %+v", r)
	}
	r = maintenance.Doctor(ctx, sharedTarget(t, app), true)
	if f, ok := sgFinding(r, "pack indexes"); !r.OK || !ok || !f.Repaired || !strings.Contains(f.Problem, "damaged index") {
		t.Fatalf("doctor --repair: %+v", r)
	}
	if r := maintenance.Doctor(ctx, sharedTarget(t, app), false); !r.OK {
		t.Fatalf("doctor after the repair: %+v", r)
	}
}

// Files named like packs that are not packs: --repair keeps them and says so; a damaged idx
// whose pack is not a pack either is left as it is.
func TestDoctorQuarantinesWhatIsNoPack(t *testing.T) {
	ctx := context.Background()
	store := t.TempDir()
	app := onStore(t, store, "alpha\n")
	foreign := filepath.Join(store, "packs", "0123456789abcdef0123456789abcdef")
	if err := os.WriteFile(foreign+".pack", []byte("their data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := maintenance.Doctor(ctx, sharedTarget(t, app), true)
	f, ok := sgFinding(r, "pack indexes")
	if r.OK || !ok || f.OK || !strings.Contains(f.Problem, "cannot be read as packs") {
		t.Fatalf("doctor --repair with a foreign pack: %+v", r)
	}
	if err := os.WriteFile(foreign+".idx", []byte("their index\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = maintenance.Doctor(ctx, sharedTarget(t, app), true)
	f, ok = sgFinding(r, "pack indexes")
	if r.OK || !ok || f.OK || !strings.Contains(f.Problem, "damaged too") {
		t.Fatalf("doctor --repair with a foreign pack and idx: %+v", r)
	}
	for _, p := range []string{foreign + ".pack", foreign + ".idx"} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("doctor removed %s: %v", p, err)
		}
	}
}

// What keeps the repairs from running is reported: packs/ that cannot be listed.
func TestDoctorRepairIndexesUnlistable(t *testing.T) {
	ctx := context.Background()
	store := t.TempDir()
	app := onStore(t, store, "alpha\n")
	packs := filepath.Join(store, "packs")
	if err := os.RemoveAll(packs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(packs, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := maintenance.Doctor(ctx, sharedTarget(t, app), true)
	if f, ok := sgFinding(r, "pack indexes"); r.OK || !ok || f.OK {
		t.Fatalf("doctor --repair with packs/ unlistable: %+v", r)
	}
}
