package maintenance

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/fsx"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/persistence"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// RebuildResult says what Rebuild did.
type RebuildResult struct {
	// Rebuilt is false when the database was healthy and left alone.
	Rebuilt bool
	// Why is what was wrong with the database ("missing", "empty or incomplete", "damaged").
	Why string
	// KeptAside is where the unusable database was moved ("" when there was none).
	KeptAside string
	persistence.RebuildReport
}

// Rebuild makes the metadata database again from the store's records when it is missing, empty,
// incomplete or fails SQLite's integrity check; a healthy database is left alone. It holds the
// workspace lock. An unusable database file is never deleted: it (and its -wal and -shm files) is
// moved aside as plan.db.corrupt-<UTC time>. The new database is built under a temporary name and
// renamed into place, so a crash during the rebuild leaves no half-built plan.db (running it again
// starts over).
//
// A PostgreSQL database is rebuilt in place: in one transaction the workspace's rows are replaced
// by what its records say, other workspaces' rows untouched (see persistence.DB.RebuildWorkspace).
func Rebuild(ctx context.Context, t Target, now time.Time) (RebuildResult, error) {
	var res RebuildResult
	l := t.Layout
	unlock, err := workspace.NewLocker(l).Lock(ctx, "doctor --rebuild")
	if err != nil {
		return res, err
	}
	defer func() { _ = unlock() }()

	recs, err := t.OpenRecords(ctx)
	if err != nil {
		return res, err
	}
	file := t.fileDB()
	if file == "" {
		return rebuildInPlace(ctx, t, recs)
	}
	res.Why, err = databaseProblem(ctx, t, file, recs)
	if err != nil || res.Why == "" {
		return res, err
	}
	names, err := recs.Committed()
	if err != nil {
		return res, err
	}
	if len(names) == 0 && (t.Shared || l.StoreHolds("packs")) {
		return res, fault.Integrity("the store holds no records to rebuild %s from (it was written by a plan from before records were kept): restore plan.db from a backup", file)
	}
	var opts []persistence.Option
	if t.WorkspaceID != "" {
		opts = append(opts, persistence.WithWorkspace(t.WorkspaceID))
	}
	tmp := file + ".rebuild"
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if err := os.Remove(tmp + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return res, err
		}
	}
	rep, err := persistence.Rebuild(ctx, tmp, recs, opts...) // removes what it built when it fails
	if err != nil {
		return res, err
	}
	if _, err := os.Lstat(file); err == nil {
		res.KeptAside = fmt.Sprintf("%s.corrupt-%s", file, now.UTC().Format("20060102T150405Z"))
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		from := file + suffix
		if _, err := os.Lstat(from); err != nil {
			continue
		}
		if res.KeptAside == "" {
			// A stray -wal or -shm beside a missing database belongs to no file we keep.
			if err := os.Remove(from); err != nil {
				return res, err
			}
			continue
		}
		if err := os.Rename(from, res.KeptAside+suffix); err != nil {
			return res, fmt.Errorf("keep %s aside: %w", from, err)
		}
	}
	if err := os.Rename(tmp, file); err != nil {
		return res, fmt.Errorf("put the rebuilt database in place: %w", err)
	}
	if err := fsx.SyncDir(filepath.Dir(file)); err != nil {
		return res, err
	}
	if rep, err = catchUp(ctx, t, recs, rep); err != nil {
		return res, err
	}
	// Opening it once settles the records a crash left pending (none of them is history).
	db, err := t.open(ctx, false, persistence.WithLedger(recs))
	if err != nil {
		return res, err
	}
	res.Rebuilt, res.RebuildReport = true, rep
	return res, db.Close()
}

// catchUpRounds bounds how often catchUp replays the records again (a variable only so that tests
// can lower it).
var catchUpRounds = 3

