package maintenance_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/tests/testkit"
)

// packsOf lists the store's pack files.
func packsOf(t *testing.T, s *objectstore.Store) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	ps, err := filepath.Glob(filepath.Join(s.Dir(), "packs", "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		out[p] = true
	}
	return out
}

// commitOne stores what put adds in a batch of its own and returns the pack it wrote.
func commitOne(t *testing.T, s *objectstore.Store, put func(*objectstore.Batch)) string {
	t.Helper()
	before := packsOf(t, s)
	b := s.NewBatch()
	put(b)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	for p := range packsOf(t, s) {
		if !before[p] {
			return p
		}
	}
	t.Fatal("the batch wrote no pack")
	return ""
}

// gc never collects around lost data: when a live object's pack is cut short, Collect fails with an
// integrity error and deletes nothing, not even what is truly garbage, so `plan verify` can still
// name what was lost and a restored pack can still be put back.
func TestCollectRefusesWhenALiveObjectIsCutShort(t *testing.T) {
	s := objectstore.TestStore(t)
	h := maintenance.NewHealth(s, nil)
	content := testkit.Noise(11, 64<<10)
	blob := tree.Sum(content)
	var root tree.Hash
	blobPack := commitOne(t, s, func(b *objectstore.Batch) { putBlob(t, b, content) })
	commitOne(t, s, func(b *objectstore.Batch) {
		var err error
		root, _, err = b.PutTree(objectstore.Tree{{Name: "big.bin", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(content)), Hash: blob}})
		if err != nil {
			t.Fatal(err)
		}
	})
	var garbage tree.Hash
	garbagePack := commitOne(t, s, func(b *objectstore.Batch) { garbage = putBlob(t, b, []byte("nobody needs me")) })

	raw, err := os.ReadFile(blobPack)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(blobPack, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blobPack, raw[:len(raw)/2], 0o600); err != nil {
		t.Fatal(err)
	}

	_, err = h.Collect([]tree.Hash{root}, nil)
	if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "nothing was deleted") || !strings.Contains(err.Error(), blob.String()) {
		t.Fatalf("Collect with a live object cut short: %v, want an integrity error naming %s", err, blob)
	}
	if !s.Has(garbage) {
		t.Fatal("the refused gc dropped the garbage object")
	}
	if _, err := os.Stat(garbagePack); err != nil {
		t.Fatalf("the garbage pack went away: %v", err)
	}
	if got, err := os.ReadFile(blobPack); err != nil || !bytes.Equal(got, raw[:len(raw)/2]) {
		t.Fatalf("the cut-short pack was changed: %v", err)
	}
}
