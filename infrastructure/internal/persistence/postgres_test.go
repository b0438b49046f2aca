package persistence

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/planhq/plan/domain/ident"
)

// newPostgres returns the URL of a new, empty database on the PostgreSQL server
// PLAN_TEST_POSTGRES_DSN names (a superuser's URL), dropped when the test ends. Without the
// variable the test is skipped, unless PLAN_TEST_REQUIRE_SERVERS=1, when it fails.
func newPostgres(t testing.TB) string {
	t.Helper()
	admin := os.Getenv("PLAN_TEST_POSTGRES_DSN")
	if admin == "" {
		if os.Getenv("PLAN_TEST_REQUIRE_SERVERS") == "1" {
			t.Fatal("PLAN_TEST_POSTGRES_DSN is not set, and PLAN_TEST_REQUIRE_SERVERS=1 requires a PostgreSQL server")
		}
		t.Skip("PLAN_TEST_POSTGRES_DSN is not set: no PostgreSQL server to test against")
	}
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	conn := stdlib.OpenDB(*cfg)
	defer func() { _ = conn.Close() }()
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "plan_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := conn.ExecContext(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		conn := stdlib.OpenDB(*cfg)
		defer func() { _ = conn.Close() }()
		if _, err := conn.Exec(`DROP DATABASE ` + name + ` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// engine is one database engine the tests run on: new makes the target of a new, empty database
// and the options that open it for a new workspace.
type engine struct {
	name string
	new  func(t testing.TB) (string, []Option)
}

var engines = []engine{
	{"sqlite", func(t testing.TB) (string, []Option) {
		return filepath.Join(t.TempDir(), "plan.db"), nil
	}},
	{"postgres", func(t testing.TB) (string, []Option) {
		return newPostgres(t), []Option{WithWorkspace(ident.New(time.Now()))}
	}},
}

// onEngines runs fn as a subtest on each engine.
func onEngines(t *testing.T, fn func(t *testing.T, e engine)) {
	t.Helper()
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) { fn(t, e) })
	}
}

// open opens a new database of e for a new workspace, closed when the test ends.
func (e engine) open(t testing.TB, opts ...Option) *DB {
	t.Helper()
	target, base := e.new(t)
	db, err := Open(context.Background(), target, true, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// rebuild makes a new database of e from the records of l alone, for workspace ws: on SQLite with
// Rebuild (ws "" lets the records name it), on PostgreSQL with RebuildWorkspace into a new
// database. The database, open and closed at cleanup, is returned when the rebuild succeeds; when
// it fails, the test fails unless it left nothing behind (no file; no row of the workspace).
func (e engine) rebuild(t testing.TB, l Ledger, ws string) (RebuildReport, *DB, error) {
	t.Helper()
	ctx := context.Background()
	target, _ := e.new(t)
	if ws == "" && e.name == "postgres" {
		ws = ident.New(time.Now())
	}
	var opts []Option
	if ws != "" {
		opts = append(opts, WithWorkspace(ws))
	}
	var rep RebuildReport
	var err error
	if e.name == "sqlite" {
		if rep, err = Rebuild(ctx, target, l, opts...); err != nil {
			noDatabase(t, target)
			return rep, nil, err
		}
	} else {
		db, oerr := Open(ctx, target, true, opts...)
		if oerr != nil {
			t.Fatal(oerr)
		}
		rep, err = db.RebuildWorkspace(ctx, l)
		_ = db.Close()
	}
	db, oerr := Open(ctx, target, false, opts...)
	if oerr != nil {
		t.Fatal(oerr)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err != nil {
		if d := dump(t, db); rowsIn(d) > 0 {
			t.Errorf("a failed rebuild left rows: %v", d)
		}
		return rep, nil, err
	}
	return rep, db, nil
}

// rowsIn counts the rows of a dump.
func rowsIn(d map[string][]map[string]any) int {
	n := 0
	for _, rows := range d {
		n += len(rows)
	}
	return n
}
