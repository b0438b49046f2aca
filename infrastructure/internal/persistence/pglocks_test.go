package persistence

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/tests/testkit/servertest"
)

// pgImpatient returns a new PostgreSQL database whose sessions give up waiting for a lock after a
// moment (a lock_timeout, as a server's administrator may set one), so a lock another process holds
// makes plan's statement fail instead of wait.
func pgImpatient(t *testing.T) string {
	t.Helper()
	dsn := servertest.Postgres(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	servertest.Exec(t, dsn, `ALTER DATABASE `+pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()+` SET lock_timeout = '100ms'`)
	return dsn
}

// holdLock takes the advisory lock of scope (a workspace ID, or schemaLock) in a session of its
// own, as another plan process in the middle of a transaction holds it, until release is called
// (or the test ends).
func holdLock(t *testing.T, dsn, scope string) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, advisoryKey(scope)); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			_ = conn.Close(ctx)
		}
	}
	t.Cleanup(release)
	return release
}

func isLockWait(err error, scope string) bool {
	return err != nil && strings.Contains(err.Error(), "wait for the write lock of "+scope)
}

// While another process holds a workspace's write lock and the server will not wait for it, a
// write, a rebuild in place and the settling of pending records each fail saying so, and change
// nothing: no row, no record, and above all no pending record discarded (its transaction may be
// committing). Once the lock is free, all goes through.
func TestPostgresWorkspaceLockNotGranted(t *testing.T) {
	ctx := context.Background()
	dsn := pgImpatient(t)
	ws := ident.New(time.Now())
	recs := newRecords(t)
	opts := []Option{WithWorkspace(ws), WithLedger(recs)}
	db, err := Open(ctx, dsn, true, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cps := NewCheckpoints(db)
	if err := cps.Add(ctx, newCP(t, id1, time.Unix(1, 0))); err != nil {
		t.Fatal(err)
	}
	want := dump(t, db)
	before, _ := recs.Committed()

	release := holdLock(t, dsn, ws)
	if err := cps.Add(ctx, newCP(t, id2, time.Unix(2, 0))); !isLockWait(err, ws) {
		t.Fatalf("a write without the lock: %v", err)
	}
	if _, err := db.RebuildWorkspace(ctx, recs); !isLockWait(err, ws) {
		t.Fatalf("a rebuild in place without the lock: %v", err)
	}
	if d := diffDumps(want, dump(t, db)); d != "" {
		t.Fatalf("the workspace changed:\n%s", d)
	}
	if c, p := names(t, recs); strings.Join(c, ",") != strings.Join(before, ",") || len(p) != 0 {
		t.Fatalf("records %v (before %v), pending %v", c, before, p)
	}
	// A transaction of another process, its record prepared: opening must not settle it unlocked.
	pending, err := recs.Prepare(1000, []byte(recordBody(1000, "")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, dsn, false, opts...); !isLockWait(err, ws) {
		t.Fatalf("an open that cannot settle the pending records: %v", err)
	}
	if _, p := names(t, recs); len(p) != 1 || p[0] != pending {
		t.Fatalf("pending records %v, want %s kept", p, pending)
	}

	release()
	again, err := Open(ctx, dsn, false, opts...)
	if err != nil {
		t.Fatal(err)
	}
	_ = again.Close()
	if c, p := names(t, recs); strings.Join(c, ",") != strings.Join(before, ",") || len(p) != 0 {
		t.Fatalf("after the lock was free: records %v, pending %v (the ledger names no such record: discarded)", c, p)
	}
	if err := cps.Add(ctx, newCP(t, id2, time.Unix(2, 0))); err != nil {
		t.Fatal(err)
	}
}

// While another process migrates the schema, or adds the very workspace being opened, an Open
// the server will not let wait fails saying so and creates nothing: no schema, no workspace row.
func TestPostgresSchemaLockNotGranted(t *testing.T) {
	ctx := context.Background()
	t.Run("schema", func(t *testing.T) {
		dsn := pgImpatient(t)
		holdLock(t, dsn, schemaLock)
		_, err := Open(ctx, dsn, true, WithWorkspace(ident.New(time.Now())))
		if !isLockWait(err, schemaLock) || !strings.Contains(err.Error(), "prepare schema table") {
			t.Fatalf("open while the schema is locked: %v", err)
		}
		if tables := pgTables(t, dsn); len(tables) != 0 {
			t.Fatalf("a failed open left tables: %v", tables)
		}
	})
	t.Run("workspace", func(t *testing.T) {
		dsn := pgImpatient(t)
		first, err := Open(ctx, dsn, true, WithWorkspace(ident.New(time.Now())))
		if err != nil {
			t.Fatal(err)
		}
		_ = first.Close()
		ws := ident.New(time.Now().Add(time.Second))
		holdLock(t, dsn, ws)
		if _, err := Open(ctx, dsn, true, WithWorkspace(ws)); !isLockWait(err, ws) {
			t.Fatalf("open while the workspace is locked: %v", err)
		}
		list, err := Open(ctx, dsn, false, WithoutWorkspace())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = list.Close() }()
		infos, err := list.Workspaces(ctx)
		if err != nil || len(infos) != 1 || infos[0].ID == ws {
			t.Fatalf("workspaces after a failed open: %+v, %v", infos, err)
		}
	})
}

// pgTables lists the tables of the database's current schema.
func pgTables(t *testing.T, dsn string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func names(t *testing.T, recs *objectstore.Records) (committed, pending []string) {
	t.Helper()
	c, err := recs.Committed()
	if err != nil {
		t.Fatal(err)
	}
	p, err := recs.Pending()
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}
