package persistence

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/tests/testkit"
	"github.com/planhq/plan/tests/testkit/servertest"
)

// shortBackoff makes Open give up on a server quickly.
func shortBackoff(t *testing.T) {
	t.Helper()
	was, budget := connectBackoff, connectBudget
	connectBackoff, connectBudget = []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}, time.Second
	t.Cleanup(func() { connectBackoff, connectBudget = was, budget })
}

// A server that cannot be reached is fault.ErrUnavailable, quickly, naming the server and never
// the password, whether the URL holds it as user info or as a parameter.
func TestUnreachableServerIsUnavailable(t *testing.T) {
	shortBackoff(t)
	ctx := context.Background()
	addr := testkit.ClosedPort(t)
	for name, dsn := range map[string]string{
		"refused":          "postgres://plan:s3cret-pw@" + addr + "/plan?sslmode=disable",
		"password in URL":  "postgresql://plan@" + addr + "/plan?sslmode=disable&password=s3cret-pw",
		"unknown host":     "postgres://plan:s3cret-pw@plan-test-host.invalid:5432/plan?sslmode=disable",
		"refused, no port": "postgres://plan:s3cret-pw@127.0.0.1:1/plan?sslmode=disable",
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, err := Open(ctx, dsn, false, WithWorkspace("w"))
			if !errors.Is(err, fault.ErrUnavailable) {
				t.Fatalf("Open = %v, want unavailable", err)
			}
			u, _ := url.Parse(dsn)
			if msg := err.Error(); strings.Contains(msg, "s3cret") || !strings.Contains(msg, u.Host) {
				t.Fatalf("message %q: want the server %s and no password", msg, u.Host)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
	// A URL pgx refuses is invalid input, and its message holds no password either.
	if _, err := Open(ctx, "postgres://plan:s3cret-pw@"+addr+"/plan?sslmode=bogus", false, WithWorkspace("w")); !errors.Is(err, fault.ErrInvalid) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("a URL pgx refuses: %v", err)
	}
	// The budget bounds the whole, backoff included.
	connectBackoff, connectBudget = []time.Duration{time.Minute}, 100*time.Millisecond
	start := time.Now()
	if _, err := Open(ctx, "postgres://plan@"+addr+"/plan", false, WithWorkspace("w")); !errors.Is(err, fault.ErrUnavailable) || time.Since(start) > 2*time.Second {
		t.Fatalf("open within a budget shorter than the backoff: %v after %v", err, time.Since(start))
	}
	// A cancelled caller is told so, not that the server is down.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Open(cctx, "postgres://plan@"+addr+"/plan", false, WithWorkspace("w")); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled open: %v", err)
	}
}

// A database the server does not have is unavailable: nothing was changed and the same open can
// work once the server is set up. Credentials it refuses are denied, at once (no retries), and
// neither message holds the password.
func TestMissingDatabaseIsUnavailable(t *testing.T) {
	shortBackoff(t)
	dsn := newPostgres(t)
	u, _ := url.Parse(dsn)
	u.Path = "/plan_test_no_such_database"
	_, err := Open(context.Background(), u.String(), true, WithWorkspace("w"))
	if pw, _ := u.User.Password(); !errors.Is(err, fault.ErrUnavailable) || pw != "" && strings.Contains(err.Error(), pw) {
		t.Fatalf("Open = %v", err)
	}
	u, _ = url.Parse(dsn)
	u.User = url.UserPassword(u.User.Username(), "s3cret-pw")
	_, err = Open(context.Background(), u.String(), true, WithWorkspace("w"))
	if errors.Is(err, fault.ErrUnavailable) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Open with a wrong password = %v", err)
	}
	if !errors.Is(err, fault.ErrDenied) {
		t.Skipf("the server did not refuse a wrong password (trust authentication?): %v", err)
	}
	if !strings.Contains(err.Error(), "refused the login") {
		t.Fatalf("Open with a wrong password = %v", err)
	}
}

