package maintenance_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// Repack collects, then repacks what is live: the unreferenced blob goes, every live object
// reads back, and the report says what the repack wrote. A root the store cannot read stops it
// with nothing deleted; a shared store is refused before anything is done.
func TestHealthRepack(t *testing.T) {
	f := newStoreFixture(t)
	if _, err := f.health.Repack([]tree.Hash{tree.Sum([]byte("absent"))}, nil); err == nil ||
		!strings.Contains(err.Error(), "nothing was deleted") || !f.s.Has(f.lone) {
		t.Fatalf("Repack with a missing root: %v", err)
	}
	r, err := f.health.Repack([]tree.Hash{f.root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// So small a store only grows in a repack (bundle and compression headers): the old packs are
	// kept, and what is reclaimed is the collection's alone.
	if r.Repack == nil || r.Repack.Objects != 4 || !r.Repack.Kept || r.Repack.PacksDeleted != 0 || r.Repack.BytesAfter <= r.Repack.BytesBefore ||
		r.PacksDeleted != 1 || r.BytesReclaimed <= 0 || r.LiveObjects != 4 || f.s.Has(f.lone) {
		t.Fatalf("Repack = %+v (%+v)", r, r.Repack)
	}
	for _, h := range []tree.Hash{f.root, f.sub, f.blobA, f.blobB} {
		if err := f.health.CheckObject(h, true); err != nil {
			t.Errorf("live object %s after the repack: %v", h, err)
		}
	}

	// A live file's pack gone missing: gc keeps its index (verify names what was lost), the
	// repack refuses.
	g := newStoreFixture(t)
	before, _ := filepath.Glob(filepath.Join(g.s.Dir(), "packs", "*.pack"))
	b := g.s.NewBatch()
	data := []byte("in a pack about to vanish")
	lost := putBlob(t, b, data)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	after, _ := filepath.Glob(filepath.Join(g.s.Dir(), "packs", "*.pack"))
	b = g.s.NewBatch()
	root, _, err := b.PutTree(objectstore.Tree{{Name: "lost.txt", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(data)), Hash: lost}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, p := range after {
		if !slices.Contains(before, p) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := g.s.Refresh(); err != nil {
		t.Fatal(err)
	}
	if _, err := g.health.Repack([]tree.Hash{g.root, root}, nil); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("Repack with a missing pack: %v", err)
	}

	shared, err := objectstore.OpenBackend(objectstore.NewDir(t.TempDir(), true), "")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = shared.Close() }()
	if _, err := maintenance.NewHealth(shared, nil).Repack(nil, nil); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("Repack of a shared store: %v", err)
	}
}
