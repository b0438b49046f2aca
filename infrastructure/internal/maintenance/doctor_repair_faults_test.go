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
	"github.com/planhq/plan/tests/testkit"
)

// When doctor --repair cannot bring the store up to date (here objects/tmp holds a leftover it may
// not remove), the store is reported once, as failing, with advice that fits the cause; it is
// never also reported ok, and nothing is healed on top of a store doctor could not refresh.
func TestDoctorRepairReportsAStoreItCannotRefresh(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	tmp := filepath.Join(l.Objects(), "tmp")
	leftover := filepath.Join(tmp, "0123456789abcdef.pack")
	if err := os.WriteFile(leftover, []byte("half a pack"), 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.Immutable(t, tmp)

	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), true)
	f := finding(t, r, "store")
	if r.OK || f.OK || !strings.Contains(f.Problem, "clean object store temp") || !strings.Contains(f.Problem, "operation not permitted") {
		t.Fatalf("report ok=%v, store finding %+v", r.OK, f)
	}
	if strings.Contains(f.Repair, ".idx") || !strings.Contains(f.Repair, "a directory it can write") {
		t.Fatalf("advice for a store directory plan cannot write: %q", f.Repair)
	}
	if hasFinding(r, "store healing") {
		t.Fatalf("doctor healed a store it could not refresh: %+v", r.Findings)
	}
	if b, err := os.ReadFile(leftover); err != nil || string(b) != "half a pack" {
		t.Fatalf("the leftover changed: %q, %v", b, err)
	}

	// Once the directory is writable again, the same repair succeeds and leaves nothing behind.
	testkit.Mutable(t, tmp)
	if r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), true); !r.OK {
		t.Fatalf("repair once writable: %+v", r.Findings)
	}
	if entries, err := os.ReadDir(tmp); err != nil || len(entries) != 0 {
		t.Fatalf("objects/tmp after the repair: %d entries, %v", len(entries), err)
	}
}

// A heal that cannot store the intact copy it found (the store cannot be written) reports the
// failure, fails the report, and leaves the damaged object as it was: nothing claims it healed.
// Once the store is writable, the same repair heals it byte for byte.
func TestDoctorRepairReportsAHealItCannotStore(t *testing.T) {
	ctx := context.Background()
	content := testkit.Noise(7, 64<<10)
	l := correctedAway(t, content, "big.bin")
	// A checkpoint of the workspace as it now is, so reading it for intact copies stores nothing:
	// the archive is what the heal has to store from.
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: l.Root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Services.Checkpoints.Create(ctx, application.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.DamageStored(t, filepath.Join(l.Objects(), "packs"), content)
	tmp := filepath.Join(l.Objects(), "tmp")
	testkit.Immutable(t, tmp)

	r := maintenance.Doctor(ctx, maintenance.PrivateTarget(l), true)
	f := finding(t, r, "store healing")
	if r.OK || f.OK || f.Repaired || !strings.Contains(f.Problem, "read the archive for intact copies") {
		t.Fatalf("report ok=%v, heal finding %+v", r.OK, f)
	}
	if _, err := storedContent(t, l, tree.Sum(content)); err == nil {
		t.Fatal("the damaged object reads back whole although nothing could be stored")
	}

	testkit.Mutable(t, tmp)
	r = maintenance.Doctor(ctx, maintenance.PrivateTarget(l), true)
	if f := finding(t, r, "store healing"); !r.OK || !f.Repaired {
		t.Fatalf("repair once writable: %+v", r.Findings)
	}
	if got, err := storedContent(t, l, tree.Sum(content)); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("the healed object reads %d bytes, %v", len(got), err)
	}
}

// An empty index doctor --repair cannot remove (the packs directory is immutable) is reported as
// a failing index check, not as repaired, and the index is left for the next repair.
func TestDoctorRepairReportsAnIndexItCannotRemove(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	idx := packFiles(t, l, "idx")[0]
	if err := os.Truncate(idx, 0); err != nil {
		t.Fatal(err)
	}
	packs := filepath.Join(l.Objects(), "packs")
	testkit.Immutable(t, packs)

	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), true)
	f := finding(t, r, "pack indexes")
	if r.OK || f.OK || f.Repaired || !strings.Contains(f.Problem, "operation not permitted") {
		t.Fatalf("report ok=%v, index finding %+v", r.OK, f)
	}
	if fi, err := os.Stat(idx); err != nil || fi.Size() != 0 {
		t.Fatalf("the index changed: %v, %v", fi, err)
	}

	testkit.Mutable(t, packs)
	if r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), true); !r.OK {
		t.Fatalf("repair once writable: %+v", r.Findings)
	}
}
