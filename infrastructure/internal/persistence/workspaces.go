package persistence

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
)

// WithWorkspace makes the handle see the workspace id: every row it reads carries the ID, every
// row it writes is given it. Open refuses an ID the database does not hold (fault.ErrNotFound)
// unless create is set, when the workspace is added.
func WithWorkspace(id string) Option { return func(d *DB) { d.wantWorkspace = id } }

// WithoutWorkspace opens a database only to list its workspaces (Workspaces) or check it: no
// workspace is chosen, and every repository call is fault.ErrInvalid.
func WithoutWorkspace() Option { return func(d *DB) { d.anyWorkspace = true } }

// workspaceID is what a workspace ID may be: ident.New's, or any short name safe in a message.
var workspaceID = ident.NewPattern("A-Za-z0-9", "A-Za-z0-9._-", 64) // ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$

type workspaceRow struct {
	ID      string `gorm:"primaryKey"`
	Root    string
	Host    string
	Created int64 `gorm:"column:created_at"`
}

func (workspaceRow) TableName() string { return "workspaces" }

// WorkspaceID is the workspace this handle sees ("" when opened WithoutWorkspace).
func (d *DB) WorkspaceID() string { return d.workspace }

// chooseWorkspace settles the workspace the handle sees: the one WithWorkspace names, or the
// database's sole one. A workspace is added when the caller may create one, or when a SQLite
// database holds none (a new one, or one whose schema predates workspaces and that held no rows);
// with no ID given it gets a fresh one. The choice is made again under the write lock before
// anything is added, so two processes opening one database at once agree on it.
func (d *DB) chooseWorkspace(ctx context.Context, create bool) error {
	if d.anyWorkspace {
		return nil
	}
	ids, err := workspaceIDs(d.gorm.WithContext(ctx))
	if err != nil {
		return err
	}
	if d.workspace, err = d.pickWorkspace(ids, create); err != nil || d.workspace != "" {
		return err
	}
	return d.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		scope := d.wantWorkspace
		if scope == "" {
			scope = schemaLock
		}
		if err := d.lock(tx, scope); err != nil {
			return err
		}
		ids, err := workspaceIDs(tx)
		if err != nil {
			return err
		}
		if d.workspace, err = d.pickWorkspace(ids, create); err != nil || d.workspace != "" {
			return err
		}
		id := d.wantWorkspace
		if id == "" {
			id = ident.New(time.Now())
		}
		if err := tx.Create(&workspaceRow{ID: id, Created: time.Now().UnixNano()}).Error; err != nil {
			return fmt.Errorf("add workspace %s: %w", id, err)
		}
		d.workspace = id
		return nil
	})
}

// pickWorkspace returns the workspace among ids the handle sees, or "" when one is to be added.
func (d *DB) pickWorkspace(ids []string, create bool) (string, error) {
	if want := d.wantWorkspace; want != "" {
		switch {
		case slices.Contains(ids, want):
			return want, nil
		case create || (d.dialect == SQLite && len(ids) == 0):
			return "", nil
		}
		return "", fault.NotFound("the metadata database %s holds no workspace %s: it is not this workspace's database, or its rows were lost (`plan doctor --rebuild` makes them again from the store)",
			d.target.shown, want)
	}
	switch len(ids) {
	case 0:
		return "", nil
	case 1:
		return ids[0], nil
	}
	return "", fault.Invalid("the metadata database %s holds %d workspaces: a shared database needs the workspace ID from .plan/config.yaml",
		d.target.shown, len(ids))
}

func workspaceIDs(g *gorm.DB) ([]string, error) {
	var ids []string
	if err := g.Raw(`SELECT id FROM workspaces ORDER BY id`).Scan(&ids).Error; err != nil {
		return nil, fmt.Errorf("list the workspaces: %w", err)
	}
	return ids, nil
}

// WorkspaceInfo describes a workspace to the database that keeps its metadata.
type WorkspaceInfo struct {
	// ID is the workspace's; "" means the handle's.
	ID string
	// Root is the workspace's directory and Host the machine it is on.
	Root, Host string
	// CreatedAt is when the workspace was made; zero keeps what the database holds.
	CreatedAt time.Time
}