// The target a message prints never holds a credential, and shows none it did not have.
func TestTargetIsRedacted(t *testing.T) {
	tg, err := parseTarget("postgres://plan:pw-one@db.example:6543/meta?sslmode=require&password=pw-two&passfile=pw-three")
	if err != nil {
		t.Fatal(err)
	}
	if tg.dialect != Postgres || strings.Contains(tg.shown, "pw-") || tg.hostPort != "db.example:6543" ||
		tg.shown != "postgres://plan@db.example:6543/meta?sslmode=require" {
		t.Fatalf("%+v", tg)
	}
	if tg, _ := parseTarget("postgres:///meta"); tg.hostPort == "" {
		t.Fatal("no server named for a URL without a host")
	}
	// Messages are not masked by text: a password that is also a word stays a word.
	if got := (oneLine{errors.New("failed to connect to `user=plan database=plan`:\n\tdial error")}).Error(); got != "failed to connect to `user=plan database=plan`:; dial error" {
		t.Fatal(got)
	}
	if got := parseMessage(errors.New("plain")); got != "plain" {
		t.Fatal(got)
	}
}

// The deadlines: the DSN's own, or the defaults; a statement_timeout plan cannot read is invalid.
func TestDeadlines(t *testing.T) {
	for _, c := range []struct {
		v    string
		want time.Duration
	}{{"1500", 1500 * time.Millisecond}, {"2s", 2 * time.Second}, {" 1 min", time.Minute}, {"0", 0}, {"250ms", 250 * time.Millisecond}} {
		if got, err := pgDuration(c.v); err != nil || got != c.want {
			t.Errorf("pgDuration(%q) = %v, %v", c.v, got, err)
		}
	}
	for _, bad := range []string{"", "x", "5 fortnights", "-1", "99999999999999999d"} {
		if _, err := pgDuration(bad); err == nil {
			t.Errorf("pgDuration(%q) passed", bad)
		}
	}
	cfg, err := pgx.ParseConfig("postgres://u@127.0.0.1:1/d")
	if err != nil {
		t.Fatal(err)
	}
	if err := withDeadlines(cfg); err != nil || cfg.ConnectTimeout != DefaultConnectTimeout || cfg.RuntimeParams["statement_timeout"] != "60000" {
		t.Fatalf("defaults: %v %v %v", err, cfg.ConnectTimeout, cfg.RuntimeParams)
	}
	cfg, _ = pgx.ParseConfig("postgres://u@127.0.0.1:1/d?connect_timeout=2&statement_timeout=0")
	if err := withDeadlines(cfg); err != nil || cfg.ConnectTimeout != 2*time.Second || cfg.RuntimeParams["statement_timeout"] != "0" {
		t.Fatalf("the DSN's own: %v %v %v", err, cfg.ConnectTimeout, cfg.RuntimeParams)
	}
	_, err = Open(context.Background(), "postgres://u:s3cret@127.0.0.1:1/d?statement_timeout=soon", true, WithWorkspace("w"))
	if !errors.Is(err, fault.ErrInvalid) || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "statement_timeout") {
		t.Fatalf("Open = %v", err)
	}
}

