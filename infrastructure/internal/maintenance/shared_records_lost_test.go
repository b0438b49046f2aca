package maintenance_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
)

// recordNames lists the committed records of workspace id in the file:// store in dir.
func recordNames(t *testing.T, dir, id string) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(dir, "records", id))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		if de.Type().IsRegular() {
			out = append(out, de.Name())
		}
	}
	sort.Strings(out)
	return out
}

// A workspace whose records were deleted from the shared store, all of them or one in the middle
// of its history: another workspace's gc deletes nothing (it cannot know what they kept live) and
// names the workspace; the workspace's own doctor and verify see the loss, and doctor --repair
// writes the history again, after which gc runs and keeps the workspace's content.
func TestSharedGCRefusesWhileAWorkspacesRecordsAreMissing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mine := onStore(t, dir, "mine")
	theirs := onStore(t, dir, "theirs")
	id := theirs.WorkspaceID()
	for i := range 2 {
		if err := os.WriteFile(filepath.Join(theirs.Services.Layout.Root, "f.txt"), []byte{byte('a' + i)}, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := theirs.Services.Checkpoints.Create(ctx, application.CreateRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	zero := new(time.Duration)
	gc := func() error {
		_, err := mine.Services.Maintenance.GC(ctx, port.GCRequest{Grace: zero})
		return err
	}
	names := recordNames(t, dir, id)
	if len(names) < 3 {
		t.Fatalf("%d records", len(names))
	}
	for _, lose := range [][]string{names[1:2], names} {
		for _, n := range lose {
			if err := os.Remove(filepath.Join(dir, "records", id, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
		err := gc()
		if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "nothing was deleted") || !strings.Contains(err.Error(), id) ||
			!strings.Contains(err.Error(), theirs.Services.Layout.Root) {
			t.Fatalf("gc with %d of another workspace's records lost: %v", len(lose), err)
		}
		v, err := theirs.Services.Maintenance.Verify(ctx, "", false)
		if err != nil || len(v.Problems) != 1 || v.Problems[0].Path != "records" {
			t.Fatalf("verify of the workspace that lost records: %+v, %v", v, err)
		}
		r := maintenance.Doctor(ctx, sharedTarget(t, theirs), false)
		if f, ok := sgFinding(r, "records"); r.OK || !ok || !strings.Contains(f.Problem, "missing from the store") || !strings.Contains(f.Repair, "doctor --repair") {
			t.Fatalf("doctor of the workspace that lost records: %+v", r)
		}
	}
	r := maintenance.Doctor(ctx, sharedTarget(t, theirs), true)
	if f, ok := sgFinding(r, "records"); !r.OK || !ok || !f.Repaired || !strings.Contains(f.Repair, "stands for the missing ones") {
		t.Fatalf("doctor --repair: %+v", r)
	}
	if err := gc(); err != nil {
		t.Fatalf("gc once the history is written again: %v", err)
	}
	if v, err := theirs.Services.Maintenance.Verify(ctx, "", true); err != nil || len(v.Problems) != 0 {
		t.Fatalf("verify after the repair and a gc: %+v, %v", v, err)
	}
	// A described workspace whose records directory is gone altogether.
	if err := os.RemoveAll(filepath.Join(dir, "records", id)); err != nil {
		t.Fatal(err)
	}
	if err := gc(); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "all of its records are missing") {
		t.Fatalf("gc with a described workspace without records: %v", err)
	}
	// The user's way out, for a workspace gone for good: its descriptor removed.
	if err := os.Remove(filepath.Join(dir, "workspaces", id+".json")); err != nil {
		t.Fatal(err)
	}
	if err := gc(); err != nil {
		t.Fatalf("gc once the lost workspace's descriptor is removed: %v", err)
	}
}

// The descriptors a gc reads: one that cannot be read stops it; a damaged one still names its
// workspace; a stray entry is ignored.
func TestSharedGCDescriptors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mine := onStore(t, dir, "mine")
	zero := new(time.Duration)
	ws := filepath.Join(dir, "workspaces")
	if err := os.Mkdir(filepath.Join(ws, "stray"), 0o700); err != nil {
		t.Fatal(err)
	}
	lost := "0123456789abcdef01234567"
	if err := os.WriteFile(filepath.Join(ws, lost+".json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := mine.Services.Maintenance.GC(ctx, port.GCRequest{Grace: zero})
	if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), lost) {
		t.Fatalf("gc with a damaged descriptor and no records: %v", err)
	}
	if err := os.Remove(filepath.Join(ws, lost+".json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, lost+".json"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := mine.Services.Maintenance.GC(ctx, port.GCRequest{Grace: zero}); err != nil {
		t.Fatalf("gc with directories among the descriptors: %v", err)
	}
}