// RegisterWorkspace records (or updates) where this handle's workspace is. It is a write like any
// other, recorded in the ledger as the workspace's own aggregate, so a rebuild restores it.
func (d *DB) RegisterWorkspace(ctx context.Context, w WorkspaceInfo) error {
	if w.ID == "" {
		w.ID = d.workspace
	}
	if w.ID != d.workspace {
		return fault.Invalid("workspace %s can be registered only through a database opened for it (this one is %q)", w.ID, d.workspace)
	}
	return d.write(ctx, "workspace", w.ID, func(tx *gorm.DB) error {
		var rows []workspaceRow
		if err := tx.Where("id = ?", w.ID).Find(&rows).Error; err != nil {
			return fmt.Errorf("read workspace %s: %w", w.ID, err)
		}
		row := workspaceRow{ID: w.ID, Root: w.Root, Host: w.Host, Created: time.Now().UnixNano()}
		if len(rows) == 1 {
			row.Created = rows[0].Created
		}
		if !w.CreatedAt.IsZero() {
			row.Created = w.CreatedAt.UnixNano()
		}
		if err := tx.Save(&row).Error; err != nil {
			return fmt.Errorf("register workspace %s: %w", w.ID, err)
		}
		return nil
	})
}

// WorkspaceSummary is one workspace of a database, as `plan workspaces` lists it.
type WorkspaceSummary struct {
	ID, Root, Host string
	CreatedAt      time.Time
	// Checkpoints is how many checkpoints the workspace has; Newest is when the newest was made
	// (zero when there is none).
	Checkpoints int
	Newest      time.Time
}

// Workspaces lists every workspace the database holds, oldest first, whichever this handle sees.
func (d *DB) Workspaces(ctx context.Context) ([]WorkspaceSummary, error) {
	var rows []struct {
		ID, Root, Host string
		CreatedAt      int64
		Checkpoints    int
		Newest         int64
	}
	err := d.gorm.WithContext(ctx).Raw(`SELECT w.id, w.root, w.host, w.created_at,
		(SELECT COUNT(*) FROM checkpoints c WHERE c.workspace_id = w.id) AS checkpoints,
		(SELECT COALESCE(MAX(c.created_at), 0) FROM checkpoints c WHERE c.workspace_id = w.id) AS newest
		FROM workspaces w ORDER BY w.created_at, w.id`).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("list the workspaces: %w", err)
	}
	out := make([]WorkspaceSummary, 0, len(rows))
	for _, r := range rows {
		s := WorkspaceSummary{ID: r.ID, Root: r.Root, Host: r.Host, CreatedAt: time.Unix(0, r.CreatedAt).UTC(), Checkpoints: r.Checkpoints}
		if r.Checkpoints > 0 {
			s.Newest = time.Unix(0, r.Newest).UTC()
		}
		out = append(out, s)
	}
	return out, nil
}

// schemaAt returns the tables of schema version v and their columns, as the migration steps up to
// v leave them (schema_migrations, which migrate makes, is not among them). The result is shared:
// callers MUST NOT change it.
func schemaAt(v int) map[string][]string { return schemaOf(v).tables }

// tablesAt lists the tables of schema version v, sorted (shared, as schemaAt's).
func tablesAt(v int) []string { return schemaOf(v).names }

// schemaOf is version v's entry of schemas (the newest for a newer v).
func schemaOf(v int) schemaInfo {
	all := schemas()
	return all[max(0, min(v, len(all)-1))]
}

// schemaInfo is one schema version's tables and columns, and its tables' names sorted.
type schemaInfo struct {
	tables map[string][]string
	names  []string
}

// schemas reads the migration steps once, the first time a database is opened, into every
// version's schema, index = version. Every command's open reads it (the schema check), so the
// statements are read by plain string matching, not by regular expressions: compiling and running
// those was two thirds of the schema check (0.4 ms of a 15 ms read-only command).
var schemas = sync.OnceValue(func() []schemaInfo {
	out := []schemaInfo{{tables: map[string][]string{}}}
	tables := map[string][]string{}
	for _, m := range migrations {
		for _, stmt := range m.sql {
			applyDDL(tables, stmt)
		}
		for len(out) < m.version {
			out = append(out, out[len(out)-1]) // a version without a step (none so far) is the one before
		}
		snap := maps.Clone(tables)
		out = append(out, schemaInfo{tables: snap, names: slices.Sorted(maps.Keys(snap))})
	}
	return out
})

