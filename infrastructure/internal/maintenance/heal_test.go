package maintenance_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/workspace"
	"github.com/planhq/plan/tests/testkit"
)

// storedContent reads object h from the workspace's store.
func storedContent(t *testing.T, l workspace.Layout, h tree.Hash) ([]byte, error) {
	t.Helper()
	s, err := objectstore.Open(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	rc, err := s.OpenBlob(h)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }()
	return io.ReadAll(rc)
}

// correctedAway returns a workspace whose only intact copy of content is in a correction's
// archive: a decision wrote it to path, a correction without re-execution reverted the decision
// (archiving the file and removing it from the workspace), and the source it was copied from is gone.
func correctedAway(t *testing.T, content []byte, path string) workspace.Layout {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "seed.bin"), content, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: dir, Init: true})
	if err != nil {
		t.Fatal(err)
	}
	cmd := "mkdir -p \"$(dirname '" + path + "')\" && cp seed.bin '" + path + "'"
	if _, err := app.Services.Plans.Exec(ctx, application.ExecRequest{ID: "copy", Command: cmd}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Services.Corrections.Correct(ctx, application.CorrectRequest{DecisionID: "copy", Reason: "wrong", NoReexecute: true}); err != nil {
		t.Fatal(err)
	}
	l := app.Services.Layout
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the correction left %s in the workspace: %v", path, err)
	}
	if err := os.Remove(filepath.Join(dir, "seed.bin")); err != nil {
		t.Fatal(err)
	}
	return l
}

// An object damaged after a correction heals from the correction's archive: the wrong outputs a
// correction keeps are intact copies like any other.
func TestDoctorRepairHealsFromTheArchive(t *testing.T) {
	t.Run("big.bin", func(t *testing.T) { testHealFromTheArchive(t, testkit.Noise(1, 64<<10), "big.bin") })
	// An artifact that shares the archive manifest's name is an intact copy too (healing skipped
	// every file whose name ended in manifest.json).
	t.Run("public/manifest.json", func(t *testing.T) { testHealFromTheArchive(t, testkit.Noise(3, 64<<10), "public/manifest.json") })
	t.Run("app-manifest.json", func(t *testing.T) { testHealFromTheArchive(t, testkit.Noise(4, 64<<10), "app-manifest.json") })
}

func testHealFromTheArchive(t *testing.T, content []byte, path string) {
	l := correctedAway(t, content, path)
	testkit.DamageStored(t, filepath.Join(l.Objects(), "packs"), content)
	if _, err := storedContent(t, l, tree.Sum(content)); err == nil {
		t.Fatal("the damage went unnoticed: the test damaged the wrong bytes")
	}

	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), true)
	f := finding(t, r, "store healing")
	if !r.OK || !f.OK || !f.Repaired || f.Problem != "1 damaged or missing object(s) healed from intact copies" {
		t.Fatalf("heal finding %+v (report %+v)", f, r)
	}
	got, err := storedContent(t, l, tree.Sum(content))
	if err != nil || !bytes.Equal(got, content) {
		t.Errorf("the healed object reads %d bytes, %v; want the original %d", len(got), err, len(content))
	}
	if r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), true); !r.OK || hasFinding(r, "store healing") {
		t.Errorf("a second repair found something to heal: %+v", r)
	}
}

// Damage with no intact copy anywhere is reported as such, with what to do, and fails the report.
func TestDoctorRepairReportsWhatItCannotHeal(t *testing.T) {
	content := testkit.Noise(2, 64<<10)
	l := correctedAway(t, content, "big.bin")
	if err := os.RemoveAll(l.Archive()); err != nil {
		t.Fatal(err)
	}
	testkit.DamageStored(t, filepath.Join(l.Objects(), "packs"), content)

	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), true)
	f := finding(t, r, "store healing")
	if r.OK || f.OK || f.Repaired ||
		!strings.Contains(f.Problem, "0 object(s) healed; 1 have no intact copy anywhere (e.g. "+tree.Sum(content).String()+")") ||
		!strings.Contains(f.Repair, "`plan verify` names the checkpoints that need them") {
		t.Errorf("heal finding %+v (report ok=%v)", f, r.OK)
	}
}

// An interrupted heal reports the interruption as its finding's problem, not as a healed store.
func TestHealInterrupted(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	s, err := objectstore.Open(l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := maintenance.Heal(ctx, l, s)
	if f.OK || !strings.Contains(f.Problem, "read the workspace for intact copies") || !strings.Contains(f.Problem, context.Canceled.Error()) {
		t.Errorf("heal with a cancelled context: %+v", f)
	}
}

// doctor --repair writes to the store only under the workspace lock; when another process holds
// it, doctor repairs nothing and says why.
func TestDoctorRepairWaitsForTheLock(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	unlock, err := workspace.NewLocker(l).Lock(context.Background(), "a test holding the lock")
	if err != nil {
		t.Fatal(err)
	}
	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), true)
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	f := finding(t, r, "lock")
	if r.OK || f.OK || !strings.Contains(f.Problem, "a test holding the lock") || !strings.Contains(f.Repair, "again once the other plan process is done") {
		t.Errorf("lock finding %+v (report ok=%v)", f, r.OK)
	}
	if hasFinding(r, "store") {
		t.Errorf("doctor went on to the store without the lock: %+v", r.Findings)
	}
}

// A config.yaml that cannot be opened (here a symbolic link to itself) is an error, never "no
// retention policy".
func TestRetentionUnopenable(t *testing.T) {
	dir := t.TempDir()
	l, err := workspace.NewLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(l.State(), maintenance.ConfigFile)
	if err := os.Symlink(p, p); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := maintenance.NewSettings(l).Retention(); err == nil || ok {
		t.Fatalf("Retention() of a looping config.yaml: ok=%v err=%v", ok, err)
	}
}
