package persistence

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// DB is the metadata database.
type DB struct {
	gorm *gorm.DB
	path string
	// ledger, when set, receives a record of every committed write transaction.
	ledger Ledger
	// seqFloor is the highest record number in the ledger when the database was opened.
	seqFloor uint64
	// compactAfter is how many records the ledger may hold before Open compacts it (0: never).
	compactAfter int
}

// Open opens the database at path and migrates it. create allows a missing or empty database to be
// initialised (the caller knows the workspace's store is empty, so nothing can be lost); otherwise a
// missing, empty or incomplete database is a fault.ErrIntegrity error, never taken for a fresh one.
// With a ledger (WithLedger) it first settles the records a crash left pending, and records the
// whole database once if the ledger has never seen it.
func Open(ctx context.Context, path string, create bool, opts ...Option) (*DB, error) {
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
	q.Set("_busy_timeout", "5000")
	q.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	g, err := gorm.Open(classifying{Dialector: sqlite.Open(dsn), path: path}, &gorm.Config{
		TranslateError:         true,
		SkipDefaultTransaction: true,
		Logger:                 logger.Default.LogMode(logger.Silent),
	})
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
	db := &DB{gorm: g, path: path, compactAfter: defaultCompactAfter}
	for _, o := range opts {
		o(db)
	}
	if err := db.checkSchema(ctx, create); err != nil {
		_ = sqlDB.Close()
		return nil, classify(path, err)
	}
	if err := db.migrate(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, classify(path, err)
	}
	if db.ledger != nil {
		var err error
		var records int
		if db.seqFloor, records, err = seqFloorOf(db.ledger); err == nil {
			if err = db.reconcile(ctx); err == nil {
				err = db.baseline(ctx)
			}
		}
		if err == nil {
			err = db.compactIfLong(ctx, records)
		}
		if err != nil {
			_ = sqlDB.Close()
			return nil, classify(path, err)
		}
	}
	return db, nil
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

// Close closes the database.
func (d *DB) Close() error {
	sqlDB, err := d.gorm.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// IntegrityCheck runs SQLite's integrity_check and returns its complaints (none when healthy).
func (d *DB) IntegrityCheck(ctx context.Context) ([]string, error) {
	var rows []string
	if err := d.gorm.WithContext(ctx).Raw("PRAGMA integrity_check").Scan(&rows).Error; err != nil {
		return nil, classify(d.path, err)
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

// Transactor implements application.Transactor on d.
type Transactor struct{ db *DB }

// NewTransactor returns the unit of work of d.
func NewTransactor(d *DB) *Transactor { return &Transactor{db: d} }

var _ application.Transactor = (*Transactor)(nil)

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

// resolvePrefix finds the one row of T whose id starts with ref, a validated lower-case hex prefix
// (so it holds no LIKE wildcards). No match is fault.ErrNotFound; several are fault.ErrInvalid
// naming the candidates, as the contract wants for an ambiguous prefix.
func resolvePrefix[T any](ctx context.Context, d *DB, what, ref string, id func(T) string) (T, error) {
	var rows []T
	var zero T
	if err := d.conn(ctx).Where("id LIKE ?", ref+"%").Order("id").Limit(5).Find(&rows).Error; err != nil {
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
