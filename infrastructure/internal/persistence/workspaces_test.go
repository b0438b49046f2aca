package persistence

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// Two workspaces share one database without seeing each other: the same plan name and checkpoint
// ID prefixes in both, record numbers counted per workspace, a rebuild of one that leaves the
// other's rows alone, and a listing of both with their own counts.
func TestWorkspacesShareADatabase(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		target, _ := e.new(t)
		type side struct {
			db   *DB
			recs *objectstore.Records
		}
		open := func(ws string) side {
			recs, err := objectstore.OpenRecords(filepath.Join(t.TempDir(), "objects"))
			if err != nil {
				t.Fatal(err)
			}
			db, err := Open(ctx, target, true, WithWorkspace(ws), WithLedger(recs))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			if err := db.RegisterWorkspace(ctx, WorkspaceInfo{Root: "/src/" + ws, Host: "host-" + ws, CreatedAt: time.Unix(int64(len(ws)), 0)}); err != nil {
				t.Fatal(err)
			}
			return side{db, recs}
		}
		a, b := open("alpha"), open("beta-1")
		if a.db.WorkspaceID() != "alpha" || b.db.WorkspaceID() != "beta-1" {
			t.Fatalf("workspaces %q and %q", a.db.WorkspaceID(), b.db.WorkspaceID())
		}
		// The same IDs in both: each workspace resolves its own, and neither sees the other's.
		for i, s := range []side{a, b} {
			for j, id := range []string{id1, id2} {
				if j == 1 && i == 1 {
					break // beta has one checkpoint, alpha two
				}
				c := newCP(t, id, time.Unix(int64(10*i+j), 0), func(p *checkpoint.Params) { p.Note = s.db.WorkspaceID() })
				if err := NewCheckpoints(s.db).Add(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			p, err := plan.New(fmt.Sprintf("%024d", 7), "release", "plan.yaml", true, time.Unix(1, 0))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Append(plan.Definition{ID: "build-" + s.db.WorkspaceID(), Run: "make"}); err != nil {
				t.Fatal(err)
			}
			if err := NewPlans(s.db).Save(ctx, p); err != nil {
				t.Fatal(err)
			}
			if err := NewMetrics(s.db).RecordCheckpointFailure(ctx, time.Unix(3, 0), "full"); err != nil {
				t.Fatal(err)
			}
		}
		c, err := NewCheckpoints(a.db).Resolve(ctx, id1[:12])
		if err != nil || c.Note() != "alpha" {
			t.Fatalf("alpha resolves %v, %v", c, err)
		}
		if c, err := NewCheckpoints(b.db).Resolve(ctx, id1[:12]); err != nil || c.Note() != "beta-1" {
			t.Fatalf("beta resolves %v, %v", c, err)
		}
		if _, err := NewCheckpoints(b.db).Get(ctx, id2); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("beta sees alpha's checkpoint: %v", err)
		}
		if l, err := NewCheckpoints(b.db).List(ctx); err != nil || len(l) != 1 {
			t.Fatalf("beta lists %d checkpoints: %v", len(l), err)
		}
		for _, s := range []side{a, b} {
			p, err := NewPlans(s.db).ByName(ctx, "release")
			if err != nil || len(p.Decisions()) != 1 || p.Decisions()[0].ID() != "build-"+s.db.WorkspaceID() {
				t.Fatalf("%s's plan: %v, %v", s.db.WorkspaceID(), p, err)
			}
			if n, err := NewMetrics(s.db).CheckpointFailures(ctx); err != nil || n != 1 {
				t.Fatalf("%s's failures: %d, %v", s.db.WorkspaceID(), n, err)
			}
		}
		// Record numbers are per workspace: each started at 1.
		headA, _ := a.db.LedgerHead(ctx)
		headB, _ := b.db.LedgerHead(ctx)
		if headA != 5 || headB != 4 {
			t.Fatalf("ledger heads %d and %d, want 5 and 4", headA, headB)
		}
		list, err := a.db.Workspaces(ctx)
		if err != nil || len(list) != 2 {
			t.Fatalf("workspaces: %+v, %v", list, err)
		}
		if w := list[0]; w.ID != "alpha" || w.Root != "/src/alpha" || w.Host != "host-alpha" || w.Checkpoints != 2 ||
			!w.Newest.Equal(time.Unix(1, 0)) || !w.CreatedAt.Equal(time.Unix(5, 0)) {
			t.Fatalf("alpha: %+v", w)
		}
		if w := list[1]; w.ID != "beta-1" || w.Checkpoints != 1 || !w.Newest.Equal(time.Unix(10, 0)) {
			t.Fatalf("beta: %+v", w)
		}

		// Rebuild alpha in place after losing its checkpoints: beta's rows do not move.
		beforeB := scopedDump(t, b.db)
		beforeA := scopedDump(t, a.db)
		if err := a.db.gorm.Exec(`DELETE FROM checkpoints WHERE workspace_id = 'alpha'`).Error; err != nil {
			t.Fatal(err)
		}
		rep, err := a.db.RebuildWorkspace(ctx, a.recs)
		if err != nil || rep.Checkpoints != 2 || rep.Plans != 1 || rep.Records != 5 {
			t.Fatalf("rebuild alpha: %+v, %v", rep, err)
		}
		if d := diffDumps(beforeA, scopedDump(t, a.db)); d != "" {
			t.Fatalf("alpha after its rebuild:\n%s", d)
		}
		if d := diffDumps(beforeB, scopedDump(t, b.db)); d != "" {
			t.Fatalf("beta changed by alpha's rebuild:\n%s", d)
		}
		// And alpha goes on numbering where it was.
		if err := NewCheckpoints(a.db).Add(ctx, newCP(t, id3, time.Unix(50, 0))); err != nil {
			t.Fatal(err)
		}
		if head, _ := a.db.LedgerHead(ctx); head != 6 {
			t.Fatalf("alpha's head after a rebuild and a write: %d", head)
		}

		// Without an ID, a database of two workspaces is refused: it cannot know which is meant.
		if e.name == "sqlite" {
			if _, err := Open(ctx, target, false); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "workspace ID") {
				t.Fatalf("open without an ID: %v", err)
			}
		}
		// A workspace the database does not hold is not found, unless it may be created.
		if _, err := Open(ctx, target, false, WithWorkspace("gamma")); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("open of an unknown workspace: %v", err)
		}
	})
}