// A server that stops answering (frozen, or a network that drops everything) is given up on after
// the statement timeout and its grace: unavailable, naming the server and the wait; a server that
// answers late, within the wait, is waited for.
func TestFrozenServerIsUnavailable(t *testing.T) {
	dsn, fz := frozenDSN(t, "statement_timeout", "300")
	was := answerGrace
	answerGrace = 200 * time.Millisecond
	t.Cleanup(func() { answerGrace = was })
	ctx := context.Background()
	db, err := Open(ctx, dsn, true, WithWorkspace("w"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	cps := NewCheckpoints(db)
	fz.freeze(true)
	start := time.Now()
	_, err = cps.List(ctx)
	if !errors.Is(err, fault.ErrUnavailable) || !strings.Contains(err.Error(), "did not answer within 500ms") || !strings.Contains(err.Error(), fz.addr) {
		t.Fatalf("List on a frozen server = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("took %v", d)
	}
	fz.freeze(false)
	if _, err := cps.List(ctx); err != nil {
		t.Fatalf("after the freeze: %v", err)
	}
	// The server's own cancellation of a statement running past the timeout is unavailable too.
	err = db.gorm.WithContext(ctx).Exec(`SELECT pg_sleep(1)`).Error
	if !errors.Is(err, fault.ErrUnavailable) || !strings.Contains(err.Error(), "statement_timeout") {
		t.Fatalf("a statement past its timeout: %v", err)
	}
	// A permission the account lacks is denied (the role lives only in the transaction).
	err = db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		role := fmt.Sprintf("plan_test_nobody_%d", time.Now().UnixNano())
		if err := tx.Exec(`CREATE ROLE ` + role).Error; err != nil {
			return err
		}
		if err := tx.Exec(`SET LOCAL ROLE ` + role).Error; err != nil {
			return err
		}
		return tx.Exec(`SELECT * FROM checkpoints`).Error
	})
	if !errors.Is(err, fault.ErrDenied) {
		t.Fatalf("a refused permission: %v", err)
	}
}

// A connection lost in the middle of a transaction is fault.ErrUnavailable; what the server
// refuses (a duplicate key) keeps its own kind; a statement the server rejects is neither.
func TestLostConnectionIsUnavailable(t *testing.T) {
	ctx := context.Background()
	dsn := newPostgres(t)
	db, err := Open(ctx, dsn, true, WithWorkspace("w"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	cps := NewCheckpoints(db)
	if err := cps.Add(ctx, newCP(t, id1, time.Unix(1, 0))); err != nil {
		t.Fatal(err)
	}
	if err := cps.Add(ctx, newCP(t, id1, time.Unix(1, 0))); !errors.Is(err, fault.ErrConflict) || errors.Is(err, fault.ErrUnavailable) {
		t.Fatalf("a duplicate: %v", err)
	}
	err = NewTransactor(db).Do(ctx, func(ctx context.Context) error {
		u, err := unitOf(ctx)
		if err != nil {
			return err
		}
		var pid int
		if err := u.tx.Raw(`SELECT pg_backend_pid()`).Scan(&pid).Error; err != nil {
			return err
		}
		servertest.Exec(t, dsn, fmt.Sprintf(`SELECT pg_terminate_backend(%d)`, pid))
		return cps.Add(ctx, newCP(t, id2, time.Unix(2, 0)))
	})
	if !errors.Is(err, fault.ErrUnavailable) || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Fatalf("a write on a lost connection: %v", err)
	}
	// The pool reconnects: the handle goes on working, and the lost write did not happen.
	if _, err := cps.Get(ctx, id2); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("the lost write: %v", err)
	}
	if err := db.gorm.Exec(`SELECT no_such_column FROM checkpoints`).Error; err == nil || fault.Kind(err) != nil {
		t.Fatalf("a statement the server rejects: %v", err)
	}
	for _, e := range []error{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), fmt.Errorf("read: %w", net.ErrClosed)} {
		if !lostConnection(e) {
			t.Errorf("%v is a lost connection", e)
		}
	}
}

