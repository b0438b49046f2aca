package maintenance_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// store.max_bytes is a positive size; anything else is refused, naming the key.
func TestStoreBudget(t *testing.T) {
	for content, want := range map[string]int64{
		"":                              0,
		"store: {}\n":                   0,
		"store:\n  max_bytes: 10GiB\n":  10 << 30,
		"store:\n  max_bytes: 500MB\n":  500e6,
		"store:\n  max_bytes: 123456\n": 123456,
	} {
		c := content
		got, err := settingsWith(t, &c).StoreBudget()
		if err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", content, got, err, want)
		}
	}
	for _, content := range []string{"store:\n  max_bytes: lots\n", "store:\n  max_bytes: 0\n", "store:\n  max_bytes: -5MB\n"} {
		c := content
		if _, err := settingsWith(t, &c).StoreBudget(); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("%q: %v, want invalid input", content, err)
		}
	}
	bad := "store: [\n"
	if _, err := settingsWith(t, &bad).StoreBudget(); err == nil {
		t.Error("a config that does not parse: no error")
	}
}

// store.workspace_max_bytes is read as max_bytes is.
func TestWorkspaceQuota(t *testing.T) {
	c := "store:\n  workspace_max_bytes: 2GiB\n"
	if n, err := settingsWith(t, &c).WorkspaceQuota(); err != nil || n != 2<<30 {
		t.Fatalf("%d, %v", n, err)
	}
	c = "store:\n  workspace_max_bytes: much\n"
	if _, err := settingsWith(t, &c).WorkspaceQuota(); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "store.workspace_max_bytes") {
		t.Fatalf("%v", err)
	}
}

// WorkspaceBytes sums the stored size of everything the roots reach; a root the store lacks is an
// error.
func TestWorkspaceBytes(t *testing.T) {
	s := objectstore.TestStore(t)
	b := s.NewBatch()
	data := []byte(strings.Repeat("workspace bytes\n", 500))
	h := tree.Sum(data)
	if _, err := b.PutBlob(bytes.NewReader(data), h, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	root, _, err := b.PutTree(objectstore.Tree{{Name: "f", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(data)), Hash: h}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	bi, _ := s.Info(h)
	ti, _ := s.Info(root)
	n, err := maintenance.NewHealth(s, nil).WorkspaceBytes([]tree.Hash{root})
	if err != nil || n != bi.StoredSize+ti.StoredSize {
		t.Fatalf("%d, %v; want %d", n, err, bi.StoredSize+ti.StoredSize)
	}
	if _, err := maintenance.NewHealth(s, nil).WorkspaceBytes([]tree.Hash{tree.Sum([]byte("none"))}); err == nil {
		t.Fatal("a missing root: no error")
	}
}
