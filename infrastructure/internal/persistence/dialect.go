package persistence

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/secret"
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
	// path is the SQLite file; dsn the PostgreSQL URL, credentials included.
	path, dsn string
	// shown is what messages print: the path, or the URL without its credentials (parsed out by
	// secret.URL, never masked by searching the text).
	shown string
	// hostPort is the PostgreSQL server's address, for the messages of a failed connection.
	hostPort string
	// connectTimeout bounds the making of a connection (see withDeadlines).
	connectTimeout time.Duration
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
		t.shown, _ = secret.URL(s)
		if t.hostPort == "" {
			t.hostPort = "the default PostgreSQL server"
		}
		return t, nil
	}
	return target{}, fault.Invalid("unsupported metadata database %q: want a file path, sqlite:///abs/path or postgres://…", scheme+"://")
}

// oneLine is an error whose message is on one line (pgx indents its causes); the cause stays
// reachable. pgx's messages name the user and the database, never the password.
type oneLine struct{ err error }

func (o oneLine) Error() string { return strings.ReplaceAll(o.err.Error(), "\n\t", "; ") }

func (o oneLine) Unwrap() error { return o.err }

// parseMessage is what pgx says is wrong with a URL, without the URL it quotes: its redaction of
// a password there is best effort only.
func parseMessage(err error) string {
	msg := err.Error()
	var pe *pgconn.ParseConfigError
	if i := strings.LastIndex(msg, "`: "); errors.As(err, &pe) && i >= 0 {
		return msg[i+3:] // after "cannot parse `URL`: "
	}
	return msg
}

// connectBackoff is how long Open waits before each further attempt to reach a PostgreSQL server
// (so len+1 attempts in all), and connectBudget bounds the whole: an unreachable server is
// reported within a couple of seconds. Variables only so that tests can shorten them.
var (
	connectBackoff = []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 600 * time.Millisecond}
	connectBudget  = 3 * time.Second
)

// The deadlines of a PostgreSQL server, unless the DSN sets its own connect_timeout (seconds) or
// statement_timeout (milliseconds, or with a unit: 5s, 1min): a connection must be made within
// DefaultConnectTimeout, and the server cancels a statement that runs longer than
// DefaultStatementTimeout. The client waits for an answer at most the statement timeout plus
// answerGrace (a frozen server or network sends no cancellation), then drops the connection.
const (
	DefaultConnectTimeout   = 10 * time.Second
	DefaultStatementTimeout = 60 * time.Second
)

// answerGrace is a variable only so that tests can shorten it.
var answerGrace = 3 * time.Second

// openPostgres connects to t's server, retrying with backoff; a server that cannot be reached (a
// refused connection, a timeout, an unknown host, a missing database) is fault.ErrUnavailable and
// credentials it refuses fault.ErrDenied, each naming the server, never the password. Every
// connection gets the deadlines above.
//
// It sets t's connect timeout (the DSN's, or DefaultConnectTimeout), which errors name.
func openPostgres(ctx context.Context, t *target) (*gorm.DB, error) {
	cfg, err := pgx.ParseConfig(t.dsn)
	if err != nil {
		return nil, fault.Invalid("the PostgreSQL URL %s cannot be used: %s", t.shown, parseMessage(err))
	}
	if err := withDeadlines(cfg); err != nil {
		return nil, fault.Wrap(fault.ErrInvalid, err, "the PostgreSQL URL %s cannot be used", t.shown)
	}
	t.connectTimeout = cfg.ConnectTimeout
	sqlDB := stdlib.OpenDB(*cfg)
	sqlDB.SetMaxIdleConns(2)
	sqlDB.SetConnMaxIdleTime(time.Minute)
	g, err := gorm.Open(classifyingPG{Dialector: postgres.New(postgres.Config{Conn: sqlDB}), t: *t}, gormConfig())
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
		if ctx.Err() != nil || attempt >= len(connectBackoff) || refused(err) {
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
	if refused(err) {
		return nil, fault.Wrap(fault.ErrDenied, oneLine{err}, "the metadata database %s at %s refused the login", t.shown, t.hostPort)
	}
	return nil, fault.Wrap(fault.ErrUnavailable, oneLine{err},
		"the metadata database %s cannot be reached at %s", t.shown, t.hostPort)
}

// withDeadlines gives cfg a connect timeout and a statement timeout when the DSN has none, and
// makes every connection give up on a server that does not answer within the statement timeout
// (plus answerGrace). A statement_timeout of 0 (none) leaves waits unbounded, as asked.
func withDeadlines(cfg *pgx.ConnConfig) error {
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	st := DefaultStatementTimeout
	if v, ok := cfg.RuntimeParams["statement_timeout"]; ok {
		d, err := pgDuration(v)
		if err != nil {
			return err
		}
		st = d
	} else {
		cfg.RuntimeParams["statement_timeout"] = strconv.FormatInt(st.Milliseconds(), 10)
	}
	if st == 0 {
		return nil
	}
	wait, dial := st+answerGrace, cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &answerConn{Conn: c, wait: wait}, nil
	}
	return nil
}

