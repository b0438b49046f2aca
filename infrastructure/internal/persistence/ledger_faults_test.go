package persistence

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

var errInjected = errors.New("injected ledger failure")

// faultyLedger is a real record directory whose operations fail on demand, the way a full disk, a
// read-only mount or an unreadable file makes them fail.
type faultyLedger struct {
	*objectstore.Records
	prepare, commit, discard, pending, committed, remove bool
	// pendingOK lets this many Pending calls succeed before pending takes effect.
	pendingOK int
	// readFails names the records whose Read fails; removes counts Remove calls that went through.
	readFails map[string]bool
	removes   int
	// removeAfter lets this many Remove calls succeed before remove takes effect.
	removeAfter int
}

func (f *faultyLedger) Prepare(seq uint64, body []byte) (string, error) {
	if f.prepare {
		return "", errInjected
	}
	return f.Records.Prepare(seq, body)
}

func (f *faultyLedger) Commit(name string) error {
	if f.commit {
		return errInjected
	}
	return f.Records.Commit(name)
}

func (f *faultyLedger) Discard(name string) error {
	if f.discard {
		return errInjected
	}
	return f.Records.Discard(name)
}

func (f *faultyLedger) Pending() ([]string, error) {
	if f.pending && f.pendingOK == 0 {
		return nil, errInjected
	}
	if f.pendingOK > 0 {
		f.pendingOK--
	}
	return f.Records.Pending()
}

func (f *faultyLedger) Committed() ([]string, error) {
	if f.committed {
		return nil, errInjected
	}
	return f.Records.Committed()
}

func (f *faultyLedger) Read(name string) ([]byte, error) {
	if f.readFails[name] {
		return nil, errInjected
	}
	return f.Records.Read(name)
}

func (f *faultyLedger) Remove(name string) error {
	if f.remove && f.removes >= f.removeAfter {
		return errInjected
	}
	f.removes++
	return f.Records.Remove(name)
}

type ledgerFixture struct {
	e   engine
	dir string
	// target and opts open the fixture's database (path is target on SQLite).
	target, path string
	opts         []Option
	recs         *objectstore.Records
	l            *faultyLedger
	db           *DB
}

// newLedgerFixture opens a new SQLite database that records to a faultyLedger, with n checkpoints
// added.
func newLedgerFixture(t *testing.T, n int) *ledgerFixture {
	return newLedgerFixtureOn(t, engines[0], n)
}

// newLedgerFixtureOn is newLedgerFixture on engine e.
func newLedgerFixtureOn(t *testing.T, e engine, n int) *ledgerFixture {
	t.Helper()
	f := &ledgerFixture{e: e, dir: t.TempDir()}
	f.target, f.opts = e.new(t)
	f.path = f.target
	var err error
	if f.recs, err = objectstore.OpenRecords(filepath.Join(f.dir, "objects")); err != nil {
		t.Fatal(err)
	}
	f.l = &faultyLedger{Records: f.recs}
	if f.db, err = f.open(true, f.l); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.db.Close() })
	for i := range n {
		f.add(t, fixtureID(i), nil)
	}
	return f
}

// open opens the fixture's database again, recording to l (none when nil).
func (f *ledgerFixture) open(create bool, l Ledger) (*DB, error) {
	opts := f.opts
	if l != nil {
		opts = append(append([]Option{}, opts...), WithLedger(l))
	}
	return Open(context.Background(), f.target, create, opts...)
}

// fixtureID is the i-th (i < 6) checkpoint ID of a fixture.
func fixtureID(i int) string { return strings.Repeat("0", 20) + string(rune('a'+i)) + "abc" }

