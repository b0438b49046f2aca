package maintenance_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// stats of a store opened lazily reads its index, and reports a damaged idx rather than an empty
// store.
func TestWrittenPerDayLoadsALazyStore(t *testing.T) {
	dir := t.TempDir()
	s, err := objectstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("content")
	if _, err := s.StoreEntries([]tree.Entry{{Path: "f", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(data)), Hash: tree.Sum(data)}},
		map[tree.Hash][]byte{tree.Sum(data): data}); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	lazy, err := objectstore.OpenBackendLazy(objectstore.NewDir(dir, false), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lazy.Close()
	h := maintenance.NewHealth(lazy, nil)
	if _, err := h.WrittenPerDay(); err != nil {
		t.Fatal(err)
	}
	if u := h.Usage(); u.Objects != 2 || u.Packs != 1 {
		t.Fatalf("usage: %+v", u)
	}

	idxs, _ := filepath.Glob(filepath.Join(dir, "packs", "*.idx"))
	for _, p := range idxs {
		b, _ := os.ReadFile(p)
		b[len(b)-1] ^= 1
		_ = os.Chmod(p, 0o600)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	damaged, err := objectstore.OpenBackendLazy(objectstore.NewDir(dir, false), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer damaged.Close()
	if _, err := maintenance.NewHealth(damaged, nil).WrittenPerDay(); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a damaged idx: %v", err)
	}
}
