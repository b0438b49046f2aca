package persistence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/artifact"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// tables lists every table a rebuild must reproduce, with the columns that order its rows.
var tables = []struct{ name, order string }{
	{"checkpoints", "workspace_id, id"}, {"history", "workspace_id, id"}, {"plans", "workspace_id, id"},
	{"decisions", "workspace_id, plan_id, id"}, {"attempts", "workspace_id, plan_id, decision_id, number"},
	{"corrections", "workspace_id, id"}, {"checkpoint_failures", "workspace_id, id"}, {"ledger", "workspace_id, seq"},
}

// dump reads every row of every table, so two databases can be compared field for field.
func dump(t testing.TB, d *DB) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for _, tb := range tables {
		var rows []map[string]any
		if err := d.gorm.Table(tb.name).Order(tb.order).Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		out[tb.name] = rows
	}
	return out
}

// workspaceRows reads the workspaces table.
func workspaceRows(t testing.TB, d *DB) []map[string]any {
	t.Helper()
	var rows []map[string]any
	if err := d.gorm.Table("workspaces").Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	return rows
}

// countOf counts the rows of workspace ws.
func countOf(rows []map[string]any, ws string) int {
	n := 0
	for _, r := range rows {
		if r["workspace_id"] == ws {
			n++
		}
	}
	return n
}

func diffDumps(a, b map[string][]map[string]any) string {
	var out []string
	for _, tb := range tables {
		x, y := a[tb.name], b[tb.name]
		if tb.name == "ledger" && len(y) > 0 && len(x) > len(y) {
			// A rebuild starts at the newest baseline: it knows the records from there on.
			x = x[len(x)-len(y):]
		}
		if len(x) != len(y) {
			out = append(out, fmt.Sprintf("%s: %d rows, then %d", tb.name, len(x), len(y)))
			continue
		}
		for i := range x {
			if !reflect.DeepEqual(x[i], y[i]) {
				out = append(out, fmt.Sprintf("%s row %d:\n  %v\n  %v", tb.name, i, x[i], y[i]))
			}
		}
	}
	return strings.Join(out, "\n")
}

// lossyLedger forgets to commit: a process killed between its database commit and the record's
// rename out of pending/.
type lossyLedger struct{ Ledger }

func (lossyLedger) Commit(string) error { return nil }

// The database is an index of the records: at random points of a random history the database is
// thrown away and rebuilt from the records alone, and the rebuilt one must equal the one lost,
// field for field, including what was deleted staying deleted. Work then goes on in the rebuilt
// database, so numbering continues correctly across rebuilds. Failed transactions leave no record;
// a record a crash left pending is committed or discarded by the next open, as the database says.
//
// On PostgreSQL the workspace shares its database with a neighbour, whose rows no rebuild touches,
// and the loss is of the workspace's rows only, rebuilt in place.
func TestRebuildReproducesTheDatabase(t *testing.T) {
	onEngines(t, rebuildReproducesTheDatabase)
}

