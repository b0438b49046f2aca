package persistence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/failpoint"
)

// Ledger is where the database's committed transactions are kept as immutable records, beside the
// content they reference (objectstore.Records implements it). With a ledger the database is an
// index: Rebuild makes it again from the records alone.
type Ledger interface {
	// Prepare writes body as the pending record of transaction seq and returns its name once it is
	// durable.
	Prepare(seq uint64, body []byte) (string, error)
	// Commit makes a prepared record part of the history; committing one twice is not an error.
	Commit(name string) error
	// Discard removes a prepared record whose transaction did not commit.
	Discard(name string) error
	// Pending and Committed list the records of each state, in sequence order.
	Pending() ([]string, error)
	Committed() ([]string, error)
	// Read returns a committed record's bytes, verified; damage is fault.ErrIntegrity.
	Read(name string) ([]byte, error)
	// Remove deletes a committed record a newer baseline made redundant.
	Remove(name string) error
}

// Option configures Open.
type Option func(*DB)

// WithLedger makes every write transaction also write a record to l (see Ledger).
func WithLedger(l Ledger) Option { return func(d *DB) { d.ledger = l } }

// recordFormat is the version of a record's JSON shape.
const recordFormat = 1

// record is what one committed transaction leaves in the ledger: the complete rows of every
// aggregate it touched, as they were at its commit, or the aggregate's deletion.
type record struct {
	Format int       `json:"format"`
	Seq    uint64    `json:"seq"`
	At     time.Time `json:"at"`
	// Schema is the schema version the rows follow.
	Schema int `json:"schema"`
	// Baseline says the record holds every aggregate there is: a rebuild starts from the newest
	// baseline, and the records before it are redundant.
	Baseline bool     `json:"baseline,omitempty"`
	Changes  []change `json:"changes"`
}

// change is one aggregate's state after the transaction: its rows per table, or Deleted.
type change struct {
	Kind    string                      `json:"kind"`
	Key     string                      `json:"key"`
	Deleted bool                        `json:"deleted,omitempty"`
	Rows    map[string][]map[string]any `json:"rows,omitempty"`
}

// aggregate names what a write touched: a kind of aggregate and its key.
type aggregate struct{ kind, key string }

// tableKey is one table of an aggregate and the columns that hold the aggregate's key (a key of
// several columns is written joined by "/": none of their values can hold one).
type tableKey struct {
	table   string
	columns []string
}

// aggregates maps each kind to its tables, parents first. Every table the repositories write,
// except the ledger's own tables and schema_migrations, belongs to exactly one current kind.
//
// A plan is recorded row by row ("plan-row", "decision", "attempt"), so that a save of a long
// plan records what changed, not the whole plan again; those kinds are replayed by upsert, never by
// delete and insert, since deleting a plan or a decision row cascades to its children. "plan" (a
// whole plan in one change) is what the first records held; it is still replayed.
var aggregates = map[string][]tableKey{
	"checkpoint": {{"checkpoints", []string{"id"}}},
	"history":    {{"history", []string{"id"}}},
	"plan-row":   {{"plans", []string{"id"}}},
	"decision":   {{"decisions", []string{"plan_id", "id"}}},
	"attempt":    {{"attempts", []string{"plan_id", "decision_id", "number"}}},
	"correction": {{"corrections", []string{"id"}}},
	"failure":    {{"checkpoint_failures", []string{"id"}}},
	"operation":  {{"operations", []string{"id"}}},
	// Legacy: a whole plan.
	"plan": {{"plans", []string{"id"}}, {"decisions", []string{"plan_id"}}, {"attempts", []string{"plan_id"}}},
}

// upserted kinds are replayed by upsert (see aggregates).
var upserted = map[string]bool{"plan-row": true, "decision": true, "attempt": true}

// where is the condition selecting key in t, and its arguments.
func (t tableKey) where(key string) (string, []any, error) {
	parts := strings.Split(key, "/")
	if len(parts) != len(t.columns) {
		return "", nil, fmt.Errorf("key %q of %s has %d parts, want %d", key, t.table, len(parts), len(t.columns))
	}
	conds := make([]string, len(parts))
	args := make([]any, len(parts))
	for i, c := range t.columns {
		conds[i], args[i] = c+" = ?", parts[i]
	}
	return strings.Join(conds, " AND "), args, nil
}