// catchUp brings the rebuilt database up to the records committed while it was built. The lock
// keeps every command's operation out, but a process that opened the old database before it went
// may still write to it (the operation log a command writes once its lock is released), and that
// transaction's record reaches the store, not the new file: the records are compared again by
// identity, and replayed in place until the database has seen all of them.
func catchUp(ctx context.Context, t Target, recs *objectstore.Records, rep persistence.RebuildReport) (persistence.RebuildReport, error) {
	for round := 0; ; round++ {
		db, err := t.open(ctx, false)
		if err != nil {
			return rep, err
		}
		unseen, err := unseenBy(ctx, db, recs)
		switch {
		case err != nil || len(unseen) == 0:
		case round == catchUpRounds:
			err = fault.Conflict("records kept arriving while the database was rebuilt (another plan process is still writing): " +
				"run `plan doctor --rebuild` again once it has finished")
		default:
			rep, err = db.RebuildWorkspace(ctx, recs)
		}
		_ = db.Close()
		if err != nil || len(unseen) == 0 {
			return rep, err
		}
	}
}

// rebuildInPlace rebuilds the workspace's rows of a PostgreSQL database when they are missing or
// behind its records; a healthy workspace is left alone.
func rebuildInPlace(ctx context.Context, t Target, recs *objectstore.Records) (RebuildResult, error) {
	var res RebuildResult
	if t.WorkspaceID == "" {
		return res, fault.Invalid("a shared database needs the workspace ID from .plan/config.yaml")
	}
	why, err := databaseProblem(ctx, t, "", recs)
	if err != nil || why == "" {
		res.Why = why
		return res, err
	}
	// create: the schema, or the workspace's row, may be what was lost. Without the ledger: with
	// it, Open refuses a database behind its records, which this one is.
	db, err := t.open(ctx, true)
	if err != nil {
		return res, err
	}
	rep, err := db.RebuildWorkspace(ctx, recs)
	_ = db.Close()
	if err != nil {
		return res, err
	}
	// Opening it once with the records settles those a crash left pending, and checks that the
	// database has now seen every one.
	if db, err = t.open(ctx, false, persistence.WithLedger(recs)); err != nil {
		return res, err
	}
	res.Why, res.Rebuilt, res.RebuildReport = why, true, rep
	return res, db.Close()
}

// databaseProblem says what makes the database unusable, or "" when it is healthy. file is the
// SQLite file ("" for PostgreSQL).
func databaseProblem(ctx context.Context, t Target, file string, recs *objectstore.Records) (string, error) {
	l := t.Layout
	if file != "" {
		if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
			return "missing", nil
		}
	}
	// Opened without the ledger: a look must not write records.
	db, err := t.open(ctx, false)
	if err != nil {
		if file != "" {
			if werr := l.CheckWritable(); werr != nil {
				return "", werr
			}
		} else if errors.Is(err, fault.ErrNotFound) {
			return "missing (the database holds no rows of this workspace)", nil
		}
		if errors.Is(err, fault.ErrIntegrity) {
			return "empty, incomplete or damaged (" + err.Error() + ")", nil
		}
		return "", err
	}
	defer func() { _ = db.Close() }()
	complaints, err := db.IntegrityCheck(ctx)
	if err != nil {
		return "damaged (" + err.Error() + ")", nil
	}
	if len(complaints) > 0 {
		return fmt.Sprintf("damaged (integrity check of %s: %d complaints)", t.Shown(), len(complaints)), nil
	}
	// A database restored from an old backup is healthy but behind: the store has committed
	// transactions it never saw, whatever it wrote since.
	unseen, err := unseenBy(ctx, db, recs)
	if err != nil {
		return "", err
	}
	if len(unseen) > 0 {
		return strings.TrimPrefix(behind(unseen), "the database is "), nil
	}
	// Rows deleted by hand leave the ledger table whole. Under the lock: no checkpoint is deleted
	// meanwhile, so one answer is enough.
	lost, err := db.LostCheckpoints(ctx, recs)
	if err != nil || len(lost) == 0 {
		return "", err
	}
	return strings.TrimPrefix(lostRows(lost), "the database "), nil
}

// unseenBy lists the committed records, then the ones db has not seen (in that order: see
// persistence.DB.Unseen).
func unseenBy(ctx context.Context, db *persistence.DB, recs *objectstore.Records) ([]string, error) {
	names, err := recs.Committed()
	if err != nil {
		return nil, err
	}
	return db.Unseen(ctx, names)
}
