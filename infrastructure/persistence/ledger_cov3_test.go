package persistence

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
)

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
	if !workspaceID.MatchString(db.WorkspaceID()) {
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
