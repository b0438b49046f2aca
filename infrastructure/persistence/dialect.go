package persistence

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/planhq/plan/domain/fault"
)

// Dialect names the database engine a DB runs on.
type Dialect string

// The engines Open understands.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// target is where Open finds the database: a SQLite file or a PostgreSQL server.
type target struct {
	dialect Dialect
	// path is the SQLite file; dsn the PostgreSQL URL, password included.
	path, dsn string
	// shown is what messages print: the path, or the URL with its password masked.
	shown string
	// hostPort is the PostgreSQL server's address, for the messages of a failed connection.
	hostPort string
	// password is masked out of every message that could quote it.
	password string
}

// parseTarget reads Open's target: a plain file path or sqlite:///abs/path (SQLite), or a
// postgres:// or postgresql:// URL (PostgreSQL). Any other URL scheme is fault.ErrInvalid.
func parseTarget(s string) (target, error) {
	scheme, rest, isURL := strings.Cut(s, "://")
	if !isURL {
		if s == "" {
			return target{}, fault.Invalid("no metadata database given")
		}
		return target{dialect: SQLite, path: s, shown: s}, nil
	}
	switch strings.ToLower(scheme) {
	case "sqlite":
		if !filepath.IsAbs(rest) {
			return target{}, fault.Invalid("a sqlite:// database needs an absolute path (sqlite:///abs/path), not %q", rest)
		}
		return target{dialect: SQLite, path: filepath.Clean(rest), shown: filepath.Clean(rest)}, nil
	case "postgres", "postgresql":
		u, err := url.Parse(s)
		if err != nil {
			// The parser's message quotes the URL, password and all.
			return target{}, fault.Invalid("the PostgreSQL URL for the metadata database is malformed")
		}
		t := target{dialect: Postgres, dsn: s, hostPort: u.Host}
		if p, ok := u.User.Password(); ok {
			t.password = p
		}
		q := u.Query()
		if p := q.Get("password"); p != "" {
			t.password = p
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		t.shown = u.Redacted()
		if t.hostPort == "" {
			t.hostPort = "the default PostgreSQL server"
		}
		return t, nil
	}
	return target{}, fault.Invalid("unsupported metadata database %q: want a file path, sqlite:///abs/path or postgres://…", scheme+"://")
}

// redacted is an error whose message has a password masked; the cause stays reachable.
type redacted struct {
	err      error
	password string
}

func (r redacted) Error() string {
	msg := strings.ReplaceAll(r.err.Error(), "\n\t", "; ")
	if r.password != "" {
		msg = strings.ReplaceAll(msg, r.password, "xxxxx")
	}
	return msg
}

func (r redacted) Unwrap() error { return r.err }

// connectBackoff is how long Open waits before each further attempt to reach a PostgreSQL server
// (so len+1 attempts in all), and connectBudget bounds the whole: an unreachable server is
// reported within a couple of seconds. Variables only so that tests can shorten them.
var (
	connectBackoff = []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 600 * time.Millisecond}
	connectBudget  = 3 * time.Second
)

// openPostgres connects to t's server, retrying with backoff; a server that cannot be reached (a
// refused connection, a timeout, an unknown host, refused credentials, a missing database) is
// fault.ErrUnavailable naming the server, never the password.
func openPostgres(ctx context.Context, t target) (*gorm.DB, error) {
	cfg, err := pgx.ParseConfig(t.dsn)
	if err != nil {
		// pgx masks passwords in this message only on a best-effort basis.
		return nil, fault.Invalid("the PostgreSQL URL %s cannot be used: %v", t.shown, redacted{err, t.password})
	}
	sqlDB := stdlib.OpenDB(*cfg)
	sqlDB.SetMaxIdleConns(2)
	sqlDB.SetConnMaxIdleTime(time.Minute)
	g, err := gorm.Open(classifyingPG{Dialector: postgres.New(postgres.Config{Conn: sqlDB}), t: t}, gormConfig())
	if err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, connectBudget)
	defer cancel()
	for attempt := 0; ; attempt++ {
		err = sqlDB.PingContext(cctx)
		if err == nil {
			return g, nil
		}
		if ctx.Err() != nil || attempt >= len(connectBackoff) || refusedCredentials(err) {
			break
		}
		select {
		case <-cctx.Done():
		case <-time.After(connectBackoff[attempt]):
		}
		if cctx.Err() != nil {
			break
		}
	}
	_ = sqlDB.Close()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, fault.Wrap(fault.ErrUnavailable, redacted{err, t.password},
		"the metadata database %s cannot be reached at %s", t.shown, t.hostPort)
}