// unit is one transaction in progress and the aggregates its writes touched.
type unit struct {
	tx      *gorm.DB
	touched []aggregate
	seen    map[aggregate]bool
	// baseline makes the record a baseline (the caller touched every aggregate).
	baseline bool
	// seq is the sealed record's number.
	seq uint64
}

func (u *unit) touch(kind, key string) {
	a := aggregate{kind, key}
	if u.seen == nil {
		u.seen = map[aggregate]bool{}
	}
	if !u.seen[a] {
		u.seen[a] = true
		u.touched = append(u.touched, a)
	}
}

// unitOf returns the transaction ctx carries (do puts it there).
func unitOf(ctx context.Context) (*unit, error) {
	u, ok := ctx.Value(txKey{}).(*unit)
	if !ok {
		return nil, errors.New("persistence: no transaction in the context")
	}
	return u, nil
}

// write runs fn in the transaction ctx carries, or in a new one, and notes that it touches the
// aggregate kind/key, whose state the transaction's record will hold.
func (d *DB) write(ctx context.Context, kind, key string, fn func(tx *gorm.DB) error) error {
	return d.do(ctx, func(ctx context.Context) error {
		u, err := unitOf(ctx)
		if err != nil {
			return err
		}
		u.touch(kind, key)
		return fn(u.tx)
	})
}

// do runs fn in a transaction, or in the caller's when ctx already carries one. With a ledger, the
// outermost transaction seals its record before it commits and commits the record after it.
func (d *DB) do(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := ctx.Value(txKey{}).(*unit); ok {
		return fn(ctx)
	}
	var name string
	err := d.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		u := &unit{tx: tx}
		if err := fn(context.WithValue(ctx, txKey{}, u)); err != nil {
			return err
		}
		var err error
		name, err = d.seal(u)
		return err
	})
	if name == "" {
		return err
	}
	if err != nil {
		_ = d.ledger.Discard(name)
		return err
	}
	if err := failpoint.Hit("record-commit"); err != nil {
		return err
	}
	// The transaction is committed and the database names the record: if the rename fails, the
	// next reconcile makes it, so the operation stands.
	_ = d.ledger.Commit(name)
	return nil
}

// seal writes the record of u's transaction (before its commit) and notes it in the ledger table
// in the same transaction, so the database names exactly the records whose transactions committed.
func (d *DB) seal(u *unit) (string, error) {
	if d.ledger == nil || (len(u.touched) == 0 && !u.baseline) {
		return "", nil
	}
	var last uint64
	if err := u.tx.Raw(`SELECT COALESCE(MAX(seq), 0) FROM ledger`).Scan(&last).Error; err != nil {
		return "", fmt.Errorf("read the ledger: %w", err)
	}
	seq := max(last, d.seqFloor) + 1
	u.seq = seq
	rec := record{Format: recordFormat, Seq: seq, At: time.Now().UTC(), Schema: latestSchema(), Baseline: u.baseline,
		Changes: make([]change, 0, len(u.touched))}
	for _, a := range u.touched {
		c, err := image(u.tx, a)
		if err != nil {
			return "", err
		}
		rec.Changes = append(rec.Changes, c)
	}
	body, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	name, err := d.ledger.Prepare(seq, body)
	if err != nil {
		return "", fmt.Errorf("write the record of this change: %w", err)
	}
	if err := failpoint.Hit("record-prepared"); err != nil {
		_ = d.ledger.Discard(name)
		return "", err
	}
	if err := u.tx.Exec(`INSERT INTO ledger(seq, name, at) VALUES (?, ?, ?)`, seq, name, rec.At.UnixNano()).Error; err != nil {
		_ = d.ledger.Discard(name)
		return "", fmt.Errorf("note record %s: %w", name, err)
	}
	return name, nil
}

// image reads aggregate a's rows as the transaction sees them.
func image(tx *gorm.DB, a aggregate) (change, error) {
	c := change{Kind: a.kind, Key: a.key, Rows: map[string][]map[string]any{}}
	n := 0
	for _, t := range aggregates[a.kind] {
		cond, args, err := t.where(a.key)
		if err != nil {
			return c, err
		}
		var rows []map[string]any
		if err := tx.Table(t.table).Where(cond, args...).Order("rowid").Find(&rows).Error; err != nil {
			return c, fmt.Errorf("read %s %s for its record: %w", a.kind, a.key, err)
		}
		if len(rows) > 0 {
			c.Rows[t.table] = rows
			n += len(rows)
		}
	}
	if n == 0 {
		c.Rows, c.Deleted = nil, true
	}
	return c, nil
}

