package maintenance_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// workspaceWithCheckpoint initialises a workspace, takes one checkpoint of a small tree and closes
// the application, so the test can damage files no process holds open.
func workspaceWithCheckpoint(t *testing.T) workspace.Layout {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte(strings.Repeat("alpha ", 50)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d", "b.txt"), []byte("beta"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: dir, Init: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Services.Checkpoints.Create(ctx, application.CreateRequest{Note: "doctor"}); err != nil {
		t.Fatal(err)
	}
	l := app.Services.Layout
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	return l
}

// finding returns the named check's finding, failing the test when there is none or several.
func finding(t *testing.T, r maintenance.Report, check string) maintenance.Finding {
	t.Helper()
	var found []maintenance.Finding
	for _, f := range r.Findings {
		if f.Check == check {
			found = append(found, f)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d findings for %q in %+v", len(found), check, r.Findings)
	}
	return found[0]
}

func hasFinding(r maintenance.Report, check string) bool {
	for _, f := range r.Findings {
		if f.Check == check {
			return true
		}
	}
	return false
}

func packFiles(t *testing.T, l workspace.Layout, ext string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(l.Objects(), "packs", "*."+ext))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .%s files: %v", ext, err)
	}
	return files
}

func TestDoctorHealthyWorkspace(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	for _, repair := range []bool{false, true} {
		r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), repair)
		if !r.OK {
			t.Fatalf("repair=%v: a healthy workspace is not ok: %+v", repair, r.Findings)
		}
		want := []string{"database", "records", "pack indexes", "store", "checkpoints", "journal"}
		if len(r.Findings) != len(want) {
			t.Fatalf("repair=%v: findings %+v, want exactly %q", repair, r.Findings, want)
		}
		for i, f := range r.Findings {
			if f.Check != want[i] || !f.OK || f.Problem != "" || f.Repaired {
				t.Errorf("repair=%v: finding %d = %+v, want a clean %q", repair, i, f, want[i])
			}
		}
	}
}

func TestDoctorMissingDatabase(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	if err := os.Remove(l.Database()); err != nil {
		t.Fatal(err)
	}
	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), true)
	if r.OK {
		t.Fatal("a workspace without its database is ok")
	}
	f := finding(t, r, "database")
	if f.OK || !strings.Contains(f.Problem, "is missing") || !strings.Contains(f.Repair, "plan doctor --rebuild") {
		t.Errorf("database finding %+v", f)
	}
	// The store is still checked and intact.
	if f := finding(t, r, "store"); !f.OK {
		t.Errorf("store finding %+v", f)
	}
	if _, err := os.Stat(l.Database()); err == nil {
		t.Error("doctor --repair created a database: the metadata is gone, an empty one would hide that")
	}
	// And the application refuses to start rather than re-initialise over the packs.
	if _, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: l.Root}); err == nil {
		t.Error("Open succeeded without a database")
	}
}

func TestDoctorCorruptDatabase(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	junk := []byte(strings.Repeat("this is not an SQLite database\x00\xff", 200))
	if err := os.WriteFile(l.Database(), junk, 0o600); err != nil {
		t.Fatal(err)
	}
	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false)
	f := finding(t, r, "database")
	if r.OK || f.OK || f.Problem == "" || !strings.Contains(f.Repair, "plan doctor --rebuild") {
		t.Errorf("report ok=%v, database finding %+v", r.OK, f)
	}
	b, err := os.ReadFile(l.Database())
	if err != nil || string(b) != string(junk) {
		t.Errorf("doctor changed the damaged database (%v)", err)
	}
}

