package maintenance_test

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/planhq/plan/infrastructure/internal/maintenance"
)

// A database that opens but whose rows and indexes disagree (a flipped bit in a table page) is
// reported with SQLite's own complaints, and left as it is for the user to restore.
func TestDoctorReportsIntegrityCheckComplaints(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	raw, err := os.ReadFile(l.Database())
	if err != nil {
		t.Fatal(err)
	}
	// The checkpoint's ID is stored in its row and in the indexes on it; change the first copy.
	at := -1
	for _, loc := range regexp.MustCompile(`[0-9a-f]{24}`).FindAllIndex(raw, -1) {
		if bytes.Count(raw, raw[loc[0]:loc[1]]) > 1 {
			at = loc[0]
			break
		}
	}
	if at < 0 {
		t.Fatal("no indexed ID in the database file")
	}
	raw[at+23] ^= 1 // another hex digit: the row stays well-formed
	if err := os.WriteFile(l.Database(), raw, 0o600); err != nil {
		t.Fatal(err)
	}

	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), true)
	f := finding(t, r, "database")
	if r.OK || f.OK || !strings.HasPrefix(f.Problem, "SQLite integrity_check: ") || !strings.Contains(f.Problem, "missing from index") ||
		!strings.Contains(f.Repair, "plan doctor --rebuild") {
		t.Errorf("report ok=%v, database finding %+v", r.OK, f)
	}
	if b, err := os.ReadFile(l.Database()); err != nil || !bytes.Equal(b, raw) {
		t.Errorf("doctor --repair changed the damaged database (%v)", err)
	}
	// The rebuild keeps the damaged file aside as it was and brings the checkpoint back.
	res, err := maintenance.Rebuild(context.Background(), maintenance.PrivateTarget(l), rebuildTime)
	if err != nil || !res.Rebuilt || !strings.HasPrefix(res.Why, "damaged") || res.Checkpoints != 1 {
		t.Fatalf("rebuild: %+v, %v", res, err)
	}
	if b, err := os.ReadFile(res.KeptAside); err != nil || !bytes.Equal(b, raw) {
		t.Errorf("the damaged database was not kept aside as it was (%v)", err)
	}
	if r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false); !r.OK {
		t.Errorf("after the rebuild: %+v", r.Findings)
	}
}

// A database path that cannot even be examined is reported, not taken for a missing database.
func TestDoctorDatabaseCannotBeExamined(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	if err := os.Remove(l.Database()); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(l.Database(), l.Database()); err != nil { // a loop: stat fails with ELOOP
		t.Fatal(err)
	}
	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false)
	f := finding(t, r, "database")
	if r.OK || f.OK || !strings.Contains(f.Problem, "too many levels of symbolic links") || strings.Contains(f.Problem, "is missing") {
		t.Errorf("report ok=%v, database finding %+v", r.OK, f)
	}
}