// applyDDL applies what one migration statement does to the tables and their columns (name →
// columns): CREATE TABLE name ( with one column a line (a line that starts with a lower-case
// name and its TEXT or INTEGER type), ALTER TABLE name ADD COLUMN column, DROP TABLE name, ALTER
// TABLE name RENAME TO new. Other statements (indexes, updates) change no table.
func applyDDL(tables map[string][]string, stmt string) {
	s := strings.TrimLeft(stmt, ddlSpace)
	if rest, ok := strings.CutPrefix(s, "CREATE TABLE "); ok {
		if name, rest := ddlWord(rest); name != "" && strings.HasPrefix(rest, " (") {
			tables[name] = ddlColumns(stmt)
			return
		}
	}
	if rest, ok := strings.CutPrefix(s, "ALTER TABLE "); ok {
		name, rest := ddlWord(rest)
		if col, ok := strings.CutPrefix(rest, " ADD COLUMN "); ok && name != "" {
			if c, _ := ddlWord(col); c != "" {
				tables[name] = append(slices.Clip(tables[name]), c)
				return
			}
		}
		if to, ok := strings.CutPrefix(rest, " RENAME TO "); ok && name != "" {
			if n, tail := ddlWord(to); n != "" && strings.TrimLeft(tail, ddlSpace) == "" {
				tables[n] = tables[name]
				delete(tables, name)
				return
			}
		}
	}
	if rest, ok := strings.CutPrefix(s, "DROP TABLE "); ok {
		if n, tail := ddlWord(rest); n != "" && strings.TrimLeft(tail, ddlSpace) == "" {
			delete(tables, n)
		}
	}
}

// ddlSpace is the white space SQL statements are laid out with.
const ddlSpace = " \t\n\f\r"

// ddlWord splits s after its leading name (letters, digits, underscores).
func ddlWord(s string) (word, rest string) {
	i := 0
	for i < len(s) && isWordByte(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// ddlColumns lists the columns of a CREATE TABLE statement: the lines that start (after white
// space) with a lower-case name, one space and the type TEXT or INTEGER.
func ddlColumns(stmt string) []string {
	var cols []string
	for line := range strings.SplitSeq(stmt, "\n") {
		line = strings.TrimLeft(line, ddlSpace)
		i := 0
		for i < len(line) && (line[i] == '_' || 'a' <= line[i] && line[i] <= 'z') {
			i++
		}
		if i == 0 {
			continue
		}
		typ, ok := strings.CutPrefix(line[i:], " ")
		if !ok {
			continue
		}
		for _, t := range []string{"TEXT", "INTEGER"} {
			if rest, ok := strings.CutPrefix(typ, t); ok && (rest == "" || !isWordByte(rest[0])) {
				cols = append(cols, line[:i])
				break
			}
		}
	}
	return cols
}

// schemaComplaints checks the schema against the one the recorded version promises: every table
// and column there, and every row of a scoped table belonging to a workspace the database lists.
func (d *DB) schemaComplaints(ctx context.Context) ([]string, error) {
	g := d.gorm.WithContext(ctx)
	current, err := schemaVersion(g)
	if err != nil {
		return nil, d.classify(err)
	}
	var out []string
	want := schemaAt(current)
	for _, table := range tablesAt(current) {
		have, err := d.columnsOf(g, table)
		if err != nil {
			return nil, d.classify(err)
		}
		if len(have) == 0 {
			out = append(out, fmt.Sprintf("table %s is missing", table))
			continue
		}
		var missing []string
		for _, c := range want[table] {
			if !have[c] {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			out = append(out, fmt.Sprintf("table %s lacks the columns %s", table, strings.Join(missing, ", ")))
			continue
		}
		if have["workspace_id"] {
			var n int64
			if err := g.Raw(`SELECT COUNT(*) FROM ` + table + ` WHERE workspace_id NOT IN (SELECT id FROM workspaces)`).Scan(&n).Error; err != nil {
				return nil, d.classify(err)
			}
			if n > 0 {
				out = append(out, fmt.Sprintf("table %s has %d rows of no listed workspace", table, n))
			}
		}
	}
	return out, nil
}