func latestSchema() int { return migrations[len(migrations)-1].version }

// reconcile settles records left pending by a process that stopped between writing a record and
// committing it: those the ledger table names belong to committed transactions and are committed;
// the others are discarded. It holds the database's write lock while it looks, so it never sees a
// record whose transaction is still running.
func (d *DB) reconcile(ctx context.Context) error {
	if d.ledger == nil {
		return nil
	}
	if p, err := d.ledger.Pending(); err != nil || len(p) == 0 {
		return err
	}
	return d.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		pending, err := d.ledger.Pending()
		if err != nil {
			return err
		}
		for _, name := range pending {
			var n int64
			if err := tx.Raw(`SELECT COUNT(*) FROM ledger WHERE name = ?`, name).Scan(&n).Error; err != nil {
				return err
			}
			if n > 0 {
				err = d.ledger.Commit(name)
			} else {
				err = d.ledger.Discard(name)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// baseline records the whole database once, when a ledger is first attached to a database that
// already holds rows (a workspace made before records existed), so a rebuild starts from it.
func (d *DB) baseline(ctx context.Context) error {
	if d.ledger == nil {
		return nil
	}
	var n int64
	if err := d.gorm.WithContext(ctx).Raw(`SELECT COUNT(*) FROM ledger`).Scan(&n).Error; err != nil || n > 0 {
		return err
	}
	var has int64
	for _, ts := range aggregates {
		var k int64
		if err := d.gorm.WithContext(ctx).Raw(`SELECT COUNT(*) FROM ` + ts[0].table).Scan(&k).Error; err != nil {
			return err
		}
		has += k
	}
	if has == 0 {
		return nil // a new database: its first transaction is its first record
	}
	_, err := d.writeBaseline(ctx)
	return err
}

// writeBaseline commits a record of every aggregate and returns its number.
func (d *DB) writeBaseline(ctx context.Context) (uint64, error) {
	var sealed *unit
	err := d.do(ctx, func(ctx context.Context) error {
		u, err := unitOf(ctx)
		if err != nil {
			return err
		}
		u.baseline, sealed = true, u
		for _, kind := range []string{"checkpoint", "history", "plan-row", "decision", "attempt", "correction", "failure", "operation"} {
			keys, err := aggregateKeys(u.tx, aggregates[kind][0], "")
			if err != nil {
				return fmt.Errorf("read %s for the baseline record: %w", aggregates[kind][0].table, err)
			}
			for _, k := range keys {
				u.touch(kind, k)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return sealed.seq, nil
}

// Compact writes the whole database as a new baseline record and removes the records before it,
// which it makes redundant (a damaged one among them included). Once the baseline is committed the
// ledger table forgets the older rows, then the files go, oldest first: a crash part way leaves
// only redundant rows and records, which a rebuild skips (it starts at the newest baseline) and
// LedgerHead ignores (it reads the newest).
func (d *DB) Compact(ctx context.Context) (removed int, err error) {
	if d.ledger == nil {
		return 0, fault.Invalid("this database keeps no records")
	}
	names, err := d.ledger.Committed()
	if err != nil {
		return 0, err
	}
	seq, err := d.writeBaseline(ctx)
	if err != nil {
		return 0, err
	}
	if err := d.gorm.WithContext(ctx).Exec(`DELETE FROM ledger WHERE seq < ?`, seq).Error; err != nil {
		return 0, err
	}
	for _, n := range names {
		if s, _ := recordSeq(n); s >= seq {
			continue
		}
		if err := d.ledger.Remove(n); err != nil {
			return removed, err
		}
		removed++
	}
	return removed, nil
}

// aggregateKeys lists the keys of t's rows (those where cond holds, when given), in rowid order.
func aggregateKeys(tx *gorm.DB, t tableKey, cond string, args ...any) ([]string, error) {
	parts := make([]string, len(t.columns))
	for i, c := range t.columns {
		parts[i] = "CAST(" + c + " AS TEXT)"
	}
	q := `SELECT ` + strings.Join(parts, " || '/' || ") + ` FROM ` + t.table
	if cond != "" {
		q += ` WHERE ` + cond
	}
	var keys []string
	err := tx.Raw(q+` ORDER BY rowid`, args...).Scan(&keys).Error
	return keys, err
}

// seqFloorOf returns the highest sequence number among the committed records, so a database
// older than the store's history (restored from a backup) never reuses a number, and how many
// committed records there are.
func seqFloorOf(l Ledger) (uint64, int, error) {
	names, err := l.Committed()
	if err != nil || len(names) == 0 {
		return 0, 0, err
	}
	seq, err := recordSeq(names[len(names)-1])
	return seq, len(names), err
}

// recordSeq reads the transaction number a record name starts with (16 hex digits; the ledger
// lists only well-formed names).
func recordSeq(name string) (uint64, error) {
	if len(name) < 16 {
		return 0, fmt.Errorf("%q is not a record name", name)
	}
	return strconv.ParseUint(name[:16], 16, 64)
}

// defaultCompactAfter bounds the records a rebuild replays: past it, Open compacts (about a
// quarter of a second of rebuild at 124 ms per 1,000 records). A variable only so that tests can
// lower it.
var defaultCompactAfter = 2048

// compactIfLong compacts the ledger when it holds more than compactAfter records, but only when
// the database has seen every one of them: compacting a database that is behind the store (one
// restored from an older backup) would write its stale state as the baseline and drop the newer
// records, which `doctor --rebuild` needs.
func (d *DB) compactIfLong(ctx context.Context, records int) error {
	if d.compactAfter <= 0 || records <= d.compactAfter {
		return nil
	}
	head, err := d.LedgerHead(ctx)
	if err != nil || head < d.seqFloor {
		return err
	}
	_, err = d.Compact(ctx)
	return err
}

// LedgerHead returns the number of the newest record the database has seen (0: none).
func (d *DB) LedgerHead(ctx context.Context) (uint64, error) {
	var last uint64
	err := d.gorm.WithContext(ctx).Raw(`SELECT COALESCE(MAX(seq), 0) FROM ledger`).Scan(&last).Error
	return last, err
}

// RebuildReport counts what Rebuild restored.
type RebuildReport struct {
	Records     int
	Pending     int // records of transactions a crash cut short, left out
	Checkpoints int
	Plans       int
	Decisions   int
	Corrections int
}

var column = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// Rebuild creates the database at path, which must not exist, from the committed records of l:
// every record applied in sequence order, each aggregate replaced by the state its record holds.
// A damaged or unreadable record stops it (fault.ErrIntegrity naming the record) and removes the
// half-built file, since a database missing a transaction in the middle would mislead.
func Rebuild(ctx context.Context, path string, l Ledger) (rep RebuildReport, err error) {
	names, err := l.Committed()
	if err != nil {
		return rep, err
	}
	pending, err := l.Pending()
	if err != nil {
		return rep, err
	}
	rep.Pending = len(pending)
	if _, err := os.Lstat(path); err == nil {
		return rep, fault.Conflict("rebuild into %s: it already exists", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return rep, err
	}
	db, err := Open(ctx, path, true)
	if err != nil {
		return rep, err
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			// A half-built database opens as a valid one that lacks transactions.
			for _, s := range []string{"", "-wal", "-shm", "-journal"} {
				_ = os.Remove(path + s)
			}
		}
	}()
	cols := map[string]map[string]bool{}
	for _, ts := range aggregates {
		for _, t := range ts {
			var info []struct{ Name string }
			if err := db.gorm.WithContext(ctx).Raw(`SELECT name FROM pragma_table_info(?)`, t.table).Scan(&info).Error; err != nil {
				return rep, err
			}
			cols[t.table] = map[string]bool{}
			for _, c := range info {
				cols[t.table][c.Name] = true
			}
		}
	}
	start, err := lastBaseline(l, names)
	if err != nil {
		return rep, err
	}
	names = names[start:]
	err = db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, name := range names {
			if err := failpoint.Hit("rebuild-record"); err != nil {
				return err
			}
			b, err := l.Read(name)
			if err != nil {
				return err
			}
			var rec record
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			if err := dec.Decode(&rec); err != nil {
				return fault.Wrap(fault.ErrIntegrity, err, "record %s cannot be read", name)
			}
			if rec.Format != recordFormat || rec.Schema > latestSchema() {
				return fault.Conflict("record %s was written by a newer plan (format %d, schema %d): upgrade plan", name, rec.Format, rec.Schema)
			}
			for _, c := range rec.Changes {
				if err := replay(tx, cols, c); err != nil {
					return fault.Wrap(fault.ErrIntegrity, err, "record %s cannot be applied", name)
				}
			}
			if err := tx.Exec(`INSERT INTO ledger(seq, name, at) VALUES (?, ?, ?)`, rec.Seq, name, rec.At.UnixNano()).Error; err != nil {
				return fault.Wrap(fault.ErrIntegrity, err, "record %s repeats a transaction number", name)
			}
			rep.Records++
		}
		for _, q := range []struct {
			n   *int
			sql string
		}{
			{&rep.Checkpoints, `SELECT COUNT(*) FROM checkpoints`},
			{&rep.Plans, `SELECT COUNT(*) FROM plans`},
			{&rep.Decisions, `SELECT COUNT(*) FROM decisions`},
			{&rep.Corrections, `SELECT COUNT(*) FROM corrections`},
		} {
			if err := tx.Raw(q.sql).Scan(q.n).Error; err != nil {
				return err
			}
		}
		return nil
	})
	return rep, err
}

// lastBaseline returns the index in names of the newest baseline record, or 0 when there is none
// (a database that started empty has every record from its first). Records before it are never
// read, so a damaged one there does not matter.
func lastBaseline(l Ledger, names []string) (int, error) {
	for i := len(names) - 1; i > 0; i-- {
		b, err := l.Read(names[i])
		if err != nil {
			return 0, err
		}
		var head struct {
			Baseline bool `json:"baseline"`
		}
		if err := json.Unmarshal(b, &head); err != nil {
			return 0, fault.Wrap(fault.ErrIntegrity, err, "record %s cannot be read", names[i])
		}
		if head.Baseline {
			return i, nil
		}
	}
	return 0, nil
}

// replay makes aggregate c's rows what the record says.
func replay(tx *gorm.DB, cols map[string]map[string]bool, c change) error {
	tables, ok := aggregates[c.Kind]
	if !ok {
		return fmt.Errorf("unknown kind %q", c.Kind)
	}
	if !upserted[c.Kind] || c.Deleted {
		for i := len(tables) - 1; i >= 0; i-- {
			t := tables[i]
			cond, args, err := t.where(c.Key)
			if err != nil {
				return err
			}
			if err := tx.Exec(`DELETE FROM `+t.table+` WHERE `+cond, args...).Error; err != nil {
				return err
			}
		}
	}
	if c.Deleted {
		return nil
	}
	for _, t := range tables {
		for _, row := range c.Rows[t.table] {
			var names []string
			var vals []any
			for k, v := range row {
				if !column.MatchString(k) || !cols[t.table][k] {
					return fmt.Errorf("table %s has no column %q", t.table, k)
				}
				if n, ok := v.(json.Number); ok {
					if i, err := n.Int64(); err == nil {
						v = i
					} else if f, err := n.Float64(); err == nil {
						v = f
					} else {
						return fmt.Errorf("column %s.%s: %w", t.table, k, err)
					}
				}
				names = append(names, k)
				vals = append(vals, v)
			}
			q := `INSERT INTO ` + t.table + ` (` + joinCols(names) + `) VALUES (` + placeholders(len(names)) + `)`
			if upserted[c.Kind] {
				// An update in place: deleting the row would cascade to its children.
				sets := make([]string, len(names))
				for i, n := range names {
					sets[i] = `"` + n + `" = excluded."` + n + `"`
				}
				q += ` ON CONFLICT(` + strings.Join(t.columns, ", ") + `) DO UPDATE SET ` + strings.Join(sets, ", ")
			}
			if err := tx.Exec(q, vals...).Error; err != nil {
				return err
			}
		}
	}
	return nil
}

func joinCols(names []string) string {
	var b bytes.Buffer
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`"` + n + `"`)
	}
	return b.String()
}

func placeholders(n int) string {
	var b bytes.Buffer
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('?')
	}
	return b.String()
}