// pgDuration reads a PostgreSQL time setting as statement_timeout takes it: milliseconds, or a
// number with a unit (us, ms, s, min, h, d).
func pgDuration(v string) (time.Duration, error) {
	s := strings.TrimSpace(v)
	i := len(s)
	for i > 0 && (s[i-1] < '0' || s[i-1] > '9') {
		i--
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	units := map[string]time.Duration{"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond,
		"s": time.Second, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	unit, ok := units[strings.TrimSpace(s[i:])]
	if err != nil || !ok || n < 0 || n > int64(math.MaxInt64/unit) {
		return 0, fmt.Errorf("statement_timeout %q: want milliseconds or a number with a unit (ms, s, min, h)", v)
	}
	return time.Duration(n) * unit, nil
}

// answerConn is a connection to a PostgreSQL server on which no read or write waits longer than
// wait: pgx reads only when it expects an answer, so a read that times out means the server (or
// the network to it) stopped answering. A deadline pgx sets itself (to cancel a query) is kept
// when it is the earlier.
type answerConn struct {
	net.Conn
	wait time.Duration

	mu          sync.Mutex
	read, write time.Time // the deadlines pgx set; zero: none
}

// noAnswer is the error of a read or write answerConn gave up on; it is a timeout (net.Error).
type noAnswer struct {
	wait time.Duration
	err  error
}

// Error is the cause's: classifyPG names the server and the wait once, around it.
func (e *noAnswer) Error() string   { return e.err.Error() }
func (e *noAnswer) Unwrap() error   { return e.err }
func (e *noAnswer) Timeout() bool   { return true }
func (e *noAnswer) Temporary() bool { return false }

func (c *answerConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.read, c.write = t, t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *answerConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.read = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}

func (c *answerConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.write = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

// earlier returns the deadline to use when the caller set theirs (zero: none), and whether ours
// is the one.
func (c *answerConn) earlier(theirs time.Time) (time.Time, bool) {
	ours := time.Now().Add(c.wait)
	if !theirs.IsZero() && theirs.Before(ours) {
		return theirs, false
	}
	return ours, true
}

func (c *answerConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	d, ours := c.earlier(c.read)
	c.mu.Unlock()
	if err := c.Conn.SetReadDeadline(d); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	return n, c.gaveUp(err, ours)
}

func (c *answerConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	d, ours := c.earlier(c.write)
	c.mu.Unlock()
	if err := c.Conn.SetWriteDeadline(d); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(p)
	return n, c.gaveUp(err, ours)
}

// gaveUp names the server in a timeout of our own deadline.
func (c *answerConn) gaveUp(err error, ours bool) error {
	if ours && errors.Is(err, os.ErrDeadlineExceeded) {
		return &noAnswer{wait: c.wait, err: err}
	}
	return err
}

// refused says the server answered and refused who we are or what we asked: asking again cannot
// help (28: invalid authorization, 42501: insufficient privilege).
func refused(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "28") || pe.Code == "42501")
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
// fault.ErrUnavailable (naming the deadline when the server stopped answering), and a refused
// permission fault.ErrDenied. What the server refused otherwise (a constraint, a type, a syntax)
// is left alone.
func classifyPG(t target, err error) error {
	if err == nil || fault.Kind(err) != nil || errors.Is(err, context.Canceled) {
		return err
	}
	var na *noAnswer
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &na):
		return fault.Wrap(fault.ErrUnavailable, oneLine{err},
			"the metadata database %s at %s did not answer within %s", t.shown, t.hostPort, na.wait)
	case errors.As(err, &pe) && pe.Code == "57014" && strings.Contains(pe.Message, "statement timeout"):
		return fault.Wrap(fault.ErrUnavailable, oneLine{err},
			"the metadata database %s at %s did not finish a statement within its statement_timeout", t.shown, t.hostPort)
	case refused(err):
		return fault.Wrap(fault.ErrDenied, oneLine{err}, "the metadata database %s at %s refused", t.shown, t.hostPort)
	case errors.As(err, new(*pgconn.ConnectError)) && pgconn.Timeout(err):
		return fault.Wrap(fault.ErrUnavailable, oneLine{err},
			"the metadata database %s at %s did not answer within %s (its connect timeout)", t.shown, t.hostPort, t.connectTimeout)
	case lostConnection(err):
		return fault.Wrap(fault.ErrUnavailable, oneLine{err},
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
	re := pgRewrites()
	stmt = re.flagDefault.ReplaceAllString(stmt, "$1 BOOLEAN NOT NULL DEFAULT FALSE")
	stmt = re.flag.ReplaceAllString(stmt, "$1 BOOLEAN NOT NULL")
	return re.integer.ReplaceAllString(stmt, "BIGINT")
}

// pgRewrites are pgDDL's patterns, compiled the first time a PostgreSQL schema is written (not at
// start-up, which every command pays).
var pgRewrites = sync.OnceValue(func() struct{ flagDefault, flag, integer *regexp.Regexp } {
	return struct{ flagDefault, flag, integer *regexp.Regexp }{
		flagDefault: regexp.MustCompile(`\b(skipped|pinned) INTEGER NOT NULL DEFAULT 0\b`),
		flag:        regexp.MustCompile(`\b(checkpoints) INTEGER NOT NULL\b`),
		integer:     regexp.MustCompile(`\bINTEGER\b`),
	}
})

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
