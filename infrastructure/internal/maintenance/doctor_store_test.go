package maintenance_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/infrastructure/internal/maintenance"
)

// A file where the packs directory belongs (every checkpoint's data gone with it) fails both the
// index check and the store check, with or without --repair, and doctor leaves the file alone.
func TestDoctorPacksDirectoryReplacedByAFile(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	packs := filepath.Join(l.Objects(), "packs")
	if err := os.RemoveAll(packs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(packs, []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, repair := range []bool{false, true} {
		r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), repair)
		idx, store := finding(t, r, "pack indexes"), finding(t, r, "store")
		if r.OK || idx.OK || !strings.Contains(idx.Problem, "not a directory") || store.OK || store.Problem == "" {
			t.Errorf("repair=%v: report ok=%v, index finding %+v, store finding %+v", repair, r.OK, idx, store)
		}
	}
	if b, err := os.ReadFile(packs); err != nil || string(b) != "in the way" {
		t.Errorf("doctor changed the file in the way: %q, %v", b, err)
	}
}
