package persistence

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
)

// A database that missed recorded transactions is behind by identity: a write made after them
// (whose number comes after the store's newest) does not hide the names it never saw, and Open
// refuses it, naming `plan doctor --rebuild`, before it settles or writes anything.
func TestUnseenIsByIdentityNotByCount(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		f := newLedgerFixtureOn(t, e, 4)
		committed, _ := f.names(t)
		if unseen, err := f.db.Unseen(ctx, committed); err != nil || len(unseen) != 0 {
			t.Fatalf("a database that saw every record: unseen %v, %v", unseen, err)
		}
		// The newest two transactions are lost (an older backup, rows lost), and a later write
		// by an older plan (one that compared counts) took the number after the store's newest.
		lost := committed[len(committed)-2:]
		if err := f.db.gorm.Exec(`DELETE FROM ledger WHERE workspace_id = ? AND name IN ?`, f.db.workspace, lost).Error; err != nil {
			t.Fatal(err)
		}
		newer := "00000000000000ff-0123"
		if err := f.db.gorm.Exec(`INSERT INTO ledger(workspace_id, seq, name, at) VALUES (?, 255, ?, 0)`, f.db.workspace, newer).Error; err != nil {
			t.Fatal(err)
		}
		unseen, err := f.db.Unseen(ctx, append(slices.Clone(committed), newer))
		if err != nil || !slices.Equal(unseen, lost) {
			t.Fatalf("unseen %v, %v; want the lost %v", unseen, err, lost)
		}
		_, pendingBefore := f.names(t)
		_, err = f.open(false, f.l)
		if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "behind the store") ||
			!strings.Contains(err.Error(), "plan doctor --rebuild") || !strings.Contains(err.Error(), ShortRecord(lost[1])) {
			t.Fatalf("open of a database behind the store: %v", err)
		}
		if _, pending := f.names(t); !slices.Equal(pending, pendingBefore) {
			t.Fatalf("a refused open settled pending records: %v became %v", pendingBefore, pending)
		}
	})
}

// Records older than the oldest the database names are the ones a baseline made redundant (a
// compaction removes their rows first, their files after): they are not missing.
func TestUnseenSkipsRecordsBeforeTheDatabasesBaseline(t *testing.T) {
	ctx := context.Background()
	f := newLedgerFixture(t, 3)
	committed, _ := f.names(t)
	if err := f.db.gorm.Exec(`DELETE FROM ledger WHERE seq < 3`).Error; err != nil {
		t.Fatal(err)
	}
	if unseen, err := f.db.Unseen(ctx, committed); err != nil || len(unseen) != 0 {
		t.Fatalf("records before the oldest the database names: unseen %v, %v", unseen, err)
	}
	// A ledger that names nothing has seen nothing.
	if err := f.db.gorm.Exec(`DELETE FROM ledger`).Error; err != nil {
		t.Fatal(err)
	}
	if unseen, err := f.db.Unseen(ctx, committed); err != nil || !slices.Equal(unseen, committed) {
		t.Fatalf("an empty ledger: unseen %v, %v", unseen, err)
	}
	if unseen, err := f.db.Unseen(ctx, nil); err != nil || unseen != nil {
		t.Fatalf("no records: %v, %v", unseen, err)
	}
	if _, err := f.db.Unseen(ctx, []string{"short"}); err == nil {
		t.Fatal("a malformed record name was compared")
	}
	any, err := Open(ctx, f.path, false, WithoutWorkspace())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = any.Close() }()
	if _, err := any.Unseen(ctx, committed); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("a handle without a workspace: %v", err)
	}
	if err := f.db.gorm.Exec(`DROP TABLE ledger`).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Unseen(ctx, committed); err == nil {
		t.Fatal("an unreadable ledger table was compared")
	}
}