func TestDoctorEmptyIndex(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	idx := packFiles(t, l, "idx")[0]
	if err := os.Truncate(idx, 0); err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(idx)

	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false)
	f := finding(t, r, "pack indexes")
	if r.OK || f.OK || f.Problem != "1 empty index files: "+name || !strings.Contains(f.Repair, "plan doctor --repair") || f.Repaired {
		t.Errorf("without repair: report ok=%v, finding %+v", r.OK, f)
	}
	if fi, err := os.Stat(idx); err != nil || fi.Size() != 0 {
		t.Fatalf("doctor without --repair touched the index: %v", err)
	}
	// The store cannot open with the empty index, and says so.
	if s := finding(t, r, "store"); s.OK || s.Problem == "" || !strings.Contains(s.Repair, ".idx") {
		t.Errorf("without repair: store finding %+v", s)
	}

	r = maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), true)
	f = finding(t, r, "pack indexes")
	if !r.OK || !f.OK || !f.Repaired || f.Problem != "1 empty index files" || !strings.Contains(f.Repair, "rebuilt from their packs") {
		t.Errorf("with repair: report %+v", r)
	}
	// The store reopened during the check and rebuilt the index from the pack.
	if fi, err := os.Stat(idx); err != nil || fi.Size() == 0 {
		t.Fatalf("the index was not rebuilt: %v", err)
	}
	if f := finding(t, r, "store"); !f.OK {
		t.Errorf("with repair: store finding %+v", f)
	}

	// The workspace works again: the checkpoint's data is all there.
	ctx := context.Background()
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: l.Root})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Close() }()
	res, err := app.Services.Maintenance.Verify(ctx, "", true)
	if err != nil || len(res.Problems) != 0 || res.CheckedCheckpoints != 1 {
		t.Errorf("verify after the repair: %+v, %v", res, err)
	}
}

func TestDoctorPackWithoutIndex(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	for _, idx := range packFiles(t, l, "idx") {
		if err := os.Remove(idx); err != nil {
			t.Fatal(err)
		}
	}
	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false)
	f := finding(t, r, "pack indexes")
	if !r.OK || !f.OK || !strings.HasSuffix(f.Problem, "packs without an index") || !strings.Contains(f.Repair, "rebuilt automatically") {
		t.Errorf("report ok=%v, finding %+v", r.OK, f)
	}
}

func TestDoctorTemporaryFiles(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	tmp := filepath.Join(l.Objects(), "tmp")
	for _, n := range []string{"0123456789abcdef.pack", "0123456789abcdef.idx"} {
		if err := os.WriteFile(filepath.Join(tmp, n), []byte("half a pack"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false)
	f := finding(t, r, "store temporary files")
	// Junk, not damage: reported, but the workspace is healthy (no exit 6 until --repair).
	if !r.OK || !f.OK || f.Problem != "2 unfinished pack files in objects/tmp" || !strings.Contains(f.Repair, "plan doctor --repair") {
		t.Errorf("without repair: report ok=%v, finding %+v", r.OK, f)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 2 {
		t.Fatalf("doctor without --repair removed temporary files: %d left", len(entries))
	}

	r = maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), true)
	f = finding(t, r, "store temporary files")
	if !r.OK || !f.OK || !f.Repaired || f.Problem != "2 unfinished pack files" {
		t.Errorf("with repair: report ok=%v, finding %+v", r.OK, f)
	}
	if entries, err := os.ReadDir(tmp); err != nil || len(entries) != 0 {
		t.Errorf("after repair objects/tmp holds %d entries (%v)", len(entries), err)
	}

	// Nothing left: no finding at all.
	if r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), true); hasFinding(r, "store temporary files") || !r.OK {
		t.Errorf("a clean store still reports temporary files: %+v", r)
	}
}

