package persistence

import (
	"context"
	"fmt"
)

// MissingRecords lists the records the database has seen committed (its ledger table names them)
// that l, the store's records of the workspace, no longer holds, neither committed nor pending: deleted from the store by hand,
// or lost with it. Until they are written again (Compact writes the database's whole history as a
// new baseline record), a rebuild would lose what they recorded, and a gc of another workspace of
// a shared store, which reads only records, may collect what they reference. It takes the records
// as an argument, so that a database opened without them (as doctor opens it, changing nothing)
// can be checked.
func (d *DB) MissingRecords(ctx context.Context, l Ledger) ([]string, error) {
	var names []string
	// The rows first, then the pending records, then the committed ones: a record the database
	// names is pending or committed, and one committed meanwhile is seen by the second listing.
	if err := d.gorm.WithContext(ctx).Raw(`SELECT name FROM ledger WHERE workspace_id = ? ORDER BY seq`, d.workspace).Scan(&names).Error; err != nil {
		return nil, fmt.Errorf("read the ledger: %w", err)
	}
	if len(names) == 0 {
		return nil, nil
	}
	held := map[string]bool{}
	for _, list := range []func() ([]string, error){l.Pending, l.Committed} {
		got, err := list()
		if err != nil {
			return nil, err
		}
		for _, n := range got {
			held[n] = true
		}
	}
	var missing []string
	for _, n := range names {
		if !held[n] {
			missing = append(missing, n)
		}
	}
	return missing, nil
}