// A transaction whose row committed but whose record was still pending when the rebuild took the
// lock (its writer had not renamed it yet) is part of the history: RebuildWorkspace commits the
// record and replays it, instead of deleting the row and leaving the record to come later.
func TestRebuildWorkspaceCommitsRecordsTheLedgerNames(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		f := newLedgerFixtureOn(t, e, 2)
		f.l.commit = true // the next record stays pending, its row committed
		f.add(t, fixtureID(2), nil)
		f.l.commit = false
		if _, pending := f.names(t); len(pending) != 1 {
			t.Fatalf("pending %v, want the one whose rename failed", pending)
		}
		rep, err := f.db.RebuildWorkspace(ctx, f.recs)
		if err != nil || rep.Checkpoints != 3 || rep.Pending != 0 || rep.Records != 3 {
			t.Fatalf("rebuild: %+v, %v; want 3 checkpoints from 3 records, none left pending", rep, err)
		}
		if committed, pending := f.names(t); len(committed) != 3 || len(pending) != 0 {
			t.Fatalf("records committed %v, pending %v", committed, pending)
		}
		// One the ledger does not name (a transaction a crash cut short) is left out and counted.
		if _, err := f.recs.Prepare(99, []byte("{}")); err != nil {
			t.Fatal(err)
		}
		if rep, err := f.db.RebuildWorkspace(ctx, f.recs); err != nil || rep.Pending != 1 || rep.Checkpoints != 3 {
			t.Fatalf("rebuild beside a cut-short record: %+v, %v", rep, err)
		}
		f.l.commit = true
		if err := f.db.gorm.Exec(`INSERT INTO ledger(workspace_id, seq, name, at) VALUES (?, 99, ?, 0)`, f.db.workspace, pendingName(t, f)).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := f.db.RebuildWorkspace(ctx, f.l); !errors.Is(err, errInjected) {
			t.Fatalf("a record that cannot be committed: %v", err)
		}
		f.l.commit, f.l.pending = false, true
		if _, err := f.db.RebuildWorkspace(ctx, f.l); !errors.Is(err, errInjected) {
			t.Fatalf("pending records that cannot be listed: %v", err)
		}
		f.l.pending, f.l.committed = false, true
		if _, err := f.db.RebuildWorkspace(ctx, f.l); !errors.Is(err, errInjected) {
			t.Fatalf("committed records that cannot be listed: %v", err)
		}
		f.l.committed = false
		if err := f.db.gorm.Exec(`DROP TABLE ledger`).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := f.db.RebuildWorkspace(ctx, f.l); err == nil {
			t.Fatal("a pending record was settled against a ledger table that cannot be read")
		}
	})
}

func pendingName(t *testing.T, f *ledgerFixture) string {
	t.Helper()
	_, pending := f.names(t)
	if len(pending) != 1 {
		t.Fatalf("pending %v", pending)
	}
	return pending[0]
}