func (f *ledgerFixture) add(t *testing.T, id string, labels map[string]string) {
	t.Helper()
	c := newCP(t, id, time.Unix(int64(len(id)), 0), func(p *checkpoint.Params) { p.Labels = labels })
	if err := NewCheckpoints(f.db).Add(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

func (f *ledgerFixture) names(t *testing.T) (committed, pending []string) {
	t.Helper()
	c, err := f.recs.Committed()
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.recs.Pending()
	if err != nil {
		t.Fatal(err)
	}
	return c, p
}

// rebuildMatches rebuilds a database from the records alone and fails unless it equals want.
func (f *ledgerFixture) rebuildMatches(t *testing.T, want map[string][]map[string]any) {
	t.Helper()
	_, db, err := f.e.rebuild(t, f.recs, f.db.WorkspaceID())
	if err != nil {
		t.Fatal(err)
	}
	if d := diffDumps(want, dump(t, db)); d != "" {
		t.Fatalf("the rebuilt database differs:\n%s", d)
	}
}

// A record that cannot be written fails the transaction: the database does not hold a change the
// records do not, so a rebuild can never lose it.
func TestRecordPrepareFailureRollsBackTheTransaction(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		f := newLedgerFixtureOn(t, e, 1)
		f.l.prepare = true
		c := newCP(t, id2, time.Unix(2, 0))
		err := NewCheckpoints(f.db).Add(ctx, c)
		if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "write the record") {
			t.Fatalf("add with an unwritable record: %v", err)
		}
		if _, err := NewCheckpoints(f.db).Get(ctx, checkpoint.ID(id2)); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("the change stayed in the database: %v", err)
		}
		if head, err := f.db.LedgerHead(ctx); err != nil || head != 1 {
			t.Fatalf("ledger head %d: %v", head, err)
		}
		committed, pending := f.names(t)
		if len(committed) != 1 || len(pending) != 0 {
			t.Fatalf("records %v, pending %v", committed, pending)
		}
		f.rebuildMatches(t, dump(t, f.db))
	})
}

// When noting the record in the ledger table fails, the transaction rolls back and its prepared
// record is discarded: no record of a transaction that never happened.
func TestRecordNoteFailureDiscardsTheRecord(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		f := newLedgerFixtureOn(t, e, 1)
		failWrites(t, f.db, "INSERT", "ledger")
		if err := NewCheckpoints(f.db).Add(ctx, newCP(t, id2, time.Unix(2, 0))); err == nil || !strings.Contains(err.Error(), "note record") {
			t.Fatalf("add with a refused ledger row: %v", err)
		}
		if _, err := NewCheckpoints(f.db).Get(ctx, checkpoint.ID(id2)); !errors.Is(err, fault.ErrNotFound) {
			t.Fatalf("the change stayed in the database: %v", err)
		}
		committed, pending := f.names(t)
		if len(committed) != 1 || len(pending) != 0 {
			t.Fatalf("records %v, pending %v", committed, pending)
		}
	})
}

// A failed transaction leaves no record; a failed write of the database itself (not the record)
// is reported as such.
func TestFailedTransactionDiscardsItsRecord(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		f := newLedgerFixtureOn(t, e, 1)
		failWrites(t, f.db, "INSERT", "checkpoints")
		if err := NewCheckpoints(f.db).Add(ctx, newCP(t, id2, time.Unix(2, 0))); err == nil {
			t.Fatal("a refused insert succeeded")
		}
		committed, pending := f.names(t)
		if len(committed) != 1 || len(pending) != 0 {
			t.Fatalf("records %v, pending %v", committed, pending)
		}
	})
}