// scopedDump is dump restricted to d's workspace.
func scopedDump(t testing.TB, d *DB) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for _, tb := range tables {
		var rows []map[string]any
		if err := d.gorm.Table(tb.name).Where("workspace_id = ?", d.WorkspaceID()).Order(tb.order).Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		out[tb.name] = rows
	}
	return out
}

// Two handles of one workspace writing at once are serialised: no write fails, every transaction
// gets its own record, numbered without a gap, and the ledger table names each record once.
func TestConcurrentWritersOfOneWorkspace(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		target, opts := e.new(t)
		recs, err := objectstore.OpenRecords(filepath.Join(t.TempDir(), "objects"))
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, WithLedger(recs))
		first, err := Open(ctx, target, true, opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = first.Close() }()
		opts = append(opts, WithWorkspace(first.WorkspaceID()))
		second, err := Open(ctx, target, false, opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = second.Close() }()
		const each = 25
		var wg sync.WaitGroup
		errs := make(chan error, 2*each)
		for w, db := range []*DB{first, second} {
			wg.Go(func() {
				for i := range each {
					id := fmt.Sprintf("%012x%012x", w+1, i)
					if err := NewCheckpoints(db).Add(ctx, newCP(t, id, time.Unix(int64(i), 0))); err != nil {
						errs <- err
					}
					// A read-then-write transaction too: the plan's save reads its old rows.
					p, err := NewPlans(db).ByName(ctx, "shared")
					if errors.Is(err, fault.ErrNotFound) {
						p, err = plan.New(fmt.Sprintf("%024d", 1), "shared", "", true, time.Unix(0, 0))
					}
					if err == nil {
						_, err = p.Append(plan.Definition{ID: id, Run: "true"})
					}
					if err == nil {
						err = NewPlans(db).Save(ctx, p)
					}
					if err != nil && !errors.Is(err, fault.ErrConflict) {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		var rows []struct {
			Seq  uint64
			Name string
		}
		if err := first.gorm.Raw(`SELECT seq, name FROM ledger WHERE workspace_id = ? ORDER BY seq`, first.WorkspaceID()).Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		committed, _ := recs.Committed()
		if pending, _ := recs.Pending(); len(pending) != 0 {
			t.Fatalf("pending records: %v", pending)
		}
		if len(rows) != len(committed) || len(rows) < 2*each {
			t.Fatalf("%d ledger rows, %d records", len(rows), len(committed))
		}
		for i, r := range rows {
			if r.Seq != uint64(i+1) || r.Name != committed[i] {
				t.Fatalf("ledger row %d: %d %s, record %s", i, r.Seq, r.Name, committed[i])
			}
		}
		if l, err := NewCheckpoints(first).List(ctx); err != nil || len(l) != 2*each {
			t.Fatalf("%d checkpoints: %v", len(l), err)
		}
		_, rebuilt, err := e.rebuild(t, recs, first.WorkspaceID())
		if err != nil {
			t.Fatal(err)
		}
		if d := diffDumps(dump(t, first), dump(t, rebuilt)); d != "" {
			t.Fatalf("rebuilt from concurrent records:\n%s", d)
		}
	})
}

// Processes opening one new database at once agree: the schema is made once, and with no
// workspace ID given they all adopt the one workspace the first made.
func TestConcurrentOpensAgree(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		target, opts := e.new(t)
		const n = 4
		ids := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				db, err := Open(ctx, target, true, opts...)
				if err != nil {
					errs[i] = err
					return
				}
				ids[i] = db.WorkspaceID()
				errs[i] = db.Close()
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if ids[0] == "" || slices.ContainsFunc(ids, func(s string) bool { return s != ids[0] }) {
			t.Fatalf("workspaces %v", ids)
		}
		db, err := Open(ctx, target, false, WithoutWorkspace())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = db.Close() }()
		if w, err := db.Workspaces(ctx); err != nil || len(w) != 1 || w[0].ID != ids[0] || w[0].Checkpoints != 0 || !w[0].Newest.IsZero() {
			t.Fatalf("workspaces: %+v, %v", w, err)
		}
		var versions []int
		if err := db.gorm.Raw(`SELECT version FROM schema_migrations ORDER BY version`).Scan(&versions).Error; err != nil || len(versions) != len(migrations) {
			t.Fatalf("schema versions %v, %v", versions, err)
		}
	})
}