// A damaged page under schema_migrations makes the schema say anything: a version newer than this
// binary, or one that asks to create tables that exist. Open checks the file before it believes
// that: damage is fault.ErrIntegrity naming `plan doctor --rebuild`, never "upgrade plan" or an
// internal error; a healthy file that is really newer stays a conflict.
func TestOpenCallsADamagedSchemaPageDamage(t *testing.T) {
	f := newLedgerFixture(t, 5)
	var root, size int64
	if err := f.db.gorm.Raw(`SELECT rootpage FROM sqlite_master WHERE name = 'schema_migrations'`).Scan(&root).Error; err != nil {
		t.Fatal(err)
	}
	if err := f.db.gorm.Raw(`PRAGMA page_size`).Scan(&size).Error; err != nil {
		t.Fatal(err)
	}
	_ = f.db.Close()
	healthy, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, fill := range []byte{0xff, 0x7f, 0x01} {
		b := slices.Clone(healthy)
		for i := (root-1)*size + 100; i < root*size-100; i++ {
			b[i] = fill
		}
		if err := os.WriteFile(f.path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := f.open(false, nil)
		if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "plan doctor --rebuild") {
			t.Errorf("fill %#x: %v; want an integrity error naming plan doctor --rebuild", fill, err)
		}
	}
	if err := os.WriteFile(f.path, healthy, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := f.open(false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.gorm.Exec(`INSERT INTO schema_migrations(version, name, applied_at) VALUES (99, 'future', 0)`).Error; err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if _, err := f.open(false, nil); !errors.Is(err, fault.ErrConflict) || errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a healthy database from a newer plan: %v; want the conflict that says to upgrade", err)
	}
}

// Messages keep a long complaint to one line of about the asked length, and count in words.
func TestMessageHelpers(t *testing.T) {
	if got := firstWords("a\n  b\tc", 10); got != "a b c" {
		t.Fatalf("firstWords: %q", got)
	}
	if got := firstWords(strings.Repeat("x ", 200), 9); got != "x x x x x…" {
		t.Fatalf("firstWords cut: %q", got)
	}
	if plural(1, "record") != "1 record" || plural(2, "record") != "2 records" {
		t.Fatal("plural")
	}
	if ShortRecord("short") != "short" || len(ShortRecord(strings.Repeat("0", 80))) != 25 {
		t.Fatal("ShortRecord")
	}
}

// A checkpoint row deleted by hand leaves the ledger table whole (Unseen sees nothing): the
// records still hold the checkpoint, and LostCheckpoints names it.
func TestLostCheckpointsAreTheRecordsTheRowsLack(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		f := newLedgerFixtureOn(t, e, 3)
		if lost, err := f.db.LostCheckpoints(ctx, f.recs); err != nil || len(lost) != 0 {
			t.Fatalf("a whole database: lost %v, %v", lost, err)
		}
		if err := f.db.gorm.Exec(`DELETE FROM checkpoints WHERE workspace_id = ? AND id IN ?`, f.db.workspace,
			[]string{fixtureID(2), fixtureID(0)}).Error; err != nil {
			t.Fatal(err)
		}
		committed, _ := f.names(t)
		if unseen, err := f.db.Unseen(ctx, committed); err != nil || len(unseen) != 0 {
			t.Fatalf("unseen %v, %v: the ledger table is whole", unseen, err)
		}
		lost, err := f.db.LostCheckpoints(ctx, f.recs)
		if err != nil || !slices.Equal(lost, []string{fixtureID(0), fixtureID(2)}) {
			t.Fatalf("lost %v, %v", lost, err)
		}
		f.l.committed = true
		if _, err := f.db.LostCheckpoints(ctx, f.l); !errors.Is(err, errInjected) {
			t.Fatalf("records that cannot be listed: %v", err)
		}
		f.l.committed = false
		if err := f.db.gorm.Exec(`DROP TABLE attempts`).Error; err != nil {
			t.Fatal(err)
		}
		if err := f.db.gorm.Exec(`DROP TABLE checkpoints`).Error; err != nil {
			t.Fatal(err)
		}
		if _, err := f.db.LostCheckpoints(ctx, f.l); err == nil {
			t.Fatal("a checkpoints table that cannot be read was compared")
		}
	})
}

func TestLostCheckpointsNeedsAWorkspace(t *testing.T) {
	f := newLedgerFixture(t, 1)
	any, err := Open(context.Background(), f.path, false, WithoutWorkspace())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = any.Close() }()
	if _, err := any.LostCheckpoints(context.Background(), f.recs); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("a handle without a workspace: %v", err)
	}
}