// On PostgreSQL the schema is the same as on SQLite, translated: 64-bit integers (no column can
// overflow at a nanosecond timestamp), booleans for the flags, and the columns schemaAt promises.
// IntegrityCheck reports a missing table or column and rows of no listed workspace.
func TestPostgresSchemaAndIntegrityCheck(t *testing.T) {
	ctx := context.Background()
	onEngines(t, func(t *testing.T, e engine) {
		db := e.open(t)
		for table, want := range schemaAt(latestSchema()) {
			have, err := db.columnsOf(db.gorm, table)
			if err != nil {
				t.Fatal(err)
			}
			var cols []string
			for c := range have {
				cols = append(cols, c)
			}
			slices.Sort(cols)
			want = slices.Sorted(slices.Values(want))
			if !slices.Equal(cols, want) {
				t.Errorf("%s has %v, schemaAt says %v", table, cols, want)
			}
		}
	})
	dsn := newPostgres(t)
	db, err := Open(ctx, dsn, true, WithWorkspace("w"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	var types []struct{ TableName, ColumnName, DataType string }
	if err := db.gorm.Raw(`SELECT table_name, column_name, data_type FROM information_schema.columns
		WHERE table_schema = current_schema()`).Scan(&types).Error; err != nil {
		t.Fatal(err)
	}
	for _, c := range types {
		flag := flagColumns[c.TableName][c.ColumnName]
		if c.DataType == "integer" || flag != (c.DataType == "boolean") || !slices.Contains([]string{"bigint", "text", "boolean"}, c.DataType) {
			t.Errorf("%s.%s is %s", c.TableName, c.ColumnName, c.DataType)
		}
	}
	if p, err := db.IntegrityCheck(ctx); err != nil || len(p) != 0 {
		t.Fatalf("healthy: %v, %v", p, err)
	}
	for _, stmt := range []string{
		`INSERT INTO operations (workspace_id, id, kind, started_at, finished_at, outcome) VALUES ('nobody', 'o', 'run', 1, 2, 'ok')`,
		`ALTER TABLE checkpoints DROP COLUMN labels`,
		`DROP TABLE history`,
	} {
		if err := db.gorm.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
	p, err := db.IntegrityCheck(ctx)
	if err != nil || len(p) != 3 || !strings.Contains(strings.Join(p, "\n"), "checkpoints lacks the columns labels") ||
		!strings.Contains(strings.Join(p, "\n"), "history is missing") || !strings.Contains(strings.Join(p, "\n"), "operations has 1 rows of no listed workspace") {
		t.Fatalf("damage: %q, %v", p, err)
	}
	if err := db.gorm.Exec(`DROP TABLE schema_migrations`).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := db.IntegrityCheck(ctx); err == nil {
		t.Fatal("a check without a schema version passed")
	}
}

// An empty or incomplete PostgreSQL database is refused as SQLite's is; a shared database needs a
// workspace ID, and one it does not hold is not found unless it may be made.
func TestPostgresOpenRefusals(t *testing.T) {
	ctx := context.Background()
	dsn := newPostgres(t)
	if _, err := Open(ctx, dsn, false, WithWorkspace("w")); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("an empty database without create: %v", err)
	}
	if _, err := Open(ctx, dsn, true); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("no workspace ID: %v", err)
	}
	db, err := Open(ctx, dsn, true, WithWorkspace("w"))
	if err != nil {
		t.Fatal(err)
	}
	shown := dsn // the target as printed: without its password
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		u.User = url.User(u.User.Username())
		shown = u.String()
	}
	if db.Dialect() != Postgres || db.Target() != shown {
		t.Fatalf("target %s, want %s", db.Target(), shown)
	}
	_ = db.Close()
	if _, err := Open(ctx, dsn, false, WithWorkspace("other")); !errors.Is(err, fault.ErrNotFound) {
		t.Fatalf("an unknown workspace: %v", err)
	}
	servertest.Exec(t, dsn, `DROP TABLE attempts`)
	if _, err := Open(ctx, dsn, false, WithWorkspace("w")); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "attempts") {
		t.Fatalf("a dropped table: %v", err)
	}
}