// The record's rename out of pending/ failing after the database committed does not undo the
// operation: the next open commits the record, since the ledger table names it, and a rebuild
// then has everything.
func TestRecordCommitFailureIsSettledByTheNextOpen(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		f := newLedgerFixtureOn(t, e, 1)
		f.l.commit = true
		if err := NewCheckpoints(f.db).Add(ctx, newCP(t, id2, time.Unix(2, 0))); err != nil {
			t.Fatalf("the operation must stand: %v", err)
		}
		committed, pending := f.names(t)
		if len(committed) != 1 || len(pending) != 1 {
			t.Fatalf("records %v, pending %v", committed, pending)
		}
		settled := pending[0]
		// A pending record no transaction committed: a crash between Prepare and the database commit.
		orphan, err := f.recs.Prepare(1<<40, []byte(`{"format":1,"changes":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		want := dump(t, f.db)
		_ = f.db.Close()

		// Settling fails while the ledger cannot commit: the open fails and loses nothing.
		if _, err := f.open(false, f.l); !errors.Is(err, errInjected) {
			t.Fatalf("open with an uncommittable record: %v", err)
		}
		if _, p := f.names(t); len(p) != 2 {
			t.Fatalf("a failed settle lost pending records: %v", p)
		}

		f.l.commit = false
		db, err := f.open(false, f.l)
		if err != nil {
			t.Fatal(err)
		}
		f.db = db
		committed, pending = f.names(t)
		// The settled record is committed; the orphan is discarded, not committed.
		if len(committed) != 2 || len(pending) != 0 || committed[1] != settled {
			t.Fatalf("after settling %s (orphan %s): records %v, pending %v", settled, orphan, committed, pending)
		}
		f.rebuildMatches(t, want)
	})
}

// A ledger that cannot be listed stops Open: the database is not used while what it holds and
// what the records hold may disagree.
func TestOpenFailsWhenTheLedgerCannotBeListed(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		for _, which := range []string{"committed", "pending"} {
			t.Run(which, func(t *testing.T) {
				f := newLedgerFixtureOn(t, e, 1)
				_ = f.db.Close()
				if _, err := f.recs.Prepare(1<<40, []byte(`{}`)); err != nil {
					t.Fatal(err)
				}
				f.l.committed, f.l.pending = which == "committed", which == "pending"
				if _, err := f.open(false, f.l); !errors.Is(err, errInjected) {
					t.Fatalf("open: %v", err)
				}
				if _, p := f.names(t); len(p) != 1 {
					t.Fatalf("pending records after a failed open: %v", p)
				}
			})
		}
	})
}

// LedgerHead is the number of the newest record the database has seen, the one `doctor` compares
// with the store to see a database restored from an older backup.
func TestLedgerHeadFollowsTheRecords(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		if head, err := e.open(t).LedgerHead(ctx); err != nil || head != 0 {
			t.Fatalf("without records: %d, %v", head, err)
		}
		f := newLedgerFixtureOn(t, e, 3)
		committed, _ := f.names(t)
		last, _ := objectstore.ParseRecordName(committed[len(committed)-1])
		if head, err := f.db.LedgerHead(ctx); err != nil || head != last || head != 3 {
			t.Fatalf("head %d, newest record %d: %v", head, last, err)
		}
		if err := f.db.gorm.Exec(`DROP TABLE ledger`).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := f.db.LedgerHead(ctx); err == nil {
			t.Fatal("an unreadable ledger table has a head")
		}
	})
}

// Compaction never loses history: whatever fails, a rebuild from the records left still equals the
// database, and a failure before the new baseline commits removes no record.
func TestCompactFailures(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		if _, err := e.open(t).Compact(ctx); !errors.Is(err, fault.ErrInvalid) {
			t.Fatalf("compact without records: %v", err)
		}

		t.Run("records cannot be listed", func(t *testing.T) {
			f := newLedgerFixtureOn(t, e, 3)
			f.l.committed = true
			if _, err := f.db.Compact(ctx); !errors.Is(err, errInjected) {
				t.Fatalf("compact: %v", err)
			}
			f.l.committed = false
			if c, _ := f.names(t); len(c) != 3 {
				t.Fatalf("records: %v", c)
			}
			f.rebuildMatches(t, dump(t, f.db))
		})
		t.Run("baseline cannot be written", func(t *testing.T) {
			f := newLedgerFixtureOn(t, e, 3)
			f.l.prepare = true
			if _, err := f.db.Compact(ctx); !errors.Is(err, errInjected) {
				t.Fatalf("compact: %v", err)
			}
			f.l.prepare = false
			if c, p := f.names(t); len(c) != 3 || len(p) != 0 {
				t.Fatalf("records %v, pending %v", c, p)
			}
			f.rebuildMatches(t, dump(t, f.db))
		})
		t.Run("ledger table cannot forget", func(t *testing.T) {
			f := newLedgerFixtureOn(t, e, 3)
			failWrites(t, f.db, "DELETE", "ledger")
			if _, err := f.db.Compact(ctx); err == nil {
				t.Fatal("compact succeeded without forgetting the old records")
			}
			// The baseline committed; the old records are redundant but still there.
			if c, _ := f.names(t); len(c) != 4 {
				t.Fatalf("records: %v", c)
			}
			f.rebuildMatches(t, dump(t, f.db))
		})
		t.Run("a removal fails part way", func(t *testing.T) {
			f := newLedgerFixtureOn(t, e, 3)
			f.l.remove, f.l.removeAfter = true, 1
			removed, err := f.db.Compact(ctx)
			if !errors.Is(err, errInjected) || removed != 1 {
				t.Fatalf("compact removed %d: %v", removed, err)
			}
			c, _ := f.names(t)
			if len(c) != 3 {
				t.Fatalf("records: %v", c)
			}
			f.rebuildMatches(t, dump(t, f.db))
			// Work goes on, and a later compaction finishes the job.
			f.add(t, id3, map[string]string{"k": "v"})
			f.l.remove = false
			if removed, err := f.db.Compact(ctx); err != nil || removed != 4 {
				t.Fatalf("second compact removed %d: %v", removed, err)
			}
			if c, _ := f.names(t); len(c) != 1 {
				t.Fatalf("records after compaction: %v", c)
			}
			f.rebuildMatches(t, dump(t, f.db))
		})
	})
}

// Rebuild reports a ledger it cannot list or read as an error, never as an empty or shorter
// history, and leaves nothing behind; rebuilt in place, the workspace is left as it was.
func TestRebuildLedgerFailures(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		f := newLedgerFixtureOn(t, e, 3)
		want := dump(t, f.db)
		committed, _ := f.names(t)
		for _, tc := range []struct {
			name  string
			setup func()
		}{
			{"committed", func() { f.l.committed = true }},
			{"pending", func() { f.l.pending = true }},
			{"newest record unreadable", func() { f.l.readFails = map[string]bool{committed[2]: true} }},
			{"first record unreadable", func() { f.l.readFails = map[string]bool{committed[0]: true} }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				*f.l = faultyLedger{Records: f.recs}
				tc.setup()
				rep, _, err := e.rebuild(t, f.l, f.db.WorkspaceID())
				if !errors.Is(err, errInjected) || rep.Records != 0 {
					t.Fatalf("rebuild: %+v, %v", rep, err)
				}
				if _, err := f.db.RebuildWorkspace(ctx, f.l); !errors.Is(err, errInjected) {
					t.Fatalf("rebuild in place: %v", err)
				}
				if d := diffDumps(want, dump(t, f.db)); d != "" {
					t.Fatalf("a failed rebuild in place changed the workspace:\n%s", d)
				}
			})
		}
		if e.name != "sqlite" {
			return
		}
		t.Run("database cannot be created", func(t *testing.T) {
			blocker := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(blocker, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := Rebuild(ctx, filepath.Join(blocker, "plan.db"), f.recs); err == nil {
				t.Fatal("rebuilt under a file")
			}
		})
	})
}

// noDatabase fails unless a failed rebuild left nothing at path: a half-built database, which
// opens as a valid one holding less than the records, would mislead whoever finds it.
func noDatabase(t testing.TB, path string) {
	t.Helper()
	for _, s := range []string{"", "-wal", "-shm", "-journal"} {
		if _, err := os.Lstat(path + s); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a failed rebuild left %s%s behind (%v)", path, s, err)
		}
	}
}

// A database already at the path is never overwritten or removed by a rebuild.
func TestRebuildRefusesAnExistingDatabase(t *testing.T) {
	ctx := context.Background()
	f := newLedgerFixture(t, 2)
	want := dump(t, f.db)
	_, err := Rebuild(ctx, f.path, f.recs)
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), f.path) {
		t.Fatalf("rebuild over a database: %v", err)
	}
	if d := diffDumps(want, dump(t, f.db)); d != "" {
		t.Fatalf("the existing database changed:\n%s", d)
	}
}

// The newest baseline a rebuild starts from must be readable; a record after it whose header is
// damaged is an integrity error naming it, and two records with one number are too.
func TestRebuildRefusesBadRecordSequences(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bodies []string
		want   error
	}{
		{"newest record not json", []string{
			`{"format":1,"seq":1,"schema":1,"changes":[]}`, `{"format":1,"seq":2,"sch`,
		}, fault.ErrIntegrity},
		{"repeated number", []string{
			`{"format":1,"seq":1,"schema":1,"changes":[]}`, `{"format":1,"seq":1,"schema":1,"changes":[{"kind":"operation","key":"x","deleted":true}]}`,
		}, fault.ErrIntegrity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := objectstore.OpenRecords(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			var last string
			for i, b := range tc.bodies {
				n, err := recs.Prepare(uint64(i+1), []byte(b))
				if err != nil {
					t.Fatal(err)
				}
				if err := recs.Commit(n); err != nil {
					t.Fatal(err)
				}
				last = n
			}
			onEngines(t, func(t *testing.T, e engine) {
				if _, _, err := e.rebuild(t, recs, ""); !errors.Is(err, tc.want) || !strings.Contains(err.Error(), last) {
					t.Fatalf("rebuild: %v", err)
				}
			})
		})
	}
}