// A write through a handle whose SQLite file was replaced meanwhile (a rebuild renamed a new one
// into place) goes to the new file, not to the old one, whose record the new one would lack.
func TestAWriteFollowsAReplacedFile(t *testing.T) {
	ctx := context.Background()
	f := newLedgerFixture(t, 2)
	tmp := f.path + ".rebuild"
	if _, err := Rebuild(ctx, tmp, f.recs); err != nil {
		t.Fatal(err)
	}
	// As maintenance.Rebuild does: the old file and its -wal and -shm aside, the new one in place.
	for _, s := range []string{"", "-wal", "-shm"} {
		if err := os.Rename(f.path+s, f.path+".aside"+s); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(tmp, f.path); err != nil {
		t.Fatal(err)
	}
	f.add(t, fixtureID(2), nil) // through the handle opened before the rebuild
	db, err := f.open(false, f.l)
	if err != nil {
		t.Fatalf("the database after a write through the old handle: %v", err)
	}
	defer func() { _ = db.Close() }()
	if cps, err := NewCheckpoints(db).List(ctx); err != nil || len(cps) != 3 {
		t.Fatalf("the file in place holds %d checkpoints, %v; want the 3 written", len(cps), err)
	}

	// A missing file is not followed: the write reaches the records (and the open file).
	for _, s := range []string{"", "-wal", "-shm"} {
		_ = os.Remove(f.path + s)
	}
	f.add(t, fixtureID(3), nil)
	if committed, _ := f.names(t); len(committed) != 4 {
		t.Fatalf("%d records after a write with the file deleted", len(committed))
	}

	// A file in its place that cannot be used, or that is another workspace's, is refused.
	if err := os.WriteFile(f.path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := NewCheckpoints(f.db).Add(ctx, newCP(t, fixtureID(4), time.Unix(9, 0))); !errors.Is(err, fault.ErrIntegrity) ||
		!strings.Contains(err.Error(), "was replaced while this command ran") {
		t.Fatalf("a write after an empty file took its place: %v", err)
	}
	_ = os.Remove(f.path)
	if _, err := Rebuild(ctx, f.path, f.recs, WithWorkspace(ident.New(time.Now()))); err != nil {
		t.Fatal(err)
	}
	if err := NewCheckpoints(f.db).Add(ctx, newCP(t, fixtureID(4), time.Unix(9, 0))); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("a write after another workspace's database took its place: %v", err)
	}
}

// A row that is no committed record (one still pending) does not make up for a record that is no
// row: Unseen compares names, not counts. A ledger row that cannot be read is an error, never
// a row skipped.
func TestUnseenComparesNamesNotCounts(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		f := newLedgerFixtureOn(t, e, 3)
		committed, _ := f.names(t)
		lost := committed[1]
		if err := f.db.gorm.Exec(`DELETE FROM ledger WHERE workspace_id = ? AND name = ?`, f.db.workspace, lost).Error; err != nil {
			t.Fatal(err)
		}
		pending := "00000000000000f0-" + strings.Repeat("a", 64)
		if err := f.db.gorm.Exec(`INSERT INTO ledger(workspace_id, seq, name, at) VALUES (?, 240, ?, 0)`, f.db.workspace, pending).Error; err != nil {
			t.Fatal(err)
		}
		if unseen, err := f.db.Unseen(ctx, committed); err != nil || !slices.Equal(unseen, []string{lost}) {
			t.Fatalf("unseen %v, %v; want %v", unseen, err, lost)
		}
	})
	ctx := context.Background()
	f := newLedgerFixture(t, 1)
	committed, _ := f.names(t)
	if err := f.db.gorm.Exec(`INSERT INTO ledger(workspace_id, seq, name, at) VALUES (?, 'not a number', 'x', 0)`, f.db.workspace).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Unseen(ctx, committed); err == nil || !strings.Contains(err.Error(), "read the ledger") {
		t.Fatalf("a row whose number cannot be read: %v", err)
	}
}

// The listings scanned row by row fail as gorm's did: a handle without a workspace lists nothing
// (fault.ErrInvalid), and a table that cannot be read is an error, never an empty listing.
func TestScannedListingsFail(t *testing.T) {
	ctx := context.Background()
	f := newLedgerFixture(t, 1)
	any, err := Open(ctx, f.path, false, WithoutWorkspace())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = any.Close() }()
	if _, err := NewCheckpoints(any).IDs(ctx); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("IDs without a workspace: %v", err)
	}
	if _, err := NewCheckpoints(any).List(ctx); !errors.Is(err, fault.ErrInvalid) {
		t.Fatalf("List without a workspace: %v", err)
	}
	if err := f.db.gorm.Exec(`UPDATE checkpoints SET created_at = 'not a time'`).Error; err != nil {
		t.Fatal(err)
	}
	if cps, err := NewCheckpoints(f.db).List(ctx); err == nil || !strings.Contains(err.Error(), "list checkpoints") {
		t.Fatalf("a row that cannot be read: %v, %v", cps, err)
	}
}
