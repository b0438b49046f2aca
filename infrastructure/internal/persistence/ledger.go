package persistence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/infrastructure/internal/failpoint"
	"github.com/planhq/plan/infrastructure/internal/timing"
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
	// Workspace is the workspace whose transaction this was (records from before workspaces
	// existed have none). A rebuild into a new database gives that database this workspace.
	Workspace string `json:"workspace,omitempty"`
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
// several columns is written joined by "/": none of their values can hold one). Every row also
// carries its workspace's ID (workspace_id), which is not part of the key: a record's rows are
// one workspace's, and replaying them gives them the rebuilding database's workspace.
type tableKey struct {
	table   string
	columns []string
}

// workspaceTable is the one table whose key is the workspace ID itself.
const workspaceTable = "workspaces"

// primaryKeys are the columns that order each table's rows within a workspace (its primary key
// without workspace_id): images and key lists follow them, so a record's bytes do not depend on
// where the rows happen to lie.
var primaryKeys = map[string]string{
	"checkpoints": "id", "history": "id", "plans": "id", "decisions": "plan_id, id",
	"attempts": "plan_id, decision_id, number", "corrections": "id", "checkpoint_failures": "id",
	"operations": "id", workspaceTable: "id",
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
	"workspace":  {{workspaceTable, []string{"id"}}},
	// Legacy: a whole plan.
	"plan": {{"plans", []string{"id"}}, {"decisions", []string{"plan_id"}}, {"attempts", []string{"plan_id"}}},
}

// upserted kinds are replayed by upsert (see aggregates).
var upserted = map[string]bool{"plan-row": true, "decision": true, "attempt": true}

