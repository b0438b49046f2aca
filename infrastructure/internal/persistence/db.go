package persistence

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/timing"
)

// DB is the metadata database: a SQLite file or a PostgreSQL database, seen through one workspace.
type DB struct {
	gorm    *gorm.DB
	target  target
	dialect Dialect
	// workspace is the ID every row this handle reads or writes carries ("" only with
	// WithoutWorkspace, when no repository call is allowed).
	workspace string
	// wantWorkspace is the ID WithWorkspace asked for; anyWorkspace is WithoutWorkspace.
	wantWorkspace string
	anyWorkspace  bool
	// ledger, when set, receives a record of every committed write transaction.
	ledger Ledger
	// seqFloor is the highest record number in the ledger when the database was opened.
	seqFloor uint64
	// compactAfter is how many records the ledger may hold before Open compacts it (0: never).
	compactAfter int
	// opened is the SQLite file this handle opened (nil on PostgreSQL), and opts the options it was
	// opened with: a write finds the file replaced by comparing (see followReplaced).
	opened os.FileInfo
	opts   []Option
}

// Open opens the database at target and migrates it. target is a file path or sqlite:///abs/path
// (SQLite) or a postgres:// or postgresql:// URL (PostgreSQL). create allows a missing or empty
// database to be initialised (the caller knows the workspace's store is empty, so nothing can be
// lost); otherwise a missing, empty or incomplete database is a fault.ErrIntegrity error, never
// taken for a fresh one. A PostgreSQL server that cannot be reached is fault.ErrUnavailable.
//
// The handle sees one workspace (see WithWorkspace): the one named, or, when none is, the
// database's sole workspace (one is made when there is none, as for a new SQLite database).
// With a ledger (WithLedger) it then settles the records a crash left pending, and records the
// workspace whole once if the ledger has never seen it.
func Open(ctx context.Context, where string, create bool, opts ...Option) (*DB, error) {
	t, err := parseTarget(where)
	if err != nil {
		return nil, err
	}
	db := &DB{target: t, dialect: t.dialect, compactAfter: defaultCompactAfter, opts: opts}
	for _, o := range opts {
		o(db)
	}
	if err := db.checkOptions(); err != nil {
		return nil, err
	}
	if t.dialect == Postgres {
		db.gorm, err = openPostgres(ctx, &db.target)
	} else if db.gorm, err = openSQLite(t.path, create); err == nil {
		db.opened, _ = os.Stat(t.path)
	}
	if err != nil {
		return nil, err
	}
	if err := db.prepare(ctx, create); err != nil {
		err = db.damageFirst(ctx, db.classify(err))
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// firstWords is s on one line, cut to about n bytes.
func firstWords(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// damageFirst returns err, or, when the SQLite file fails its integrity check, the damage as
// fault.ErrIntegrity naming `plan doctor --rebuild`. A damaged page can make a healthy-looking
// schema say anything (a version newer than this binary, one that asks to create tables that
// exist): the version's answer is believed only from a file that checks out.
func (d *DB) damageFirst(ctx context.Context, err error) error {
	if d.dialect != SQLite || errors.Is(err, fault.ErrIntegrity) {
		return err
	}
	complaints, cerr := d.IntegrityCheck(ctx)
	switch {
	case cerr != nil && errors.Is(cerr, fault.ErrIntegrity):
		return cerr
	case cerr != nil || len(complaints) == 0:
		return err
	}
	// Not wrapped: the cause's own kind (a conflict, "upgrade plan") is the damage's symptom.
	return fault.Integrity("the metadata database %s is damaged (SQLite integrity_check: %s; opening it said: %v): run `plan doctor --rebuild`",
		d.target.shown, firstWords(strings.Join(complaints, "; "), 200), err)
}

// checkOptions refuses options that cannot go together, before anything is opened.
func (d *DB) checkOptions() error {
	switch {
	case d.anyWorkspace && (d.wantWorkspace != "" || d.ledger != nil):
		return fault.Invalid("a database opened without a workspace takes neither a workspace ID nor a ledger")
	case d.wantWorkspace != "" && !workspaceID.Match(d.wantWorkspace):
		return fault.Invalid("malformed workspace ID %q", d.wantWorkspace)
	case d.dialect == Postgres && d.wantWorkspace == "" && !d.anyWorkspace:
		return fault.Invalid("a shared database needs the workspace ID from .plan/config.yaml")
	}
	return nil
}

// prepare checks and migrates the schema, chooses the workspace and settles the ledger.
func (d *DB) prepare(ctx context.Context, create bool) error {
	endSchema := timing.Span("open.db.schema")
	version, err := d.checkSchema(ctx, create)
	if err != nil {
		return err
	}
	// A database at this binary's schema has nothing to migrate: no write transaction (which
	// would wait for another process's writer) for a command that may only read.
	if version != latestSchema() {
		adopt := d.wantWorkspace
		if adopt == "" {
			adopt = ident.New(time.Now())
		}
		if err := d.migrate(ctx, adopt); err != nil {
			return err
		}
	}
	if err := d.chooseWorkspace(ctx, create); err != nil {
		return err
	}
	endSchema()
	if d.ledger == nil {
		return nil
	}
	defer timing.Span("open.db.ledger")()
	var committed []string
	if d.seqFloor, committed, err = seqFloorOf(d.ledger); err != nil {
		return err
	}
	// A database that has not seen every recorded transaction would act on rows it lacks: gc
	// would delete what only the records reference, a write would hide the gap. Every command
	// refuses it before it changes anything, the store's pending records included; `plan doctor
	// --rebuild` brings it up to date.
	unseen, err := d.Unseen(ctx, committed)
	if err != nil {
		return err
	}
	if len(unseen) > 0 {
		return BehindError(d.target.shown, unseen)
	}
	if err := d.reconcile(ctx); err != nil {
		return err
	}
	if err := d.baseline(ctx); err != nil {
		return err
	}
	return d.compactIfLong(ctx, len(committed))
}

// openSQLite opens the file at path: WAL, synchronous=FULL, foreign keys, a busy timeout and
// BEGIN IMMEDIATE, on one connection.
func openSQLite(path string, create bool) (*gorm.DB, error) {
	if !create {
		st, err := os.Stat(path)
		if err != nil {
			return nil, fault.Integrity("the metadata database %s is missing: run `plan doctor --rebuild`", path)
		}
		if st.Size() == 0 {
			// Not opened: SQLite would take an empty file for a new database and write to it.
			return nil, fault.Integrity("the metadata database %s is empty: run `plan doctor --rebuild`", path)
		}
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "FULL")
	q.Set("_foreign_keys", "on")
	q.Set("_busy_timeout", strconv.FormatInt(sqliteBusyTimeout.Milliseconds(), 10))
	q.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	// Opening runs the DSN's pragmas; turning a new database to WAL needs it alone for a moment, and
	// SQLite answers "database is locked" at once, without its busy handler, when another process
	// is opening it too. That is a wait, not a refusal: try again for as long as the busy timeout.
	var g *gorm.DB
	var err error
	for deadline := time.Now().Add(sqliteBusyTimeout); ; {
		g, err = gorm.Open(classifying{Dialector: sqlite.Open(dsn), path: path}, gormConfig())
		if err == nil || !busy(err) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return nil, classify(path, err)
	}
	sqlDB, err := g.DB()
	if err != nil {
		return nil, err
	}
	// One writer at a time is what SQLite allows anyway; a single connection also keeps the
	// transaction-in-context pattern free of cross-connection surprises.
	sqlDB.SetMaxOpenConns(1)
	return g, nil
}

// sqliteBusyTimeout is how long a statement waits for another process's lock on the database.
const sqliteBusyTimeout = 5 * time.Second

// busy reports SQLite's SQLITE_BUSY, "database is locked" (by another connection or process). The
// driver's typed error exists only in cgo builds, so its message is what is matched.
func busy(err error) bool { return strings.Contains(err.Error(), "database is locked") }

func gormConfig() *gorm.Config {
	return &gorm.Config{
		TranslateError:         true,
		SkipDefaultTransaction: true,
		DisableAutomaticPing:   true,
		Logger:                 logger.Default.LogMode(logger.Silent),
	}
}

// Target is where the database is, fit to print: the SQLite path, or the PostgreSQL URL with its
// password masked.
func (d *DB) Target() string { return d.target.shown }

// Dialect is the engine the database runs on.
func (d *DB) Dialect() Dialect { return d.dialect }

// classify turns an engine's errors into the kinds plan acts on (see classify and classifyPG).
func (d *DB) classify(err error) error {
	if d.dialect == Postgres {
		return classifyPG(d.target, err)
	}
	return classify(d.target.shown, err)
}

// classifying is the SQLite dialector whose error translation also classifies corruption, so that
// a damaged page met by any query, not only by Open, is an integrity error naming the repair.
type classifying struct {
	gorm.Dialector
	path string
}

// Translate implements gorm.ErrorTranslator.
func (c classifying) Translate(err error) error {
	if t, ok := c.Dialector.(gorm.ErrorTranslator); ok {
		err = t.Translate(err)
	}
	return classify(c.path, err)
}

// classify turns SQLite's corruption errors into integrity errors that point at the repair path.
func classify(path string, err error) error {
	if err == nil || errors.Is(err, fault.ErrIntegrity) {
		return err
	}
	msg := err.Error()
	for _, s := range []string{"not a database", "malformed", "corrupt", "disk image"} {
		if strings.Contains(msg, s) {
			return fault.Wrap(fault.ErrIntegrity, err, "the metadata database %s is damaged: run `plan doctor --rebuild`", path)
		}
	}
	return err
}

// followReplaced makes the handle follow its SQLite file when another file now stands at its path:
// `plan doctor --rebuild` replaced it. The rebuild holds the workspace lock, so only a write this
// process makes without the lock (the operation log a command writes once its lock is released)
// meets it; written to the old file, that transaction would reach its record but not the database
// every later command opens, which would then be behind the store. The new file is opened as Open
// opens any (it is refused when it is behind or damaged). A missing file is not followed: what
// this handle writes meanwhile reaches the records, from which the next rebuild makes it again.
func (d *DB) followReplaced(ctx context.Context) error {
	if d.opened == nil {
		return nil
	}
	st, err := os.Stat(d.target.path)
	if err != nil {
		return nil //nolint:nilerr // a missing (or unreadable) file is not followed, as said above
	}
	if os.SameFile(st, d.opened) {
		return nil
	}
	n, err := Open(ctx, d.target.path, false, d.opts...)
	if err != nil {
		return fmt.Errorf("the metadata database %s was replaced while this command ran, and the new one cannot be used: %w", d.target.shown, err)
	}
	if n.workspace != d.workspace {
		_ = n.Close()
		return fault.Conflict("the metadata database %s was replaced while this command ran by one of another workspace (%s)", d.target.shown, n.workspace)
	}
	old := d.gorm
	d.gorm, d.opened, d.seqFloor = n.gorm, n.opened, n.seqFloor
	if sqlDB, err := old.DB(); err == nil {
		_ = sqlDB.Close()
	}
	return nil
}

// Close closes the database.
func (d *DB) Close() error {
	sqlDB, err := d.gorm.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// IntegrityCheck returns the database's complaints about itself (none when healthy). On SQLite it
// is SQLite's integrity_check: every page, index and constraint of the file. On PostgreSQL, whose
// storage is the server's to check (data checksums, amcheck), it checks what plan relies on: every
// table and column of the current schema is there, and no row belongs to a workspace the
// database does not list. It cannot see a damaged page the server has not read, nor a row that is
// well-formed but wrong.
func (d *DB) IntegrityCheck(ctx context.Context) ([]string, error) {
	if d.dialect == Postgres {
		return d.schemaComplaints(ctx)
	}
	var rows []string
	if err := d.gorm.WithContext(ctx).Raw("PRAGMA integrity_check").Scan(&rows).Error; err != nil {
		return nil, classify(d.target.shown, err)
	}
	if len(rows) == 1 && rows[0] == "ok" {
		return nil, nil
	}
	return rows, nil
}

type txKey struct{}

// conn returns the transaction in ctx, or the database bound to ctx. Reads use it; writes go
// through write, which also notes what they touch for the transaction's record.
func (d *DB) conn(ctx context.Context) *gorm.DB {
	if u, ok := ctx.Value(txKey{}).(*unit); ok {
		return u.tx
	}
	return d.gorm.WithContext(ctx)
}

// scoped is conn restricted to this workspace's rows: every repository read goes through it.
func (d *DB) scoped(ctx context.Context) *gorm.DB {
	g := d.conn(ctx).Where("workspace_id = ?", d.workspace)
	if d.workspace == "" {
		_ = g.AddError(errNoWorkspace())
	}
	return g
}

// errNoWorkspace is what a handle opened WithoutWorkspace answers to a repository call: it must
// not read another workspace's rows, nor take a failed read for an empty workspace.
func errNoWorkspace() error {
	return fault.Invalid("this metadata database was opened without a workspace: only its workspaces can be listed")
}

// Transactor implements application.Transactor on d.
type Transactor struct{ db *DB }

// NewTransactor returns the unit of work of d.
func NewTransactor(d *DB) *Transactor { return &Transactor{db: d} }

var _ port.Transactor = (*Transactor)(nil)

// Do runs fn in a transaction, or in the caller's when ctx already carries one.
func (t *Transactor) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return t.db.do(ctx, fn)
}

// inserted classifies an insert's error: a duplicate key is a conflict (fault.ErrConflict), as the
// repositories' contract says; anything else is returned with context.
func inserted(err error, format string, args ...any) error {
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return fault.Wrap(fault.ErrConflict, err, format+" already exists", args...)
	}
	return fmt.Errorf("insert "+format+": %w", append(args, err)...)
}

func notFound(err error, format string, args ...any) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return fault.NotFound(format, args...)
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

// resolvePrefix finds the one row of T in this workspace whose id starts with ref, a validated lower-case hex prefix
// (so it holds no LIKE wildcards). No match is fault.ErrNotFound; several are fault.ErrInvalid
// naming the candidates, as the contract wants for an ambiguous prefix.
func resolvePrefix[T any](ctx context.Context, d *DB, what, ref string, id func(T) string) (T, error) {
	var rows []T
	var zero T
	if err := d.scoped(ctx).Where("id LIKE ?", ref+"%").Order("id").Limit(5).Find(&rows).Error; err != nil {
		return zero, fmt.Errorf("look up %s %s: %w", what, ref, err)
	}
	switch len(rows) {
	case 0:
		return zero, fault.NotFound("%s %s not found", what, ref)
	case 1:
		return rows[0], nil
	}
	ids := make([]string, len(rows))
	for i, row := range rows {
		ids[i] = id(row)
	}
	return zero, fault.Invalid("%s ID prefix %s is ambiguous: it matches %s", what, ref, strings.Join(ids, ", "))
}

// hashText is how a tree hash is stored: hex, or "" for the zero hash (none recorded).
func hashText(h tree.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

// storedHash reads what hashText wrote; anything else is damage to the database.
func storedHash(s, format string, args ...any) (tree.Hash, error) {
	var h tree.Hash
	if err := h.UnmarshalText([]byte(s)); err != nil {
		return h, fault.Wrap(fault.ErrIntegrity, err, format+" is damaged", args...)
	}
	return h, nil
}
