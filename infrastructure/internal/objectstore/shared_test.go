package objectstore_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"

	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/objectstore/storetest"
)

// A file:// store several workspaces share passes the shared-store suite.
func TestSharedDirStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectstore.Backend {
		return objectstore.NewDir(t.TempDir(), true)
	})
}

// Adopt counts a stored tree and refuses one the store does not hold whole; in a shared store the
// objects it checked are what the next Confirm checks again.
func TestAdopt(t *testing.T) {
	s := objectstore.TestStore(t)
	b := s.NewBatch()
	blob := []byte("hello adopt")
	h := tree.Sum(blob)
	if _, err := b.PutBlob(bytes.NewReader(blob), h, int64(len(blob))); err != nil {
		t.Fatal(err)
	}
	sub, _, err := b.PutTree(objectstore.Tree{{Name: "f", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(blob)), Hash: h}})
	if err != nil {
		t.Fatal(err)
	}
	root, _, err := b.PutTree(objectstore.Tree{
		{Name: "dir", Kind: tree.KindDir, Mode: 0o755, Hash: sub},
		{Name: "link", Kind: tree.KindSymlink, Mode: 0o777, Target: "dir/f"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	files, size, err := s.Adopt(root)
	if err != nil || files != 2 || size != int64(len(blob))+5 {
		t.Fatalf("Adopt = %d files, %d bytes, %v", files, size, err)
	}
	if _, _, err := s.Adopt(tree.Sum([]byte("no such tree"))); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a tree the store lacks: %v", err)
	}
	// A tree whose blob is missing is refused too.
	b = s.NewBatch()
	lost, _, err := b.PutTree(objectstore.Tree{{Name: "g", Kind: tree.KindFile, Mode: 0o644, Size: 3, Hash: tree.Sum([]byte("abc"))}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Adopt(lost); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a tree with a missing blob: %v", err)
	}
}