// A handle opened without a workspace lists the workspaces and nothing else: a repository read
// would otherwise take another workspace's rows, or an empty answer, for this one's.
func TestWithoutWorkspaceOnlyLists(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		target, opts := e.new(t)
		db, err := Open(ctx, target, true, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := NewCheckpoints(db).Add(ctx, newCP(t, id1, time.Unix(1, 0))); err != nil {
			t.Fatal(err)
		}
		_ = db.Close()
		any, err := Open(ctx, target, false, WithoutWorkspace())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = any.Close() }()
		if any.WorkspaceID() != "" {
			t.Fatalf("workspace %q", any.WorkspaceID())
		}
		if w, err := any.Workspaces(ctx); err != nil || len(w) != 1 || w[0].Checkpoints != 1 {
			t.Fatalf("workspaces %+v, %v", w, err)
		}
		check := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, fault.ErrInvalid) {
				t.Errorf("%s without a workspace: %v", what, err)
			}
		}
		_, err = NewCheckpoints(any).List(ctx)
		check("List", err)
		_, err = NewCheckpoints(any).Resolve(ctx, "0000")
		check("Resolve", err)
		check("Add", NewCheckpoints(any).Add(ctx, newCP(t, id2, time.Unix(2, 0))))
		_, err = any.LedgerHead(ctx)
		check("LedgerHead", err)
		_, err = any.RebuildWorkspace(ctx, lossyLedger{})
		check("RebuildWorkspace", err)
		check("RegisterWorkspace", any.RegisterWorkspace(ctx, WorkspaceInfo{Root: "/x"}))
		// And the option does not go with a workspace or a ledger.
		for _, o := range [][]Option{{WithoutWorkspace(), WithWorkspace("w")}, {WithoutWorkspace(), WithLedger(lossyLedger{})}} {
			if _, err := Open(ctx, target, false, o...); !errors.Is(err, fault.ErrInvalid) {
				t.Errorf("conflicting options: %v", err)
			}
		}
	})
}