// where is the condition selecting key in workspace ws's rows of t, and its arguments. The
// workspace's own row is selected by ws whatever the key says: a record's workspace becomes the
// rebuilding database's.
func (t tableKey) where(key, ws string) (string, []any, error) {
	if t.table == workspaceTable {
		return "id = ?", []any{ws}, nil
	}
	parts := strings.Split(key, "/")
	if len(parts) != len(t.columns) {
		return "", nil, fmt.Errorf("key %q of %s has %d parts, want %d", key, t.table, len(parts), len(t.columns))
	}
	conds := []string{"workspace_id = ?"}
	args := []any{ws}
	for i, c := range t.columns {
		conds, args = append(conds, c+" = ?"), append(args, parts[i])
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
	if d.workspace == "" {
		return errNoWorkspace()
	}
	if err := d.followReplaced(ctx); err != nil {
		return err
	}
	defer timing.Span("commit")()
	var name string
	err := d.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := d.lock(tx, d.workspace); err != nil {
			return err
		}
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
	defer timing.Span("commit.record")()
	var last uint64
	if err := u.tx.Raw(`SELECT COALESCE(MAX(seq), 0) FROM ledger WHERE workspace_id = ?`, d.workspace).Scan(&last).Error; err != nil {
		return "", fmt.Errorf("read the ledger: %w", err)
	}
	seq := max(last, d.seqFloor) + 1
	u.seq = seq
	rec := record{Format: recordFormat, Seq: seq, At: time.Now().UTC(), Schema: latestSchema(), Workspace: d.workspace,
		Baseline: u.baseline, Changes: make([]change, 0, len(u.touched))}
	for _, a := range u.touched {
		c, err := image(u.tx, a, d.workspace)
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
	if err := u.tx.Exec(`INSERT INTO ledger(workspace_id, seq, name, at) VALUES (?, ?, ?, ?)`, d.workspace, seq, name, rec.At.UnixNano()).Error; err != nil {
		_ = d.ledger.Discard(name)
		return "", fmt.Errorf("note record %s: %w", name, err)
	}
	return name, nil
}

// image reads aggregate a's rows in workspace ws as the transaction sees them. A flag reads as 0
// or 1 whichever engine holds it.
func image(tx *gorm.DB, a aggregate, ws string) (change, error) {
	c := change{Kind: a.kind, Key: a.key, Rows: map[string][]map[string]any{}}
	n := 0
	for _, t := range aggregates[a.kind] {
		cond, args, err := t.where(a.key, ws)
		if err != nil {
			return c, err
		}
		var rows []map[string]any
		if err := tx.Table(t.table).Where(cond, args...).Order(primaryKeys[t.table]).Find(&rows).Error; err != nil {
			return c, fmt.Errorf("read %s %s for its record: %w", a.kind, a.key, err)
		}
		for _, row := range rows {
			for col := range flagColumns[t.table] {
				if b, ok := row[col].(bool); ok {
					row[col] = int64(0)
					if b {
						row[col] = int64(1)
					}
				}
			}
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
		if err := d.lock(tx, d.workspace); err != nil {
			return err
		}
		pending, err := d.ledger.Pending()
		if err != nil {
			return err
		}
		for _, name := range pending {
			var n int64
			if err := tx.Raw(`SELECT COUNT(*) FROM ledger WHERE workspace_id = ? AND name = ?`, d.workspace, name).Scan(&n).Error; err != nil {
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
	if d.ledger == nil || d.seqFloor > 0 {
		// With records in the store, a ledger that names none of them belongs to a database that
		// is behind the store (restored from a backup, rows lost), not to one from before records:
		// its state written as a baseline would hide the newer records from every rebuild. Open
		// refuses such a database before this (see Unseen); `plan doctor --rebuild` brings it up
		// to date.
		return nil
	}
	var n int64
	if err := d.gorm.WithContext(ctx).Raw(`SELECT COUNT(*) FROM ledger WHERE workspace_id = ?`, d.workspace).Scan(&n).Error; err != nil || n > 0 {
		return err
	}
	var has int64
	for _, ts := range aggregates {
		if ts[0].table == workspaceTable {
			continue // every workspace has its row: it alone is nothing to keep
		}
		var k int64
		if err := d.gorm.WithContext(ctx).Raw(`SELECT COUNT(*) FROM `+ts[0].table+` WHERE workspace_id = ?`, d.workspace).Scan(&k).Error; err != nil {
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
		for _, kind := range []string{"workspace", "checkpoint", "history", "plan-row", "decision", "attempt", "correction", "failure", "operation"} {
			keys, err := aggregateKeys(u.tx, aggregates[kind][0], d.workspace)
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
	if err := d.gorm.WithContext(ctx).Exec(`DELETE FROM ledger WHERE workspace_id = ? AND seq < ?`, d.workspace, seq).Error; err != nil {
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

// aggregateKeys lists the keys of workspace ws's rows of t, in primary key order.
func aggregateKeys(tx *gorm.DB, t tableKey, ws string) ([]string, error) {
	parts := make([]string, len(t.columns))
	for i, c := range t.columns {
		parts[i] = "CAST(" + c + " AS TEXT)"
	}
	scope := "workspace_id"
	if t.table == workspaceTable {
		scope = "id"
	}
	var keys []string
	err := tx.Raw(`SELECT `+strings.Join(parts, " || '/' || ")+` FROM `+t.table+` WHERE `+scope+` = ? ORDER BY `+primaryKeys[t.table], ws).Scan(&keys).Error
	return keys, err
}

// seqFloorOf returns the highest sequence number among the committed records, so a database
// older than the store's history (restored from a backup) never reuses a number, and the committed
// records' names.
func seqFloorOf(l Ledger) (uint64, []string, error) {
	names, err := l.Committed()
	if err != nil || len(names) == 0 {
		return 0, nil, err
	}
	seq, err := recordSeq(names[len(names)-1])
	return seq, names, err
}

// recordSeq reads the transaction number a record name starts with (16 hex digits; the ledger
// lists only well-formed names).
func recordSeq(name string) (uint64, error) {
	if len(name) < 16 {
		return 0, fmt.Errorf("%q is not a record name", name)
	}
	return strconv.ParseUint(name[:16], 16, 64)
}

// defaultCompactAfter bounds the records a rebuild replays and every Open lists (the ledger
// check): past it, Open compacts. 256 keeps an agent session's thousands of transactions from
// making each command list thousands of records (the check cost about 1 ms per 500), at the price
// of a baseline (the whole database) written once per 256 transactions. A variable only so that
// tests can lower it.
var defaultCompactAfter = 256

// compactIfLong compacts the ledger when it holds more than compactAfter records, but only when
// the database has seen every one of them: compacting a database that is behind the store (one
// restored from an older backup) would write its stale state as the baseline and drop the newer
// records, which `doctor --rebuild` needs.
func (d *DB) compactIfLong(ctx context.Context, records int) error {
	if d.compactAfter <= 0 || records <= d.compactAfter {
		return nil
	}
	_, err := d.Compact(ctx)
	return err
}

// Unseen compares the database with the store's records by identity: it returns the names among
// committed (the ledger's committed records, in sequence order) that the database's ledger table
// does not name, oldest first; none when the database has seen every transaction the records hold.
// Records numbered below the oldest the database names are not compared: the database starts from
// a baseline (a rebuild replays from the newest, a compaction removes the rows before it), and the
// records before a baseline are redundant (a compaction removes them after the rows).
//
// A count or a newest number would not do: a database restored from an older backup takes the
// next number after the store's newest for its next write (see seqFloorOf), and would then seem
// to have seen everything; the names it lacks stay lacking. committed MUST be listed before Unseen
// reads the database: a writer commits its row before its record, so a record listed committed
// is one whose row a later read sees.
func (d *DB) Unseen(ctx context.Context, committed []string) ([]string, error) {
	if d.workspace == "" {
		return nil, errNoWorkspace()
	}
	if len(committed) == 0 {
		return nil, nil
	}
	known, oldest, err := d.ledgerRows(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the ledger: %w", err)
	}
	var unseen []string
	for _, n := range committed {
		seq, err := recordSeq(n)
		if err != nil {
			return nil, err
		}
		if (len(known) > 0 && seq < oldest) || known[n] {
			continue
		}
		unseen = append(unseen, n)
	}
	return unseen, nil
}

// ledgerRows reads the names the ledger table holds for this workspace, and the oldest number among
// them. Every command opens through it, so its rows are scanned as they come, not by gorm's
// reflection (which cost 2 ms for a history of 500 records, four times the query).
func (d *DB) ledgerRows(ctx context.Context) (known map[string]bool, oldest uint64, err error) {
	type row struct {
		seq  uint64
		name string
	}
	q, err := d.manyRows(d.gorm.WithContext(ctx)).Raw(`SELECT seq, name FROM ledger WHERE workspace_id = ?`, d.workspace).Rows()
	rows, err := scanRows(q, err, func(r *row) []any { return []any{&r.seq, &r.name} })
	if err != nil {
		return nil, 0, d.classify(err)
	}
	known = make(map[string]bool, len(rows))
	for i, r := range rows {
		if i == 0 || r.seq < oldest {
			oldest = r.seq
		}
		known[r.name] = true
	}
	return known, oldest, nil
}

// LostCheckpoints returns the IDs of the checkpoints l's committed records hold that the database
// does not (sorted): rows lost by hand or by a restore the ledger table does not show (it kept the
// names of the transactions whose rows are gone). The records are read before the database, so a
// checkpoint made meanwhile is not taken for a lost one; one deleted meanwhile may be, so a caller
// without the workspace lock asks again before it believes the answer.
func (d *DB) LostCheckpoints(ctx context.Context, l Ledger) ([]string, error) {
	if d.workspace == "" {
		return nil, errNoWorkspace()
	}
	sum, err := SummarizeLedger(l)
	if err != nil {
		return nil, err
	}
	var have []string
	if err := d.gorm.WithContext(ctx).Raw(`SELECT id FROM checkpoints WHERE workspace_id = ?`, d.workspace).Scan(&have).Error; err != nil {
		return nil, fmt.Errorf("read the checkpoints: %w", err)
	}
	held := make(map[string]bool, len(have))
	for _, id := range have {
		held[id] = true
	}
	var lost []string
	for _, c := range sum.List {
		if !held[c.ID] {
			lost = append(lost, c.ID)
		}
	}
	slices.Sort(lost)
	return lost, nil
}

// BehindError is the refusal of a database that has not seen every recorded transaction (see
// Unseen): fault.ErrIntegrity, naming `plan doctor --rebuild`.
func BehindError(shown string, unseen []string) error {
	return fault.Integrity("the metadata database %s is behind the store: it lacks %s the store's records hold (the newest: %s), "+
		"as when it is restored from an older backup or loses rows; nothing was changed: run `plan doctor --rebuild`",
		shown, plural(len(unseen), "recorded transaction"), ShortRecord(unseen[len(unseen)-1]))
}

// ShortRecord is a record's name as messages show it: its number and the start of its hash, a
// prefix of the file's name.
func ShortRecord(name string) string { return name[:min(len(name), 25)] }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// LedgerHead returns the number of the newest record of this workspace the database has seen
// (0: none).
func (d *DB) LedgerHead(ctx context.Context) (uint64, error) {
	if d.workspace == "" {
		return 0, errNoWorkspace()
	}
	var last uint64
	err := d.gorm.WithContext(ctx).Raw(`SELECT COALESCE(MAX(seq), 0) FROM ledger WHERE workspace_id = ?`, d.workspace).Scan(&last).Error
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

// column is a column's name in a record: ^[a-z_][a-z0-9_]*$, at most 64 bytes (the longest is far
// shorter; a name of no table's is refused after this check anyway).
var column = ident.NewPattern("a-z_", "a-z0-9_", 64)

// Rebuild creates the SQLite database at path, which must not exist, from the committed records
// of l: every record applied in sequence order, each aggregate replaced by the state its record
// holds. The database's workspace is the one opts name (WithWorkspace), else the one the newest
// record names, else a fresh one. A damaged or unreadable record stops it (fault.ErrIntegrity
// naming the record) and removes the half-built file, since a database missing a transaction in
// the middle would mislead. A PostgreSQL database is rebuilt in place: see RebuildWorkspace.
func Rebuild(ctx context.Context, path string, l Ledger, opts ...Option) (rep RebuildReport, err error) {
	t, err := parseTarget(path)
	if err != nil {
		return rep, err
	}
	if t.dialect != SQLite {
		return rep, fault.Invalid("Rebuild makes a new SQLite file; a shared database is rebuilt in place, one workspace at a time")
	}
	path = t.path
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
	ws, err := recordedWorkspace(l, names)
	if err != nil {
		return rep, err
	}
	if ws != "" {
		opts = append([]Option{WithWorkspace(ws)}, opts...)
	}
	db, err := Open(ctx, path, true, opts...)
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
	err = db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return db.replayAll(tx, l, names, &rep)
	})
	return rep, err
}

// RebuildWorkspace makes this workspace's rows again from the committed records of l, in place:
// in one transaction, under the workspace's write lock, it deletes the workspace's rows and
// replays its records (from the newest baseline), leaving every other workspace's rows as they
// were. On failure (a damaged record: fault.ErrIntegrity naming it) the transaction rolls back and
// the database is as it was. It is how a shared (PostgreSQL) database is repaired; it works on
// SQLite too.
func (d *DB) RebuildWorkspace(ctx context.Context, l Ledger) (rep RebuildReport, err error) {
	if d.workspace == "" {
		return rep, errNoWorkspace()
	}
	var names []string
	err = d.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := d.lock(tx, d.workspace); err != nil {
			return err
		}
		// The records are listed under the lock every writer holds until its transaction commits,
		// so none commits unseen between the listing and the replay; a writer that committed just
		// before may not have committed its record yet, which the ledger table names: it is
		// committed here, or the rows about to be deleted would be replayed without it.
		pending, err := l.Pending()
		if err != nil {
			return err
		}
		for _, name := range pending {
			var n int64
			if err := tx.Raw(`SELECT COUNT(*) FROM ledger WHERE workspace_id = ? AND name = ?`, d.workspace, name).Scan(&n).Error; err != nil {
				return err
			}
			if n == 0 {
				rep.Pending++ // a transaction a crash cut short: the next open discards it
				continue
			}
			if err := l.Commit(name); err != nil {
				return err
			}
		}
		if names, err = l.Committed(); err != nil {
			return err
		}
		// Children first, though deleting a plan would cascade to them anyway. The workspace's own
		// row stays unless a record replaces it: the handle needs it.
		for _, table := range []string{"attempts", "decisions", "plans", "checkpoints", "history", "corrections",
			"checkpoint_failures", "operations", "ledger"} {
			if err := tx.Exec(`DELETE FROM `+table+` WHERE workspace_id = ?`, d.workspace).Error; err != nil {
				return fmt.Errorf("clear %s of workspace %s: %w", table, d.workspace, err)
			}
		}
		return d.replayAll(tx, l, names, &rep)
	})
	if err != nil {
		return rep, err
	}
	if len(names) > 0 {
		if seq, err := recordSeq(names[len(names)-1]); err == nil {
			d.seqFloor = max(d.seqFloor, seq)
		}
	}
	return rep, nil
}

// replayAll applies the committed records names of l in tx, from the newest baseline on, and
// counts what the workspace then holds.
func (d *DB) replayAll(tx *gorm.DB, l Ledger, names []string, rep *RebuildReport) error {
	cols := map[string]map[string]bool{}
	for _, ts := range aggregates {
		for _, t := range ts {
			c, err := d.columnsOf(tx, t.table)
			if err != nil {
				return err
			}
			cols[t.table] = c
		}
	}
	start, err := lastBaseline(l, names)
	if err != nil {
		return err
	}
	for _, name := range names[start:] {
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
			if err := d.replay(tx, cols, c); err != nil {
				return fault.Wrap(fault.ErrIntegrity, err, "record %s cannot be applied", name)
			}
		}
		if err := tx.Exec(`INSERT INTO ledger(workspace_id, seq, name, at) VALUES (?, ?, ?, ?)`, d.workspace, rec.Seq, name, rec.At.UnixNano()).Error; err != nil {
			return fault.Wrap(fault.ErrIntegrity, err, "record %s repeats a transaction number", name)
		}
		rep.Records++
	}
	for _, q := range []struct {
		n     *int
		table string
	}{
		{&rep.Checkpoints, "checkpoints"}, {&rep.Plans, "plans"}, {&rep.Decisions, "decisions"}, {&rep.Corrections, "corrections"},
	} {
		if err := tx.Raw(`SELECT COUNT(*) FROM `+q.table+` WHERE workspace_id = ?`, d.workspace).Scan(q.n).Error; err != nil {
			return err
		}
	}
	return nil
}

// recordedWorkspace returns the workspace the newest record names ("" when there is no record, or
// it is from before workspaces).
func recordedWorkspace(l Ledger, names []string) (string, error) {
	if len(names) == 0 {
		return "", nil
	}
	b, err := l.Read(names[len(names)-1])
	if err != nil {
		return "", err
	}
	var head struct {
		Workspace string `json:"workspace"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return "", fault.Wrap(fault.ErrIntegrity, err, "record %s cannot be read", names[len(names)-1])
	}
	return head.Workspace, nil
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

// replay makes aggregate c's rows in this workspace what the record says. Every row is given this
// database's workspace, whatever workspace (or none, before workspaces) the record holds.
func (d *DB) replay(tx *gorm.DB, cols map[string]map[string]bool, c change) error {
	tables, ok := aggregates[c.Kind]
	if !ok {
		return fmt.Errorf("unknown kind %q", c.Kind)
	}
	if !upserted[c.Kind] || c.Deleted {
		for i := len(tables) - 1; i >= 0; i-- {
			t := tables[i]
			cond, args, err := t.where(c.Key, d.workspace)
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
			if t.table == workspaceTable {
				row["id"] = d.workspace
			} else {
				row["workspace_id"] = d.workspace
			}
			names := make([]string, 0, len(row))
			vals := make([]any, 0, len(row))
			for _, k := range slices.Sorted(maps.Keys(row)) {
				v := row[k]
				if !column.Match(k) || !cols[t.table][k] {
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
				if i, ok := v.(int64); ok && flagColumns[t.table][k] && d.dialect == Postgres {
					v = i != 0
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
				q += ` ON CONFLICT(workspace_id, ` + strings.Join(t.columns, ", ") + `) DO UPDATE SET ` + strings.Join(sets, ", ")
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
