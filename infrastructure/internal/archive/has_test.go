package archive

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/planhq/plan/infrastructure/internal/workspace"
)

func TestHas(t *testing.T) {
	l, err := workspace.NewLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	a := New(l, nil)
	const id = "0123456789abcdef01234567"
	if ok, err := a.Has(id); ok || err != nil {
		t.Fatalf("no archive: %v, %v", ok, err)
	}
	if err := os.MkdirAll(filepath.Join(a.Dir(id), "d"), 0o750); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Has(id); !ok || err != nil {
		t.Fatalf("published: %v, %v", ok, err)
	}
	if _, err := a.Remove(id); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Has(id); ok || err != nil {
		t.Fatalf("removed: %v, %v", ok, err)
	}
	if _, err := a.Has("../x"); err == nil {
		t.Fatal("a path as an ID")
	}
}
