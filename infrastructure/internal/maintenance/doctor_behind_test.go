package maintenance_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3" // the driver gorm's SQLite dialect registers

	"github.com/planhq/plan/infrastructure/internal/maintenance"
)

// A database that opens and checks out but has not seen the store's newest records (restored from
// an older backup, rows lost) is reported as behind, not healthy, and the rebuild brings it up to
// date.
func TestDoctorReportsADatabaseBehindTheStore(t *testing.T) {
	l := workspaceWithCheckpoint(t)
	db, err := sql.Open("sqlite3", l.Database())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DELETE FROM checkpoints`, `DELETE FROM ledger`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	_ = db.Close()
	r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false)
	f := finding(t, r, "database")
	if r.OK || f.OK || !strings.Contains(f.Problem, "behind the store") || !strings.Contains(f.Repair, "plan doctor --rebuild") {
		t.Fatalf("report ok=%v, database finding %+v", r.OK, f)
	}
	res, err := maintenance.Rebuild(context.Background(), maintenance.PrivateTarget(l), time.Now())
	if err != nil || !res.Rebuilt || res.Checkpoints != 1 || !strings.Contains(res.Why, "behind") {
		t.Fatalf("rebuild: %+v, %v", res, err)
	}
	if r := maintenance.Doctor(context.Background(), maintenance.PrivateTarget(l), false); !r.OK {
		t.Fatalf("after the rebuild: %+v", r)
	}
}
