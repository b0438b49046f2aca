package maintenance_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// failingBackend is a shared directory store whose calls named in fail (op + " " + name) fail.
type failingBackend struct {
	objectstore.Backend
	fail map[string]bool
}

func (b *failingBackend) List(dir string) ([]objectstore.FileInfo, error) {
	if b.fail["List "+dir] {
		return nil, errListing
	}
	return b.Backend.List(dir)
}

func (b *failingBackend) ReadFile(name string) ([]byte, error) {
	if b.fail["ReadFile "+name] {
		return nil, errListing
	}
	return b.Backend.ReadFile(name)
}

func (b *failingBackend) Open(name string) (objectstore.File, error) {
	if b.fail["Open "+name] {
		return nil, errListing
	}
	return b.Backend.Open(name)
}

// A shared gc that cannot read the descriptors or a workspace's records deletes nothing and says
// why; doctor says what stops it from looking at unindexed packs.
func TestSharedGCAndDoctorWhenTheStoreFails(t *testing.T) {
	dir := t.TempDir()
	app := onStore(t, dir, "content")
	id := app.WorkspaceID()
	be := &failingBackend{Backend: objectstore.NewDir(dir, true), fail: map[string]bool{}}
	st, err := objectstore.OpenBackend(be, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	h := maintenance.NewHealth(st, nil)
	if m, err := h.MissingRecords(context.Background()); err != nil || m != nil {
		t.Fatalf("MissingRecords without a database: %v, %v", m, err)
	}
	zero := time.Duration(0)
	for _, op := range []string{"List workspaces", "ReadFile workspaces/" + id + ".json", "List records/" + id + "/pending"} {
		be.fail = map[string]bool{op: true}
		if _, err := h.Collect(nil, &zero); !errors.Is(err, errListing) || !strings.Contains(err.Error(), "nothing was deleted") {
			t.Fatalf("gc when %s fails: %v", op, err)
		}
	}
	// A pack without its idx that cannot be read for a reason other than damage.
	m, err := filepath.Glob(filepath.Join(dir, "packs", "*.idx"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no idx: %v", err)
	}
	if err := os.Remove(m[0]); err != nil {
		t.Fatal(err)
	}
	pack := strings.TrimSuffix(filepath.Base(m[0]), ".idx")
	r := maintenance.Doctor(context.Background(), failingTarget(t, app, be, map[string]bool{"Open packs/" + pack + ".pack": true}), true)
	if f, ok := sgFinding(r, "pack indexes"); r.OK || !ok || f.OK || !strings.Contains(f.Problem, errListing.Error()) {
		t.Fatalf("doctor --repair with an unindexed pack unreadable: %+v", r)
	}
	r = maintenance.Doctor(context.Background(), failingTarget(t, app, be, map[string]bool{"List packs": true}), false)
	if f, ok := sgFinding(r, "pack indexes"); r.OK || !ok || f.OK || !strings.Contains(f.Problem, errListing.Error()) {
		t.Fatalf("doctor with packs/ unlistable once the store is open: %+v", r)
	}
}

// failingTarget is app's doctor target with its store and records reached through be, whose
// calls named in fail start failing once the store is open.
func failingTarget(t *testing.T, app *bootstrap.App, be *failingBackend, fail map[string]bool) maintenance.Target {
	t.Helper()
	tg := sharedTarget(t, app)
	be.fail = map[string]bool{}
	tg.OpenRecords = func(context.Context) (*objectstore.Records, error) {
		return objectstore.NewRecords(be, objectstore.WorkspaceRecords(app.WorkspaceID())), nil
	}
	tg.OpenStore = func(context.Context) (*objectstore.Store, error) {
		st, err := objectstore.OpenBackend(be, t.TempDir())
		be.fail = fail
		return st, err
	}
	return tg
}

// doctor that cannot compare the records with the database (their pending listing fails) says
// so, never that the records are fine.
func TestDoctorRecordsThatCannotBeCompared(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	r := maintenance.Doctor(context.Background(), listingTarget(l, &listingBackend{dir: "records/pending"}), false)
	if f, ok := sgFinding(r, "records"); r.OK || !ok || f.OK || !strings.Contains(f.Problem, "compare the records with the database") {
		t.Fatalf("%+v", r.Findings)
	}
}