// A transaction whose commit fails after its record was prepared and noted (a deferred constraint,
// checked only at commit) leaves no record on PostgreSQL either.
func TestPostgresCommitFailureDiscardsThePreparedRecord(t *testing.T) {
	ctx := context.Background()
	f := newLedgerFixtureOn(t, engines[1], 1)
	for _, stmt := range []string{
		`CREATE FUNCTION plan_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$`,
		`CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON history DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION plan_test_refuse()`,
	} {
		if err := f.db.gorm.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
	err := f.db.write(ctx, "history", "h", func(tx *gorm.DB) error {
		return tx.Exec(`INSERT INTO history (workspace_id, id, kind, target_checkpoint, backup_checkpoint, started_at, finished_at, added, modified, deleted)
			VALUES (?, 'h', 'rollback', '', '', 1, 2, 0, 0, 0)`, f.db.WorkspaceID()).Error
	})
	if err == nil || !strings.Contains(err.Error(), "refused at commit") {
		t.Fatalf("a commit the server refuses: %v", err)
	}
	committed, pending := f.names(t)
	if len(committed) != 1 || len(pending) != 0 {
		t.Fatalf("records %v, pending %v", committed, pending)
	}
	f.rebuildMatches(t, dump(t, f.db))
}

// A shared database that lost its workspaces table is never reported healthy by the integrity
// check: it cannot tell which rows belong to a listed workspace, and says the table is what fails.
func TestPostgresIntegrityCheckWithoutTheWorkspacesTable(t *testing.T) {
	ctx := context.Background()
	dsn := servertest.Postgres(t)
	db, err := Open(ctx, dsn, true, WithWorkspace(ident.New(time.Now())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := NewCheckpoints(db).Add(ctx, newCP(t, id1, time.Unix(1, 0))); err != nil {
		t.Fatal(err)
	}
	servertest.Exec(t, dsn, `DROP TABLE workspaces CASCADE`)
	complaints, err := db.IntegrityCheck(ctx)
	if err == nil || !strings.Contains(err.Error(), "workspaces") {
		t.Fatalf("integrity check without the workspaces table: complaints %v, error %v", complaints, err)
	}
}

// limitedRole makes a login role of the server that may use every table of the database at dsn
// except what revoke takes back (a grant an administrator got wrong), and returns its DSN. The role
// is dropped when the test ends.
func limitedRole(t *testing.T, dsn string, revoke ...string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	role, pw := "plan_limited_"+hex.EncodeToString(b[:]), hex.EncodeToString(b[:])
	stmts := []string{
		`CREATE ROLE ` + role + ` LOGIN PASSWORD '` + pw + `'`,
		`GRANT USAGE, CREATE ON SCHEMA public TO ` + role,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ` + role,
		`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ` + role,
	}
	for _, r := range revoke {
		stmts = append(stmts, `REVOKE `+r+` FROM `+role)
	}
	servertest.Exec(t, dsn, stmts...)
	t.Cleanup(func() { servertest.Exec(t, dsn, `DROP OWNED BY `+role, `DROP ROLE `+role) })
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, pw)
	return u.String()
}

// An Open whose reads of the workspaces or the ledger the server refuses fails with the refusal,
// naming what it read: it never takes an unreadable list for an empty one (which would add a
// workspace, or write a baseline over records it cannot see), and writes no record.
func TestPostgresOpenWhenReadsAreRefused(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, revoke string
		pending      bool
		says         string
	}{
		{"workspaces", "SELECT ON workspaces", false, "list the workspaces"},
		{"ledger, settling pending records", "SELECT ON ledger", true, "ledger"},
		{"ledger, deciding on a baseline", "SELECT ON ledger", false, "ledger"},
		{"a table the baseline counts", "SELECT ON history", false, "history"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := pgImpatient(t)
			ws := ident.New(time.Now())
			made, err := Open(ctx, dsn, true, WithWorkspace(ws))
			if err != nil {
				t.Fatal(err)
			}
			if err := NewCheckpoints(made).Add(ctx, newCP(t, id1, time.Unix(1, 0))); err != nil {
				t.Fatal(err)
			}
			_ = made.Close()
			limited := limitedRole(t, dsn, tc.revoke)
			recs := newRecords(t)
			if tc.pending {
				if _, err := recs.Prepare(7, []byte(recordBody(7, ""))); err != nil {
					t.Fatal(err)
				}
			}
			_, err = Open(ctx, limited, false, WithWorkspace(ws), WithLedger(recs))
			if err == nil || !strings.Contains(err.Error(), "permission denied") || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("open: %v, want the server's refusal naming %q", err, tc.says)
			}
			c, p := names(t, recs)
			if len(c) != 0 || len(p) != map[bool]int{true: 1}[tc.pending] {
				t.Fatalf("records %v, pending %v", c, p)
			}
		})
	}
}

// A connection the server never finishes making (frozen during its start-up) names the connect
// timeout in force: the DSN's own, as the database was opened with it.
func TestFrozenConnectNamesItsTimeout(t *testing.T) {
	dsn, fz := frozenDSN(t, "connect_timeout", "1")
	ctx := context.Background()
	db, err := Open(ctx, dsn, true, WithWorkspace("w"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	sqlDB, err := db.gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxIdleConns(0) // the next statement connects anew
	fz.freeze(true)
	defer fz.freeze(false)
	_, err = NewCheckpoints(db).List(ctx)
	if !errors.Is(err, fault.ErrUnavailable) || !strings.Contains(err.Error(), "did not answer within 1s (its connect timeout)") {
		t.Fatalf("List while connecting to a frozen server = %v", err)
	}
}
