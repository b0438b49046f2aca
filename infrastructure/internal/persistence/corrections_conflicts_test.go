package persistence

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/fault"
)

// A correction whose recorded conflicts are damaged is an integrity error naming it: a damaged
// list must never read as "no conflicts", which would hide paths the correction could not undo.
// A row from before conflicts were recorded ("") has none.
func TestCorrectionConflicts(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		db := e.open(t)
		repo := NewCorrections(db)
		if err := repo.Add(ctx, newCorrection(t, corr1, time.Unix(1_700_000_000, 0))); err != nil {
			t.Fatal(err)
		}
		if err := db.gorm.Exec(`UPDATE corrections SET conflicts = ''`).Error; err != nil {
			t.Fatal(err)
		}
		c, err := repo.Get(ctx, corr1)
		if err != nil || len(c.Params().Conflicts) != 0 {
			t.Fatalf("conflicts of an older row: %v", err)
		}
		if err := db.gorm.Exec(`UPDATE corrections SET conflicts = '[{"path":'`).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Get(ctx, corr1); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "damaged conflicts") ||
			!strings.Contains(err.Error(), corr1) {
			t.Fatalf("damaged conflicts: %v", err)
		}
	})
}