// Labels survive the database and its rebuild; damaged labels are an integrity error naming the
// checkpoint, never an empty set.
func TestCheckpointLabels(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		f := newLedgerFixtureOn(t, e, 0)
		labels := map[string]string{"team": "core", "ticket": "PLAN-9"}
		f.add(t, id1, labels)
		f.add(t, id2, nil)
		repo := NewCheckpoints(f.db)
		c, err := repo.Get(ctx, checkpoint.ID(id1))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Labels(); len(got) != 2 || got["team"] != "core" || got["ticket"] != "PLAN-9" {
			t.Fatalf("labels: %v", got)
		}
		f.rebuildMatches(t, dump(t, f.db))

		// A row written before labels existed holds "": no labels.
		if err := f.db.gorm.Exec(`UPDATE checkpoints SET labels = '' WHERE id = ?`, id2).Error; err != nil {
			t.Fatal(err)
		}
		if c, err := repo.Get(ctx, checkpoint.ID(id2)); err != nil || len(c.Labels()) != 0 {
			t.Fatalf("empty labels: %v", err)
		}
		if err := f.db.gorm.Exec(`UPDATE checkpoints SET labels = '{"team":' WHERE id = ?`, id1).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := repo.Get(ctx, checkpoint.ID(id1)); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), id1) {
			t.Fatalf("damaged labels: %v", err)
		}
	})
}

