package maintenance_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/infrastructure/maintenance"
)

// An empty index doctor --repair cannot remove is reported as a problem, not as repaired, and
// the pack it indexes is left alone.
func TestDoctorRepairCannotRemoveAnEmptyIndex(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	idx := packFiles(t, l, "idx")[0]
	pack := strings.TrimSuffix(idx, ".idx") + ".pack"
	want, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(idx, 0); err != nil {
		t.Fatal(err)
	}
	immutable(t, filepath.Dir(idx))
	r := maintenance.Doctor(context.Background(), l, true)
	f := finding(t, r, "pack indexes")
	if r.OK || f.OK || f.Repaired || !strings.Contains(f.Problem, filepath.Base(idx)) {
		t.Fatalf("%+v", r.Findings)
	}
	unchanged(t, pack, want)
	if fi, err := os.Stat(idx); err != nil || fi.Size() != 0 {
		t.Fatalf("the index: %v", err)
	}
}
