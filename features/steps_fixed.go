package features

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/cucumber/godog"
	_ "github.com/mattn/go-sqlite3" // the workspace's metadata database, held or changed as another process would
)

// registerFixedSteps registers the steps of fixed.feature (what opening a workspace costs and
// still guarantees): another process holding the SQLite database's write lock, and a database that
// lost its newest recorded transaction.
func (s *scenario) registerFixedSteps(sc *godog.ScenarioContext) {
	var held *sql.DB // the database the "other process" holds the write lock of
	release := func() error {
		if held == nil {
			return errors.New("no process holds the database's write lock")
		}
		err := held.Close() // closing the connection ends its transaction
		held = nil
		return err
	}
	sc.Step(`^another process holds the metadata database's write lock$`, func() error {
		if held != nil {
			return errors.New("the database's write lock is already held")
		}
		db, err := s.openMetadata()
		if err != nil {
			return err
		}
		db.SetMaxOpenConns(1)
		if _, err := db.Exec(`BEGIN IMMEDIATE`); err != nil {
			_ = db.Close()
			return fmt.Errorf("take the database's write lock: %w", err)
		}
		held = db
		return nil
	})
	sc.Step(`^the other process releases the metadata database's write lock$`, release)
	sc.Step(`^the metadata database loses its newest recorded transaction$`, func() error {
		db, err := s.openMetadata()
		if err != nil {
			return err
		}
		defer func() { _ = db.Close() }()
		res, err := db.Exec(`DELETE FROM ledger WHERE seq = (SELECT MAX(seq) FROM ledger)`)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("deleted %d ledger rows, want 1", n)
		}
		return nil
	})
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		if held != nil {
			_ = release()
		}
		return ctx, nil
	})
}

// openMetadata opens the workspace's SQLite database as another process would.
func (s *scenario) openMetadata() (*sql.DB, error) {
	path, err := s.history("plan.db")
	if err != nil {
		return nil, err
	}
	return sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
}
