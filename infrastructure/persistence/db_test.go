package persistence

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
)

// A database that an initialised workspace should have filled is never taken for a fresh one:
// a zero-byte file, a database without plan's schema, or one missing a table its version promises
// is an integrity error naming the repair, unless the caller allows a fresh start.
func TestOpenRefusesAnEmptyOrIncompleteDatabase(t *testing.T) {
	ctx := context.Background()
	cases := map[string]func(t *testing.T, path string){
		"zero bytes": func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"another schema": func(t *testing.T, path string) {
			db := mustOpen(t, path, true)
			if err := db.gorm.Exec(`DROP TABLE schema_migrations`).Error; err != nil {
				t.Fatal(err)
			}
			_ = db.Close()
		},
		"a table dropped": func(t *testing.T, path string) {
			db := mustOpen(t, path, true)
			if err := db.gorm.Exec(`DROP TABLE attempts`).Error; err != nil {
				t.Fatal(err)
			}
			_ = db.Close()
		},
		"no version": func(t *testing.T, path string) {
			db := mustOpen(t, path, true)
			if err := db.gorm.Exec(`DELETE FROM schema_migrations`).Error; err != nil {
				t.Fatal(err)
			}
			_ = db.Close()
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plan.db")
			damage(t, path)
			_, err := Open(ctx, path, false)
			if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "plan doctor") {
				t.Fatalf("Open = %v, want an integrity error naming plan doctor", err)
			}
		})
	}
	// The same zero-byte file may start fresh when the caller says nothing can be lost.
	path := filepath.Join(t.TempDir(), "plan.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	db := mustOpen(t, path, true)
	_ = db.Close()
	// And once filled it opens without create.
	db = mustOpen(t, path, false)
	_ = db.Close()
}

func mustOpen(t *testing.T, path string, create bool) *DB {
	t.Helper()
	db, err := Open(context.Background(), path, create)
	if err != nil {
		t.Fatal(err)
	}
	return db
}