// Bad targets and IDs are refused before anything is opened.
func TestOpenRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		target string
		opts   []Option
	}{
		"no target":             {"", nil},
		"an unknown scheme":     {"mysql://u:p@h/db", nil},
		"a relative sqlite URL": {"sqlite://plan.db", nil},
		"postgres without ID":   {"postgres://u:secret@127.0.0.1:1/db", nil},
		"a malformed ID":        {filepath.Join(dir, "a.db"), []Option{WithWorkspace("../x")}},
		"a malformed URL":       {"postgres://u:secret@[::1/db", []Option{WithWorkspace("w")}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Open(ctx, tc.target, true, tc.opts...)
			if !errors.Is(err, fault.ErrInvalid) || strings.Contains(err.Error(), "secret") {
				t.Fatalf("Open(%q) = %v", tc.target, err)
			}
		})
	}
	// sqlite:///abs/path is the file at /abs/path.
	path := filepath.Join(dir, "url.db")
	db, err := Open(ctx, "sqlite://"+path, true)
	if err != nil {
		t.Fatal(err)
	}
	if db.Target() != path || db.Dialect() != SQLite {
		t.Fatalf("target %q, dialect %s", db.Target(), db.Dialect())
	}
	_ = db.Close()
	if _, err := Rebuild(ctx, "postgres://u:secret@127.0.0.1:1/db", lossyLedger{}); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("a file rebuild into PostgreSQL: %v", err)
	}
	// A workspace registers only itself.
	db = mustOpen(t, path, false)
	defer db.Close()
	if err := db.RegisterWorkspace(ctx, WorkspaceInfo{ID: "someone-else"}); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("registering another workspace: %v", err)
	}
	if err := db.RegisterWorkspace(ctx, WorkspaceInfo{Root: "/w"}); err != nil {
		t.Fatal(err)
	}
	if err := db.RegisterWorkspace(ctx, WorkspaceInfo{Root: "/moved", Host: "h2"}); err != nil {
		t.Fatal(err)
	}
	w, err := db.Workspaces(ctx)
	if err != nil || len(w) != 1 || w[0].Root != "/moved" || w[0].Host != "h2" || w[0].CreatedAt.IsZero() {
		t.Fatalf("after re-registering: %+v, %v", w, err)
	}
}

// A workspace that cannot be added or registered is an error, never a handle on nothing; a
// listing that cannot be read is an error, never an empty list.
func TestWorkspaceWriteFailures(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		target, opts := e.new(t)
		db, err := Open(ctx, target, true, opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = db.Close() }()
		failWrites(t, db, "INSERT", "workspaces")
		failWrites(t, db, "UPDATE", "workspaces")
		if other, err := Open(ctx, target, true, WithWorkspace("another")); err == nil || !strings.Contains(err.Error(), "injected failure") {
			if other != nil {
				_ = other.Close()
			}
			t.Fatalf("adding a workspace the database refuses: %v", err)
		}
		if err := db.RegisterWorkspace(ctx, WorkspaceInfo{Root: "/w"}); err == nil || !strings.Contains(err.Error(), "injected failure") {
			t.Fatalf("registering: %v", err)
		}
		dropTable(t, db, "workspaces")
		if _, err := db.Workspaces(ctx); err == nil {
			t.Fatal("a listing of a lost table")
		}
		if err := db.RegisterWorkspace(ctx, WorkspaceInfo{Root: "/w"}); err == nil {
			t.Fatal("registering into a lost table")
		}
	})
}

// A database whose rows break its foreign keys (written with them off) is not migrated: step 10
// checks them before it commits, since it copies the rows with the keys off.
func TestMigrationRefusesBrokenForeignKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan.db")
	raw := legacySQLite(t, path, 9)
	for _, stmt := range []string{
		`PRAGMA foreign_keys = OFF`,
		`INSERT INTO decisions (plan_id, id, position, run) VALUES ('ghost', 'd', 0, 'x')`,
	} {
		if err := raw.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
	if sqlDB, err := raw.DB(); err == nil {
		_ = sqlDB.Close()
	}
	if _, err := Open(context.Background(), path, false); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "version 10") {
		t.Fatalf("open: %v", err)
	}
	// Nothing of the step stayed.
	raw = legacySQLiteReopen(t, path)
	var v int
	if err := raw.Raw(`SELECT MAX(version) FROM schema_migrations`).Scan(&v).Error; err != nil || v != 9 {
		t.Fatalf("version %d, %v", v, err)
	}
}