// A well-formed record whose rows the schema refuses (a number no column can hold, a required
// column missing) is an integrity error naming it, and no database is left.
func TestRebuildRefusesRowsTheSchemaRefuses(t *testing.T) {
	for name, row := range map[string]string{
		"number out of range":     `{"id":"x","type":"manual","created_at":1,"root_tree":"r","files":1e999}`,
		"required column missing": `{"id":"x","type":"manual","created_at":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			recs, err := objectstore.OpenRecords(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			body := `{"format":1,"seq":1,"schema":1,"changes":[{"kind":"checkpoint","key":"x","rows":{"checkpoints":[` + row + `]}}]}`
			n, err := recs.Prepare(1, []byte(body))
			if err != nil {
				t.Fatal(err)
			}
			if err := recs.Commit(n); err != nil {
				t.Fatal(err)
			}
			onEngines(t, func(t *testing.T, e engine) {
				if _, _, err := e.rebuild(t, recs, ""); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), n) {
					t.Fatalf("rebuild: %v", err)
				}
			})
		})
	}
}

// A transaction whose commit fails after its record was prepared and noted (here a deferred
// foreign key, checked only at commit; on a disk, an I/O error at commit) leaves no record, pending
// or committed: the records never hold a transaction the database does not.
func TestCommitFailureDiscardsThePreparedRecord(t *testing.T) {
	ctx := context.Background()
	f := newLedgerFixture(t, 1)
	err := f.db.write(ctx, "plan", "ghost", func(tx *gorm.DB) error {
		if err := tx.Exec(`PRAGMA defer_foreign_keys = ON`).Error; err != nil {
			return err
		}
		return tx.Exec(`INSERT INTO decisions(workspace_id, plan_id, id, position, run) VALUES (?, 'ghost', 'd', 0, 'true')`, f.db.WorkspaceID()).Error
	})
	if err == nil || !errors.Is(err, gorm.ErrForeignKeyViolated) {
		t.Fatalf("a commit that violates a foreign key: %v", err)
	}
	committed, pending := f.names(t)
	if len(committed) != 1 || len(pending) != 0 {
		t.Fatalf("records %v, pending %v", committed, pending)
	}
	if head, err := f.db.LedgerHead(ctx); err != nil || head != 1 {
		t.Fatalf("ledger head %d: %v", head, err)
	}
	f.rebuildMatches(t, dump(t, f.db))
}

// Settling a pending record at open fails safe: when the orphan cannot be discarded, or the
// pending list cannot be read again under the write lock, the open fails and the pending record is
// still there for the next one; once the ledger works, the orphan is discarded and not committed.
func TestReconcileFailuresKeepThePendingRecord(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		for name, fail := range map[string]func(*faultyLedger){
			"discard fails":                func(l *faultyLedger) { l.discard = true },
			"pending fails under the lock": func(l *faultyLedger) { l.pending, l.pendingOK = true, 1 },
		} {
			t.Run(name, func(t *testing.T) {
				f := newLedgerFixtureOn(t, e, 1)
				want := dump(t, f.db)
				_ = f.db.Close()
				orphan, err := f.recs.Prepare(1<<40, []byte(`{"format":1,"changes":[]}`))
				if err != nil {
					t.Fatal(err)
				}
				fail(f.l)
				if _, err := f.open(false, f.l); !errors.Is(err, errInjected) {
					t.Fatalf("open: %v", err)
				}
				if _, p := f.names(t); len(p) != 1 || p[0] != orphan {
					t.Fatalf("pending after a failed settle: %v", p)
				}
				*f.l = faultyLedger{Records: f.recs}
				db, err := f.open(false, f.l)
				if err != nil {
					t.Fatal(err)
				}
				f.db = db
				if c, p := f.names(t); len(c) != 1 || len(p) != 0 {
					t.Fatalf("records %v, pending %v", c, p)
				}
				if d := diffDumps(want, dump(t, db)); d != "" {
					t.Fatalf("the database changed:\n%s", d)
				}
			})
		}
	})
}

// A record whose rows cannot be applied (a key of the wrong shape, a number no column holds, a
// header of the wrong types) stops a rebuild with an integrity error naming the record, and leaves
// nothing behind: no file, no rows.
func TestRebuildRefusesRecordsItCannotApply(t *testing.T) {
	for _, tc := range []struct {
		name, body, says string
	}{
		{"key of the wrong shape", recordBody(2, `{"kind":"decision","key":"one-part","deleted":true}`), "has 1 parts, want 2"},
		{"number out of range", recordBody(2, `{"kind":"checkpoint","key":"c","rows":{"checkpoints":[{"id":"c","created_at":1e999}]}}`), "checkpoints.created_at"},
		{"header of the wrong types", `{"format":"one","seq":2,"changes":[]}`, "cannot be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := newRecords(t)
			commitRecord(t, recs, 1, recordBody(1, `{"kind":"operation","key":"x","deleted":true}`))
			bad := commitRecord(t, recs, 2, tc.body)
			onEngines(t, func(t *testing.T, e engine) {
				// e.rebuild fails the test if the failed rebuild left a file or rows behind.
				_, _, err := e.rebuild(t, recs, "")
				if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("rebuild: %v, want an integrity error naming %s and saying %q", err, bad, tc.says)
				}
			})
		})
	}
}

// A rebuild in place that fails part way (clearing the workspace's rows, or replaying a record)
// rolls back: the workspace holds exactly what it held before.
func TestRebuildWorkspaceFailureLeavesTheWorkspace(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		t.Run("clearing fails", func(t *testing.T) {
			f := newLedgerFixtureOn(t, e, 2)
			want := dump(t, f.db)
			failWrites(t, f.db, "DELETE", "checkpoints")
			_, err := f.db.RebuildWorkspace(ctx, f.recs)
			if err == nil || !strings.Contains(err.Error(), "clear checkpoints of workspace "+f.db.WorkspaceID()) {
				t.Fatalf("rebuild in place: %v", err)
			}
			if d := diffDumps(want, dump(t, f.db)); d != "" {
				t.Fatalf("a failed rebuild in place changed the workspace:\n%s", d)
			}
		})
		t.Run("replaying fails", func(t *testing.T) {
			f := newLedgerFixtureOn(t, e, 1)
			if err := NewCheckpoints(f.db).Delete(ctx, checkpoint.ID(fixtureID(0))); err != nil {
				t.Fatal(err)
			}
			committed, _ := f.names(t)
			last := committed[len(committed)-1]
			want := dump(t, f.db)
			// The workspace holds no row of the deleted checkpoint, so clearing passes; replaying
			// its deletion deletes the row the record before it made, and fails.
			failWrites(t, f.db, "DELETE", "checkpoints")
			_, err := f.db.RebuildWorkspace(ctx, f.recs)
			if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), last) {
				t.Fatalf("rebuild in place: %v, want an integrity error naming %s", err, last)
			}
			if d := diffDumps(want, dump(t, f.db)); d != "" {
				t.Fatalf("a failed rebuild in place changed the workspace:\n%s", d)
			}
		})
	})
}

// A store without records (a workspace whose database was lost before its first transaction)
// rebuilds into an empty database of a fresh workspace; a target Rebuild cannot make, or a
// malformed workspace ID, is refused before anything is created.
func TestRebuildEdges(t *testing.T) {
	ctx := context.Background()
	recs := newRecords(t)
	path := filepath.Join(t.TempDir(), "plan.db")
	rep, err := Rebuild(ctx, path, recs)
	if err != nil || rep != (RebuildReport{}) {
		t.Fatalf("rebuild from no records: %+v, %v", rep, err)
	}
	db := mustOpen(t, path, false)
	if !workspaceID.Match(db.WorkspaceID()) {
		t.Fatalf("the rebuilt database's workspace is %q", db.WorkspaceID())
	}
	if cps, err := NewCheckpoints(db).List(ctx); err != nil || len(cps) != 0 {
		t.Fatalf("checkpoints of a database rebuilt from no records: %v, %v", cps, err)
	}

	commitRecord(t, recs, 1, recordBody(1, `{"kind":"operation","key":"x","deleted":true}`))
	if _, err := Rebuild(ctx, "sqlite://relative/plan.db", recs); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("rebuild into a relative sqlite:// target: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "plan.db")
	if _, err := Rebuild(ctx, bad, recs, WithWorkspace("not a workspace ID")); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("rebuild for a malformed workspace ID: %v", err)
	}
	noDatabase(t, bad)
}

// When a transaction's record cannot be made (the ledger table is gone, an aggregate's key is of
// the wrong shape, its rows cannot be read), the transaction rolls back and no record is left,
// pending or committed.
func TestSealFailureWritesNothing(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		setup func(f *ledgerFixture)
		// also runs in the transaction after the checkpoint is added
		also func(ctx context.Context, f *ledgerFixture) error
		says string
	}{
		{"ledger table gone", func(f *ledgerFixture) { dropTable(t, f.db, "ledger") }, nil, "read the ledger"},
		{"key of the wrong shape", nil, func(ctx context.Context, f *ledgerFixture) error {
			return f.db.write(ctx, "decision", "one-part", func(*gorm.DB) error { return nil })
		}, "has 1 parts, want 2"},
		{"rows unreadable", nil, func(ctx context.Context, f *ledgerFixture) error {
			// The table is gone from under the transaction when its record is made.
			return f.db.write(ctx, "failure", "x", func(tx *gorm.DB) error {
				return tx.Exec(`ALTER TABLE checkpoint_failures RENAME TO checkpoint_failures_gone`).Error
			})
		}, "read failure x for its record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newLedgerFixture(t, 1)
			before, _ := f.names(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			c := newCP(t, id1, time.Unix(100, 0))
			err := NewTransactor(f.db).Do(ctx, func(ctx context.Context) error {
				if err := NewCheckpoints(f.db).Add(ctx, c); err != nil {
					return err
				}
				if tc.also != nil {
					return tc.also(ctx, f)
				}
				return nil
			})
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("transaction: %v, want it to say %q", err, tc.says)
			}
			if _, err := NewCheckpoints(f.db).Get(ctx, id1); !errors.Is(err, fault.ErrNotFound) {
				t.Fatalf("the checkpoint of the failed transaction: %v", err)
			}
			committed, pending := f.names(t)
			if len(committed) != len(before) || len(pending) != 0 {
				t.Fatalf("records %v (before %v), pending %v", committed, before, pending)
			}
		})
	}
}

// listingLedger lists names as its committed records, whatever it holds.
type listingLedger struct {
	*faultyLedger
	names []string
}

func (l listingLedger) Committed() ([]string, error) { return l.names, nil }

// A ledger that lists something that is not a record name is refused at Open: the database could
// not know which transaction numbers are taken.
func TestOpenRefusesAMalformedRecordName(t *testing.T) {
	l := listingLedger{faultyLedger: &faultyLedger{Records: newRecords(t)}, names: []string{"short"}}
	path := filepath.Join(t.TempDir(), "plan.db")
	_, err := Open(context.Background(), path, true, WithLedger(l))
	if err == nil || !strings.Contains(err.Error(), `"short" is not a record name`) {
		t.Fatalf("open with a malformed record name: %v", err)
	}
}

// A compaction whose baseline cannot read a table fails before it writes anything: the records are
// as they were, and still rebuild the database.
func TestCompactFailsWhenATableCannotBeRead(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		f := newLedgerFixtureOn(t, e, 3)
		want := dump(t, f.db)
		before, _ := f.names(t)
		dropTable(t, f.db, "operations")
		if _, err := f.db.Compact(context.Background()); err == nil || !strings.Contains(err.Error(), "read operations for the baseline record") {
			t.Fatalf("compact: %v", err)
		}
		committed, pending := f.names(t)
		if strings.Join(committed, ",") != strings.Join(before, ",") || len(pending) != 0 {
			t.Fatalf("records %v (before %v), pending %v", committed, before, pending)
		}
		if d := diffDumps(want, dump(t, f.db)); d != "" {
			t.Fatalf("a failed compaction changed the database:\n%s", d)
		}
	})
}

// A number a record holds in float form (2.4e10, as another JSON writer may put it) replays as the
// value it is: the rebuilt database equals the one the records were written from.
func TestRebuildReplaysNumbersInFloatForm(t *testing.T) {
	f := newLedgerFixture(t, 1)
	want := dump(t, f.db)
	committed, _ := f.names(t)
	recs := newRecords(t)
	for i, name := range committed {
		b, err := f.recs.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		body := string(b)
		if i == len(committed)-1 {
			// The fixture's checkpoint was created 24 s after the epoch.
			if !strings.Contains(body, `"created_at":24000000000`) {
				t.Fatalf("the checkpoint's record: %s", body)
			}
			body = strings.Replace(body, `"created_at":24000000000`, `"created_at":2.4e10`, 1)
		}
		seq, _ := recordSeq(name)
		commitRecord(t, recs, seq, body)
	}
	_, db, err := engines[0].rebuild(t, recs, f.db.WorkspaceID())
	if err != nil {
		t.Fatal(err)
	}
	got := dump(t, db)
	// The ledger rows name the records, whose bytes differ.
	delete(want, "ledger")
	delete(got, "ledger")
	if d := diffDumps(want, got); d != "" {
		t.Fatalf("the rebuilt database differs:\n%s", d)
	}
}