func rebuildReproducesTheDatabase(t *testing.T, e engine) {
	ctx := context.Background()
	dir := t.TempDir()
	recs, err := objectstore.OpenRecords(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	path, opts := e.new(t)
	open := func(create bool, l Ledger) (*DB, error) {
		return Open(ctx, path, create, append(append([]Option{}, opts...), WithLedger(l))...)
	}
	db, err := open(true, recs)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if err := db.RegisterWorkspace(ctx, WorkspaceInfo{Root: "/w/main", Host: "h1", CreatedAt: time.Unix(100, 0)}); err != nil {
		t.Fatal(err)
	}
	if e.name == "postgres" {
		neighbour, err := Open(ctx, path, true, WithWorkspace("neighbour"))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := NewCheckpoints(neighbour).Add(ctx, newCP(t, fmt.Sprintf("%024x", i), time.Unix(int64(i), 0))); err != nil {
				t.Fatal(err)
			}
		}
		savedPlan(t, NewPlans(neighbour))
		_ = neighbour.Close()
	}

	rng := rand.New(rand.NewPCG(7, 11))
	base := time.Date(2026, 1, 2, 3, 4, 5, 987654321, time.UTC)
	now := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	var cps []checkpoint.ID
	var plans []string
	rebuilds := 0
	for i := range 400 {
		cpRepo, planRepo, corrRepo, hist, metrics := NewCheckpoints(db), NewPlans(db), NewCorrections(db), NewHistory(db), NewMetrics(db)
		switch op := rng.IntN(11); op {
		case 0, 1: // a checkpoint
			id := fmt.Sprintf("%016x%08x", i, rng.Uint32())
			c, err := checkpoint.New(checkpoint.Params{
				ID: id, Type: checkpoint.Manual, CreatedAt: now(i), Root: tree.Sum([]byte(id)), Note: "n'ote " + id,
				Stats: checkpoint.Stats{Files: int64(i), Bytes: int64(i * 10), StoredBytes: 3, Duration: time.Millisecond},
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := cpRepo.Add(ctx, c); err != nil {
				t.Fatal(err)
			}
			cps = append(cps, checkpoint.ID(id))
		case 2: // a delete
			if len(cps) == 0 {
				continue
			}
			k := rng.IntN(len(cps))
			if err := cpRepo.Delete(ctx, cps[k]); err != nil {
				t.Fatal(err)
			}
			cps = append(cps[:k], cps[k+1:]...)
		case 3: // a rollback: the count, the history and a plan's reverted attempts in one unit
			if len(cps) == 0 {
				continue
			}
			target := cps[rng.IntN(len(cps))]
			err := NewTransactor(db).Do(ctx, func(ctx context.Context) error {
				if err := cpRepo.Update(ctx, target, func(c *checkpoint.Checkpoint) error { c.RecordRollback(); return nil }); err != nil {
					return err
				}
				var reverted []string
				if len(plans) > 0 {
					p, err := planRepo.ByName(ctx, plans[rng.IntN(len(plans))])
					if err != nil {
						return err
					}
					reverted = p.RevertStartedSince(now(i-20), "op"+fmt.Sprint(i))
					if err := planRepo.Save(ctx, p); err != nil {
						return err
					}
				}
				return hist.Record(ctx, port.HistoryRecord{ID: fmt.Sprintf("op%04d", i), Kind: "rollback", TargetCheckpoint: target,
					BackupCheckpoint: target, StartedAt: now(i), FinishedAt: now(i + 1), Added: 1, Reverted: reverted})
			})
			if err != nil {
				t.Fatal(err)
			}
		case 4, 5: // a plan runs a decision
			var p *plan.Plan
			if len(plans) == 0 || rng.IntN(3) == 0 {
				name := fmt.Sprintf("plan%d", len(plans))
				if p, err = plan.New(fmt.Sprintf("%024d", i), name, "plan.yaml", true, now(i)); err != nil {
					t.Fatal(err)
				}
				plans = append(plans, name)
			} else if p, err = planRepo.ByName(ctx, plans[rng.IntN(len(plans))]); err != nil {
				t.Fatal(err)
			}
			d, err := p.Append(plan.Definition{ID: fmt.Sprintf("d%d", i), Run: "echo " + fmt.Sprint(i), Env: map[string]string{"K": "v"}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Start(d.ID(), "", "logs/x.log", now(i)); err != nil {
				t.Fatal(err)
			}
			if err := planRepo.Save(ctx, p); err != nil {
				t.Fatal(err)
			}
			code := rng.IntN(3)
			st := plan.Succeeded
			if code != 0 {
				st = plan.Failed
			}
			if err := p.Finish(d.ID(), plan.Outcome{Status: st, ExitCode: &code, ResultTree: tree.Sum([]byte{byte(i)}),
				Artifacts: []artifact.Artifact{{Path: "out/" + fmt.Sprint(i), Change: tree.Added, Size: 4, SHA256: tree.Sum([]byte("x")).String()}}}, now(i+1)); err != nil {
				t.Fatal(err)
			}
			if err := planRepo.Save(ctx, p); err != nil {
				t.Fatal(err)
			}
		case 6: // a correction, then its end
			id := fmt.Sprintf("%016x%08x", i, 7)
			c, err := correction.New(correction.Params{ID: id, DecisionID: "d1", Reason: "wrong", Scope: []correction.Item{{DecisionID: "d1", Attempt: 1, StartedAt: now(i)}},
				SafetyCheckpointID: "s", RollbackCheckpointID: "r", ArchiveDir: "/a/" + id, CreatedAt: now(i)})
			if err != nil {
				t.Fatal(err)
			}
			if err := corrRepo.Add(ctx, c); err != nil {
				t.Fatal(err)
			}
			if err := corrRepo.Update(ctx, id, func(c *correction.Correction) error {
				if err := c.StartReexecution(); err != nil {
					return err
				}
				c.RecordReexecuted("d1")
				return c.Finish(rng.IntN(2) == 0, now(i+2))
			}); err != nil {
				t.Fatal(err)
			}
		case 7: // a failed checkpoint is counted
			if err := metrics.RecordCheckpointFailure(ctx, now(i), "disk full"); err != nil {
				t.Fatal(err)
			}
		case 8: // a unit of work that fails leaves neither rows nor a record
			before, _ := recs.Committed()
			boom := errors.New("boom")
			err := NewTransactor(db).Do(ctx, func(ctx context.Context) error {
				c, _ := checkpoint.New(checkpoint.Params{ID: fmt.Sprintf("%016x%08x", i, 1), Type: checkpoint.Manual, CreatedAt: now(i), Root: tree.Sum(nil)})
				if err := cpRepo.Add(ctx, c); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatal(err)
			}
			after, _ := recs.Committed()
			pending, _ := recs.Pending()
			if len(after) != len(before) || len(pending) != 0 {
				t.Fatalf("a rolled back transaction left records: %d → %d committed, %v pending", len(before), len(after), pending)
			}
		case 9: // a crash between the commit and the record's rename, or before the commit
			if rng.IntN(2) == 0 {
				lossy, err := open(false, lossyLedger{recs})
				if err != nil {
					t.Fatal(err)
				}
				if err := NewMetrics(lossy).RecordCheckpointFailure(ctx, now(i), "lost rename"); err != nil {
					t.Fatal(err)
				}
				_ = lossy.Close()
			} else if _, err := recs.Prepare(1<<40+uint64(i), []byte(`{"format":1,"changes":[{"kind":"checkpoint","key":"ghost","deleted":true}]}`)); err != nil {
				t.Fatal(err)
			}
			_ = db.Close()
			if db, err = open(false, recs); err != nil {
				t.Fatal(err)
			}
			if p, _ := recs.Pending(); len(p) != 0 {
				t.Fatalf("open left pending records: %v", p)
			}
		case 10: // compaction, or one a crash cut short after its baseline (old records left)
			before, _ := recs.Committed()
			if rng.IntN(2) == 0 {
				removed, err := db.Compact(ctx)
				if err != nil || removed != len(before) {
					t.Fatalf("compact removed %d of %d: %v", removed, len(before), err)
				}
				if after, _ := recs.Committed(); len(after) != 1 {
					t.Fatalf("after compaction: %d records", len(after))
				}
			} else if _, err := db.writeBaseline(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if rng.IntN(40) != 0 && i != 399 {
			continue
		}
		// Lose the database (on PostgreSQL, the workspace's rows), rebuild it, compare.
		want := dump(t, db)
		wantWorkspaces := workspaceRows(t, db)
		var rep RebuildReport
		if e.name == "sqlite" {
			_ = db.Close()
			for _, s := range []string{"", "-wal", "-shm"} {
				_ = os.Remove(path + s)
			}
			rep, err = Rebuild(ctx, path, recs)
		} else {
			for _, tb := range []string{"checkpoints", "plans", "history", "corrections"} {
				if err := db.gorm.Exec(`DELETE FROM `+tb+` WHERE workspace_id = ?`, db.WorkspaceID()).Error; err != nil {
					t.Fatal(err)
				}
			}
			rep, err = db.RebuildWorkspace(ctx, recs)
			_ = db.Close()
		}
		if err != nil {
			t.Fatalf("op %d: rebuild: %v", i, err)
		}
		if db, err = open(false, recs); err != nil {
			t.Fatal(err)
		}
		if d := diffDumps(want, dump(t, db)); d != "" {
			t.Fatalf("op %d: the rebuilt database differs:\n%s", i, d)
		}
		if got := workspaceRows(t, db); !reflect.DeepEqual(got, wantWorkspaces) {
			t.Fatalf("op %d: workspaces %v, then %v", i, wantWorkspaces, got)
		}
		if rep.Checkpoints != countOf(want["checkpoints"], db.WorkspaceID()) || rep.Plans != countOf(want["plans"], db.WorkspaceID()) ||
			rep.Decisions != countOf(want["decisions"], db.WorkspaceID()) || rep.Corrections != countOf(want["corrections"], db.WorkspaceID()) {
			t.Fatalf("op %d: report %+v", i, rep)
		}
		rebuilds++
	}
	if rebuilds < 5 {
		t.Fatalf("only %d rebuilds", rebuilds)
	}
}

// A database from before records existed is recorded whole the first time a ledger is attached,
// so a rebuild brings back what was there before.
func TestBaselineRecordsAnOlderDatabase(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		dir := t.TempDir()
		path, opts := e.new(t)
		old, err := Open(ctx, path, true, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range []string{id1, id2, id3} {
			if err := NewCheckpoints(old).Add(ctx, newCP(t, id, time.Unix(int64(i), 0))); err != nil {
				t.Fatal(err)
			}
		}
		if err := NewMetrics(old).RecordCheckpointFailure(ctx, time.Unix(9, 0), "x"); err != nil {
			t.Fatal(err)
		}
		if err := old.RegisterWorkspace(ctx, WorkspaceInfo{Root: "/w", Host: "h", CreatedAt: time.Unix(5, 0)}); err != nil {
			t.Fatal(err)
		}
		ws := old.WorkspaceID()
		_ = old.Close()
		recs, err := objectstore.OpenRecords(filepath.Join(dir, "objects"))
		if err != nil {
			t.Fatal(err)
		}
		withLedger := append(append([]Option{}, opts...), WithLedger(recs))
		db, err := Open(ctx, path, false, withLedger...)
		if err != nil {
			t.Fatal(err)
		}
		want := dump(t, db)
		_ = db.Close()
		if names, _ := recs.Committed(); len(names) != 1 {
			t.Fatalf("baseline records: %v", names)
		}
		// Opening again writes no second baseline.
		db, _ = Open(ctx, path, false, withLedger...)
		_ = db.Close()
		if names, _ := recs.Committed(); len(names) != 1 {
			t.Fatalf("records after a second open: %v", names)
		}
		named := "" // SQLite: the records name the workspace
		if e.name == "postgres" {
			named = ws
		}
		_, rebuilt, err := e.rebuild(t, recs, named)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffDumps(want, dump(t, rebuilt)); d != "" {
			t.Fatalf("rebuilt baseline differs:\n%s", d)
		}
		// The baseline holds the workspace's own row: where it is survives the rebuild.
		w, err := rebuilt.Workspaces(ctx)
		if err != nil || len(w) != 1 || w[0].Root != "/w" || w[0].Host != "h" || !w[0].CreatedAt.Equal(time.Unix(5, 0)) || w[0].Checkpoints != 3 {
			t.Fatalf("workspaces after the rebuild: %+v, %v", w, err)
		}
		if rebuilt.WorkspaceID() != ws {
			t.Fatalf("the rebuilt database is workspace %s, not %s", rebuilt.WorkspaceID(), ws)
		}
	})
}

// A database whose ledger names none of the store's records is behind the store (rows lost, or a
// backup from before records restored over a newer history): opening it must not write its stale
// state as a baseline, which would hide the newer records from every rebuild. Its ledger head
// stays behind (doctor reports it) and a rebuild from the records brings back what it lost.
func TestNoBaselineOverRecordsTheLedgerMisses(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		dir := t.TempDir()
		recs, err := objectstore.OpenRecords(filepath.Join(dir, "objects"))
		if err != nil {
			t.Fatal(err)
		}
		path, opts := e.new(t)
		withLedger := append(append([]Option{}, opts...), WithLedger(recs))
		db, err := Open(ctx, path, true, withLedger...)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range []string{id1, id2, id3} {
			if err := NewCheckpoints(db).Add(ctx, newCP(t, id, time.Unix(int64(i), 0))); err != nil {
				t.Fatal(err)
			}
		}
		want := dump(t, db)
		ws := db.WorkspaceID()
		// Two checkpoint rows and the whole ledger of the workspace are lost.
		for _, q := range []string{`DELETE FROM checkpoints WHERE id <> '` + id1 + `'`, `DELETE FROM ledger`} {
			if err := db.gorm.Exec(q).Error; err != nil {
				t.Fatal(err)
			}
		}
		_ = db.Close()
		before, _ := recs.Committed()
		if _, err = Open(ctx, path, false, withLedger...); !errors.Is(err, fault.ErrIntegrity) ||
			!strings.Contains(err.Error(), "behind the store") || !strings.Contains(err.Error(), "plan doctor --rebuild") {
			t.Fatalf("opening a database behind the store: %v; want an integrity refusal naming plan doctor --rebuild", err)
		}
		after, _ := recs.Committed()
		if len(after) != len(before) {
			t.Fatalf("opening a database behind the store: %d records became %d (want no baseline written)", len(before), len(after))
		}
		named := ""
		if e.name == "postgres" {
			named = ws
		}
		_, rebuilt, err := e.rebuild(t, recs, named)
		if err != nil {
			t.Fatal(err)
		}
		if cps, err := NewCheckpoints(rebuilt).List(ctx); err != nil || len(cps) != 3 {
			t.Fatalf("the rebuild brings back %d checkpoints, %v; want the 3 the records hold", len(cps), err)
		}
		if d := diffDumps(want, dump(t, rebuilt)); d != "" {
			t.Fatalf("rebuilt database differs from the one before the loss:\n%s", d)
		}
	})
}

// A damaged record stops the rebuild with an integrity error naming it, and leaves no database
// behind; a record from a newer plan is refused as a conflict.
func TestRebuildRefusesDamagedRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	recs, err := objectstore.OpenRecords(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, filepath.Join(dir, "plan.db"), true, WithLedger(recs))
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{id1, id2} {
		if err := NewCheckpoints(db).Add(ctx, newCP(t, id, time.Unix(int64(i), 0))); err != nil {
			t.Fatal(err)
		}
	}
	_ = db.Close()
	names, _ := recs.Committed()
	p := filepath.Join(recs.Dir(), names[0])
	b, _ := os.ReadFile(p)
	b[10] ^= 0x20
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "rebuilt.db")
	if _, err := Rebuild(ctx, out, recs); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), names[0]) {
		t.Fatalf("damaged record: %v", err)
	}

	// Well-formed records that cannot apply: an unknown kind, an unknown column, a newer format.
	for _, body := range []string{
		`{"format":1,"seq":1,"schema":5,"changes":[{"kind":"spaceship","key":"x"}]}`,
		`{"format":1,"seq":1,"schema":5,"changes":[{"kind":"checkpoint","key":"x","rows":{"checkpoints":[{"id":"x","evil; DROP TABLE x":1}]}}]}`,
		`{"format":2,"seq":1,"schema":5,"changes":[]}`,
		`not json`,
	} {
		d2 := t.TempDir()
		r2, _ := objectstore.OpenRecords(d2)
		n, _ := r2.Prepare(1, []byte(body))
		if err := r2.Commit(n); err != nil {
			t.Fatal(err)
		}
		_, err := Rebuild(ctx, filepath.Join(d2, "plan.db"), r2)
		if err == nil || (!errors.Is(err, fault.ErrIntegrity) && !errors.Is(err, fault.ErrConflict)) {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// Open compacts a long ledger into one baseline, after which a rebuild still gives the same
// database; it never compacts a database that is behind the store (restored from an older
// backup), whose stale state would otherwise replace the newer records.
func TestOpenCompactsALongLedger(t *testing.T) {
	was := defaultCompactAfter
	defaultCompactAfter = 5
	t.Cleanup(func() { defaultCompactAfter = was })
	ctx := context.Background()
	dir := t.TempDir()
	recs, err := objectstore.OpenRecords(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "plan.db")
	db, err := Open(ctx, path, true, WithLedger(recs))
	if err != nil {
		t.Fatal(err)
	}
	add := func(db *DB, i int) {
		t.Helper()
		if err := NewCheckpoints(db).Add(ctx, newCP(t, fmt.Sprintf("%024x", i+1), time.Unix(int64(i), 0))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		add(db, i)
	}
	_ = db.Close()
	// A backup of the database as it is now: behind what follows.
	backup, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	db, _ = Open(ctx, path, false, WithLedger(recs))
	for i := 4; i < 9; i++ {
		add(db, i)
	}
	want := dump(t, db)
	_ = db.Close()
	if names, _ := recs.Committed(); len(names) != 9 {
		t.Fatalf("%d records before the open that compacts", len(names))
	}

	// The stale backup: Open must not compact it.
	stale := filepath.Join(dir, "stale.db")
	if err := os.WriteFile(stale, backup, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, stale, false, WithLedger(recs)); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a stale database opened: %v", err)
	}
	if names, _ := recs.Committed(); len(names) != 9 {
		t.Fatalf("a stale database compacted the ledger: %d records", len(names))
	}

	db, err = Open(ctx, path, false, WithLedger(recs))
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if names, _ := recs.Committed(); len(names) != 1 {
		t.Fatalf("%d records after compaction", len(names))
	}
	rebuilt := filepath.Join(dir, "rebuilt.db")
	if _, err := Rebuild(ctx, rebuilt, recs); err != nil {
		t.Fatal(err)
	}
	rdb, _ := Open(ctx, rebuilt, false)
	defer func() { _ = rdb.Close() }()
	got := dump(t, rdb)
	delete(want, "ledger") // the baseline is a newer transaction than any the database saw
	delete(got, "ledger")
	if d := diffDumps(want, got); d != "" {
		t.Fatalf("rebuilt after compaction:\n%s", d)
	}
}

// Records written before plans were recorded row by row hold a whole plan in one change (kind
// "plan"); a rebuild still replays them.
func TestRebuildReplaysWholePlanRecords(t *testing.T) {
	ctx := context.Background()
	src := openTestDB(t)
	p, err := plan.New("0123456789abcdef01234567", "old", "plan.yaml", true, time.Unix(5, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Define([]plan.Definition{{ID: "a", Run: "x"}, {ID: "b", Run: "y"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Start("a", "", "logs/a.1.log", time.Unix(6, 0)); err != nil {
		t.Fatal(err)
	}
	if err := NewPlans(src).Save(ctx, p); err != nil {
		t.Fatal(err)
	}
	var c change
	err = src.gorm.Transaction(func(tx *gorm.DB) error {
		var err error
		c, err = image(tx, aggregate{"plan", p.ID()}, src.WorkspaceID())
		return err
	})
	if err != nil || len(c.Rows["decisions"]) != 2 || len(c.Rows["attempts"]) != 1 {
		t.Fatalf("whole-plan image: %+v, %v", c, err)
	}
	body, _ := json.Marshal(record{Format: recordFormat, Seq: 1, Schema: 5, Changes: []change{c}})
	recs, _ := objectstore.OpenRecords(t.TempDir())
	name, _ := recs.Prepare(1, body)
	if err := recs.Commit(name); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "plan.db")
	if _, err := Rebuild(ctx, path, recs); err != nil {
		t.Fatal(err)
	}
	db, _ := Open(ctx, path, false)
	defer func() { _ = db.Close() }()
	got, err := NewPlans(db).ByName(ctx, "old")
	if err != nil || len(got.Decisions()) != 2 {
		t.Fatalf("%v, %v", got, err)
	}
	if a, ran := got.Decisions()[0].Latest(); !ran || a.Status != plan.Running || a.LogPath != "logs/a.1.log" {
		t.Fatalf("attempt %+v", a)
	}
}
