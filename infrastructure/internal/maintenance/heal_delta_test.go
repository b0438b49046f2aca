package maintenance_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/tests/testkit"
)

// A file stored as a delta of its previous version whose base is then damaged: doctor --repair
// finds it (the delta cannot be rebuilt), stores the live file afresh, whole, and says the old
// version, which nothing intact holds any more, cannot be healed; the newer checkpoint reads back.
func TestDoctorRepairHealsADeltaWhoseBaseIsDamaged(t *testing.T) {
	dir := t.TempDir()
	v1 := testkit.Noise(7, 64<<10)
	v2 := bytes.Clone(v1)
	copy(v2[1000:], "an edit of the second version")
	ctx := context.Background()
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: dir, Init: true})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "data.bin")
	for _, v := range [][]byte{v1, v2} {
		if err := os.WriteFile(file, v, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := app.Services.Checkpoints.Create(ctx, application.CreateRequest{Note: "v"}); err != nil {
			t.Fatal(err)
		}
	}
	l := app.Services.Layout
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := objectstore.Open(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	info, ok := s.Info(tree.Sum(v2))
	_ = s.Close()
	if !ok || !info.Delta || info.StoredSize > 1000 {
		t.Fatalf("the second version is stored as %+v, want a small delta", info)
	}
	testkit.DamageStored(t, filepath.Join(l.Objects(), "packs"), v1)
	if _, err := storedContent(t, l, tree.Sum(v2)); err == nil {
		t.Fatal("the delta still reads with its base damaged")
	}

	r := maintenance.Doctor(ctx, maintenance.PrivateTarget(l), true)
	f := finding(t, r, "store healing")
	if !strings.Contains(f.Problem, "1 object(s) healed; 1 have no intact copy anywhere (e.g. "+tree.Sum(v1).String()+")") {
		t.Fatalf("heal finding %+v", f)
	}
	got, err := storedContent(t, l, tree.Sum(v2))
	if err != nil || !bytes.Equal(got, v2) {
		t.Fatalf("the second version after repair: %d bytes, %v", len(got), err)
	}
}

// Three versions, each a delta of the one before, the first damaged, the third live: the repair
// stores the third afresh (healed), and the second, which nothing intact holds, is named with the
// first as having no intact copy, though only the first's record is damaged.
func TestDoctorRepairNamesADeltaItCannotHeal(t *testing.T) {
	dir := t.TempDir()
	v1 := testkit.Noise(8, 64<<10)
	v2 := bytes.Clone(v1)
	copy(v2[1000:], "an edit of the second version")
	v3 := bytes.Clone(v2)
	copy(v3[3000:], "an edit of the third version")
	ctx := context.Background()
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: dir, Init: true})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "data.bin")
	for _, v := range [][]byte{v1, v2, v3} {
		if err := os.WriteFile(file, v, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := app.Services.Checkpoints.Create(ctx, application.CreateRequest{Note: "v"}); err != nil {
			t.Fatal(err)
		}
	}
	l := app.Services.Layout
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.DamageStored(t, filepath.Join(l.Objects(), "packs"), v1)
	r := maintenance.Doctor(ctx, maintenance.PrivateTarget(l), true)
	f := finding(t, r, "store healing")
	if !strings.Contains(f.Problem, "1 object(s) healed; 2 have no intact copy anywhere") {
		t.Fatalf("heal finding %+v", f)
	}
	got, err := storedContent(t, l, tree.Sum(v3))
	if err != nil || !bytes.Equal(got, v3) {
		t.Fatalf("the live version after repair: %d bytes, %v", len(got), err)
	}
}
