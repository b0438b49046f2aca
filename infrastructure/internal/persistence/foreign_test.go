package persistence

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"github.com/planhq/plan/domain/fault"
)

// A database holding another application's tables is a DSN plan cannot use (invalid input), at
// init and after: never adopted, never "run plan doctor --rebuild", never an internal error; and
// nothing is created in it.
func TestForeignDatabaseIsInvalid(t *testing.T) {
	for name, c := range map[string]struct {
		ddl   []string
		fresh bool
		what  string
	}{
		"unrelated tables":     {[]string{`CREATE TABLE foo (id INTEGER)`, `CREATE TABLE bar (id INTEGER)`, `CREATE TABLE baz (id INTEGER)`, `CREATE TABLE qux (id INTEGER)`}, true, "(bar, baz, foo, …)"},
		"golang-migrate":       {[]string{`CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, dirty BOOLEAN NOT NULL)`, `INSERT INTO schema_migrations VALUES (20240101, 0)`}, true, "schema_migrations"},
		"rails":                {[]string{`CREATE TABLE schema_migrations (version VARCHAR PRIMARY KEY)`, `INSERT INTO schema_migrations VALUES ('20230101000000')`}, true, "schema_migrations"},
		"rails, not a new one": {[]string{`CREATE TABLE schema_migrations (version VARCHAR PRIMARY KEY)`, `INSERT INTO schema_migrations VALUES ('20230101000000')`}, false, "schema_migrations"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "foreign.db")
			raw, err := sql.Open("sqlite3", path)
			if err != nil {
				t.Fatal(err)
			}
			for _, stmt := range c.ddl {
				if _, err := raw.Exec(stmt); err != nil {
					t.Fatal(err)
				}
			}
			_, err = Open(context.Background(), path, c.fresh)
			if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "another application's") || !strings.Contains(err.Error(), c.what) {
				t.Fatalf("Open = %v", err)
			}
			var n int
			if err := raw.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table'`).Scan(&n); err != nil || n != countTables(c.ddl) {
				t.Fatalf("tables after: %d, %v", n, err)
			}
			_ = raw.Close()
		})
	}
}

func countTables(ddl []string) (n int) {
	for _, s := range ddl {
		if strings.HasPrefix(s, "CREATE TABLE") {
			n++
		}
	}
	return n
}