// refusedCredentials says the server answered and refused who we are: asking again cannot help.
func refusedCredentials(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Code, "28")
}

// classifyingPG is the PostgreSQL dialector whose error translation also classifies a lost
// connection as fault.ErrUnavailable.
type classifyingPG struct {
	gorm.Dialector
	t target
}

// Translate implements gorm.ErrorTranslator.
func (c classifyingPG) Translate(err error) error {
	if t, ok := c.Dialector.(gorm.ErrorTranslator); ok {
		err = t.Translate(err)
	}
	return classifyPG(c.t, err)
}

// classifyPG makes an error that says the server or the connection to it is gone
// fault.ErrUnavailable. What the server refused (a constraint, a type, a syntax) is left alone.
func classifyPG(t target, err error) error {
	if err == nil || fault.Kind(err) != nil || errors.Is(err, context.Canceled) {
		return err
	}
	if lostConnection(err) {
		return fault.Wrap(fault.ErrUnavailable, redacted{err, t.password},
			"the metadata database %s at %s was lost", t.shown, t.hostPort)
	}
	return err
}

// lostConnection reports an error of the connection rather than of the statement.
func lostConnection(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03", // the server is shutting down or starting
			pe.Code == "53300": // too many connections
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || pgconn.Timeout(err) ||
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// advisoryKey is the PostgreSQL advisory lock that serialises the writes of one workspace (and
// schemaLock those of the schema and the workspaces table): a stable 64-bit hash of
// "plan:"+name, the same in every process.
func advisoryKey(name string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("plan:" + name)) // #nosec G104 -- a hash never fails to write
	return int64(h.Sum64())                // #nosec G115 -- a bit pattern, not a quantity
}

// schemaLock names the lock of the schema; no workspace ID can start with ':'.
const schemaLock = ":schema"

// lock takes, in tx, the lock of the named scope: on PostgreSQL an advisory lock held to the end
// of the transaction, so writers of one workspace queue while readers never wait. SQLite needs
// none: BEGIN IMMEDIATE already holds the database's one write lock.
func (d *DB) lock(tx *gorm.DB, scope string) error {
	if d.dialect != Postgres {
		return nil
	}
	if err := tx.Exec(`SELECT pg_advisory_xact_lock(?)`, advisoryKey(scope)).Error; err != nil {
		return fmt.Errorf("wait for the write lock of %s: %w", scope, err)
	}
	return nil
}

// pgDDL translates a schema statement written for SQLite into PostgreSQL's: 64-bit integers (the
// nanosecond timestamps overflow PostgreSQL's 32-bit INTEGER), an identity column for
// AUTOINCREMENT, and BOOLEAN for the flags SQLite keeps as 0 or 1.
func pgDDL(stmt string) string {
	stmt = strings.ReplaceAll(stmt, "INTEGER PRIMARY KEY AUTOINCREMENT", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
	stmt = pgFlagDefault.ReplaceAllString(stmt, "$1 BOOLEAN NOT NULL DEFAULT FALSE")
	stmt = pgFlag.ReplaceAllString(stmt, "$1 BOOLEAN NOT NULL")
	return pgInteger.ReplaceAllString(stmt, "BIGINT")
}

var (
	pgFlagDefault = regexp.MustCompile(`\b(skipped|pinned) INTEGER NOT NULL DEFAULT 0\b`)
	pgFlag        = regexp.MustCompile(`\b(checkpoints) INTEGER NOT NULL\b`)
	pgInteger     = regexp.MustCompile(`\bINTEGER\b`)
)

// flagColumns are the columns PostgreSQL keeps as BOOLEAN and SQLite as 0 or 1. A record holds
// them as 0 or 1 whatever wrote it, so records replay on either.
var flagColumns = map[string]map[string]bool{
	"checkpoints": {"pinned": true},
	"decisions":   {"skipped": true},
	"plans":       {"checkpoints": true},
}

// tableNames lists the tables of the database's current schema.
func (d *DB) tableNames(g *gorm.DB) ([]string, error) {
	q := `SELECT name FROM sqlite_master WHERE type = 'table'`
	if d.dialect == Postgres {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
	}
	var names []string
	err := g.Raw(q).Scan(&names).Error
	return names, err
}

// columnsOf returns the columns of table.
func (d *DB) columnsOf(g *gorm.DB, table string) (map[string]bool, error) {
	q := `SELECT name FROM pragma_table_info(?)`
	if d.dialect == Postgres {
		q = `SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?`
	}
	var names []string
	if err := g.Raw(q, table).Scan(&names).Error; err != nil {
		return nil, err
	}
	cols := make(map[string]bool, len(names))
	for _, n := range names {
		cols[n] = true
	}
	return cols, nil
}