func TestDoctorPendingJournal(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	if err := os.WriteFile(l.JournalFile(), []byte(`{"id":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, repair := range []bool{false, true} {
		r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), repair)
		f := finding(t, r, "journal")
		if r.OK || f.OK || !strings.Contains(f.Problem, "pending") || !strings.Contains(f.Repair, "plan recover") {
			t.Errorf("repair=%v: report ok=%v, finding %+v", repair, r.OK, f)
		}
		if _, err := os.Stat(l.JournalFile()); err != nil {
			t.Fatalf("repair=%v: doctor removed the journal: %v", repair, err)
		}
	}
}

func TestDoctorStagingLeftBehind(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	staging := filepath.Join(l.Root, filepath.FromSlash(l.Staging()))
	stage := func() {
		t.Helper()
		if err := os.MkdirAll(staging, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(staging, "f"), []byte("staged"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stage()

	t.Run("no journal, no repair", func(t *testing.T) {
		r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false)
		f := finding(t, r, "staging")
		if r.OK || f.OK || f.Repaired || !strings.Contains(f.Repair, "plan doctor --repair") {
			t.Errorf("report ok=%v, finding %+v", r.OK, f)
		}
		if _, err := os.Stat(staging); err != nil {
			t.Errorf("staging removed without --repair: %v", err)
		}
	})
	t.Run("no journal, repair", func(t *testing.T) {
		r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), true)
		f := finding(t, r, "staging")
		if !r.OK || !f.OK || !f.Repaired || !strings.Contains(f.Repair, "removed") {
			t.Errorf("report ok=%v, finding %+v", r.OK, f)
		}
		if _, err := os.Stat(staging); !os.IsNotExist(err) {
			t.Errorf("staging survived the repair: %v", err)
		}
		if r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false); hasFinding(r, "staging") {
			t.Errorf("staging still reported after the repair: %+v", r)
		}
	})
	t.Run("pending journal", func(t *testing.T) {
		stage()
		if err := os.WriteFile(l.JournalFile(), []byte(`{"id":"x"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, repair := range []bool{false, true} {
			r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), repair)
			f := finding(t, r, "staging")
			if r.OK || f.OK || f.Repaired || !strings.Contains(f.Repair, "plan recover") {
				t.Errorf("repair=%v: report ok=%v, finding %+v", repair, r.OK, f)
			}
			// Recovery needs the staged files: doctor must leave them.
			if _, err := os.Stat(filepath.Join(staging, "f")); err != nil {
				t.Fatalf("repair=%v: staging removed while an operation is pending: %v", repair, err)
			}
		}
	})
}

func TestDoctorFreshWorkspace(t *testing.T) {
	// Initialised, never used: no packs directory content, nothing to complain about.
	dir := t.TempDir()
	app, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: dir, Init: true})
	if err != nil {
		t.Fatal(err)
	}
	l := app.Services.Layout
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	if r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false); !r.OK {
		t.Errorf("a fresh workspace is not ok: %+v", r)
	}
	// A workspace whose object directory is gone: the store is recreated empty, indexes are fine.
	if err := os.RemoveAll(l.Objects()); err != nil {
		t.Fatal(err)
	}
	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false)
	if f := finding(t, r, "pack indexes"); !f.OK || f.Problem != "" {
		t.Errorf("pack indexes without a packs directory: %+v", f)
	}
}

// A pack deleted or cut short is damage doctor reports (it used to say "ok store").
func TestDoctorSeesMissingAndCutShortPacks(t *testing.T) {
	for name, damage := range map[string]func(string) error{
		"deleted":   os.Remove,
		"cut short": func(p string) error { return os.Truncate(p, 20) },
	} {
		t.Run(name, func(t *testing.T) {
			l := workspaceWithCheckpoint(t)
			for _, p := range packFiles(t, l, "pack") {
				if err := os.Chmod(p, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := damage(p); err != nil {
					t.Fatal(err)
				}
			}
			r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false)
			f := finding(t, r, "store")
			if r.OK || f.OK || !strings.Contains(f.Problem, "pack ") || !strings.Contains(f.Repair, "plan verify") {
				t.Errorf("report ok=%v, store finding %+v", r.OK, f)
			}
		})
	}
}

// A flipped byte in a stored object whose content is still in the workspace, found by nothing
// before, is healed by doctor --repair: afterwards verify --read-data is clean and the checkpoint
// restores. A missing pack whose content is archived heals from the archive.
func TestDoctorRepairHeals(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	for _, p := range packFiles(t, l, "pack") {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		raw[len(raw)/2] ^= 0x5a
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, raw, 0o400); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	r := maintenance.Doctor(ctx, maintenance.PrivateTarget(l), true)
	f := finding(t, r, "store healing")
	if !f.OK || !f.Repaired || !strings.Contains(f.Problem, "healed") {
		t.Fatalf("heal finding %+v (report %+v)", f, r)
	}
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: l.Root})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = app.Close() }()
	res, err := app.Services.Maintenance.Verify(ctx, "", true)
	if err != nil || len(res.Problems) != 0 {
		t.Fatalf("verify --read-data after healing: %+v, %v", res.Problems, err)
	}
}
