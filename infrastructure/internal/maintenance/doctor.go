package maintenance

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/config"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/persistence"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// Finding is one thing doctor noticed.
type Finding struct {
	Check    string `json:"check"`
	OK       bool   `json:"ok"`
	Problem  string `json:"problem,omitempty"`
	Repair   string `json:"repair,omitempty"`
	Repaired bool   `json:"repaired"`
}

// Report is doctor's result.
type Report struct {
	OK       bool      `json:"ok"`
	Findings []Finding `json:"findings"`
}

// Target is the workspace doctor and rebuild look at, and how to open its parts without the
// application graph (which cannot start when the database is missing or damaged).
type Target struct {
	Layout workspace.Layout
	// WorkspaceID is the workspace's identity ("" for one older than identities: its database
	// holds it).
	WorkspaceID string
	// DB is the database's persistence target: a SQLite path, or a PostgreSQL DSN.
	DB string
	// Shared says the store is shared (file:// or s3://): its records are the workspace's part of
	// it, and it has no pack indexes of its own to check.
	Shared bool
	// OpenRecords opens the records of the workspace's history; OpenStore its object store.
	OpenRecords func(ctx context.Context) (*objectstore.Records, error)
	OpenStore   func(ctx context.Context) (*objectstore.Store, error)
}

// PrivateTarget is the default workspace of l: .plan/plan.db and the private store in
// .plan/objects.
func PrivateTarget(l workspace.Layout) Target {
	return Target{
		Layout: l, DB: l.Database(),
		OpenRecords: func(context.Context) (*objectstore.Records, error) { return objectstore.OpenRecords(l.Objects()) },
		OpenStore:   func(context.Context) (*objectstore.Store, error) { return objectstore.Open(l.Objects()) },
	}
}

// fileDB is the SQLite file of the database ("" for PostgreSQL).
func (t Target) fileDB() string {
	switch {
	case strings.HasPrefix(t.DB, "postgres://"), strings.HasPrefix(t.DB, "postgresql://"):
		return ""
	case strings.HasPrefix(t.DB, "sqlite://"):
		return strings.TrimPrefix(t.DB, "sqlite://")
	}
	return t.DB
}

// Shown is the database as messages name it: DB without the password a PostgreSQL DSN may carry
// (from PGPASSWORD, or as given to plan init).
func (t Target) Shown() string {
	shown, _ := config.RedactDSN(t.DB)
	return shown
}

// open opens the database (see persistence.Open) as the workspace's.
func (t Target) open(ctx context.Context, create bool, opts ...persistence.Option) (*persistence.DB, error) {
	if t.WorkspaceID != "" {
		opts = append(opts, persistence.WithWorkspace(t.WorkspaceID))
	}
	return persistence.Open(ctx, t.DB, create, opts...)
}

// Doctor checks the database, the store, the journal and temporary files. With repair it
// performs the safe repairs. It opens nothing through the application graph, so it works when that
// cannot start (a missing or damaged database).
func Doctor(ctx context.Context, t Target, repair bool) Report {
	var r Report
	l := t.Layout
	add := func(f Finding) { r.Findings = append(r.Findings, f) }
	recs, err := t.OpenRecords(ctx)
	if err != nil {
		add(Finding{Check: "records", Problem: err.Error()})
		return r.done()
	}
	committed, err := recs.Committed()
	if err != nil {
		add(Finding{Check: "records", Problem: err.Error()})
		return r.done()
	}
	rebuild := "`plan doctor --rebuild` makes it again from the store's records (the damaged file is kept aside)"
	if len(committed) == 0 {
		rebuild = "restore .plan/plan.db from a backup: this store holds no records to rebuild it from (it was written by a plan from before records were kept)"
	}
	dbFile := t.fileDB()
	if dbFile == "" {
		rebuild = "`plan doctor --rebuild` rebuilds this workspace's rows from the store's records, in place"
	}

	// Database.
	dbHealthy := false
	var missing []string // records the database has seen that the store no longer holds
	var missingErr error
	var statErr error
	if dbFile != "" {
		_, statErr = os.Stat(dbFile)
	}
	switch {
	case errors.Is(statErr, fs.ErrNotExist):
		add(Finding{Check: "database", Problem: "the metadata database " + dbFile + " is missing", Repair: rebuild})
	case statErr != nil:
		add(Finding{Check: "database", Problem: statErr.Error()})
	default:
		db, err := t.open(ctx, false)
		if err != nil {
			if werr := l.CheckWritable(); werr != nil {
				add(Finding{Check: "database", Problem: werr.Error(),
					Repair: "make " + l.Home() + " writable (chmod u+w, chattr -i, or remount read-write); the database itself may be fine"})
				break
			}
			repair := rebuild
			if !errors.Is(err, fault.ErrIntegrity) {
				// Rebuild replaces only a database that is missing or damaged, never one it cannot
				// open for another reason: advising it here would send the user round in a circle.
				repair = "make " + t.Shown() + " the database plan can open, or move what stands there aside; `plan doctor --rebuild` replaces only a missing or damaged database"
				switch {
				case errors.Is(err, fault.ErrDenied):
					repair = "give the credentials the server accepts (PGPASSWORD, PGPASSFILE or ~/.pgpass) and the permissions plan needs, then run `plan doctor` again"
				case errors.Is(err, fault.ErrUnavailable):
					repair = "make the database server reachable (and PGPASSWORD or ~/.pgpass right), then run `plan doctor` again"
				}
			}
			add(Finding{Check: "database", Problem: err.Error(), Repair: repair})
			break
		}
		complaints, err := db.IntegrityCheck(ctx)
		var unseen []string
		var lost []string
		// cmpErr is a comparison with the records that could not be made: the database may be
		// fine, and rebuilding it from records that cannot be read is no advice.
		var cmpErr error
		if err == nil && len(complaints) == 0 {
			// committed was listed before the database was read (see persistence.DB.Unseen).
			unseen, cmpErr = db.Unseen(ctx, committed)
		}
		if err == nil && cmpErr == nil && len(complaints) == 0 && len(unseen) == 0 {
			lost, cmpErr = lostCheckpoints(ctx, db, recs)
		}
		if err == nil && len(complaints) == 0 {
			// A records problem, not the database's: reported by checkRecords.
			missing, missingErr = db.MissingRecords(ctx, recs)
		}
		if cmpErr != nil && missingErr == nil {
			missingErr = cmpErr // the records finding must not say they are fine either
		}
		_ = db.Close()
		switch {
		case err != nil:
			add(Finding{Check: "database", Problem: err.Error(), Repair: rebuild})
		case cmpErr != nil:
			add(Finding{Check: "database", Problem: "compare the database with the store's records: " + cmpErr.Error(),
				Repair: "make the store's records readable (see the records finding), then run `plan doctor` again"})
		case len(complaints) == 0 && len(unseen) > 0:
			// Healthy but behind: restored from an older backup, or rows lost. Its gc would
			// collect what the newer records still reference, so every command refuses it.
			add(Finding{Check: "database", Problem: behind(unseen),
				Repair: "`plan doctor --rebuild` brings it up to date from the store's records"})
		case len(complaints) == 0 && len(lost) > 0:
			add(Finding{Check: "database", Problem: lostRows(lost),
				Repair: "`plan doctor --rebuild` brings them back from the store's records"})
		case len(complaints) > 0:
			engine := "SQLite integrity_check: "
			if dbFile == "" {
				engine = "PostgreSQL schema check: "
			}
			add(Finding{Check: "database", Problem: engine + strings.Join(complaints, "; "), Repair: rebuild})
		default:
			add(Finding{Check: "database", OK: true})
			dbHealthy = true
		}
	}
	add(checkRecords(ctx, t, recs, missing, missingErr, dbHealthy, repair))

	// Store: index files that do not match their packs, packs without an index, packs missing or
	// cut short, broken delta chains, an interrupted gc.
	// A damaged idx keeps the store from opening: with repair it is rebuilt from its pack first.
	if !t.Shared {
		f := checkIndexes(filepath.Join(l.Objects(), "packs"), repair)
		if g, ok := repairIndexes(recs.Backend(), repair && f.OK); ok {
			f = g
		}
		add(f)
	} else if f, ok := repairIndexes(recs.Backend(), repair); ok {
		add(f)
	}
	if s, err := t.OpenStore(ctx); err != nil {
		add(Finding{Check: "store", Problem: err.Error(), Repair: storeRepair(err)})
	} else {
		storeFailed := false
		if repair {
			// Repairs write to the store, which only the lock's holder may do.
			unlock, err := workspace.NewLocker(l).Lock(ctx, "doctor --repair")
			if err != nil {
				add(Finding{Check: "lock", Problem: err.Error(), Repair: "run `plan doctor --repair` again once the other plan process is done"})
				_ = s.Close()
				return r.done()
			}
			defer func() { _ = unlock() }()
			if n, err := s.CleanTemp(); err == nil && n > 0 {
				add(Finding{Check: "store temporary files", OK: true, Problem: fmt.Sprintf("%d unfinished pack files", n),
					Repair: "removed (they belonged to checkpoints that never committed)", Repaired: true})
			}
			// What every command does once it holds the lock: finish an interrupted gc, write the
			// idx of a pack that has none.
			if err := s.Refresh(); err != nil {
				add(Finding{Check: "store", Problem: err.Error(), Repair: storeRepair(err)})
				storeFailed = true
			} else if h := Heal(ctx, l, s); h.Problem != "" {
				add(h) // only when there was damage to heal
			}
		} else if n := countEntries(filepath.Join(s.Dir(), "tmp")); n > 0 && !t.Shared {
			// Junk, not damage: no checkpoint references it, and the next command that takes the
			// workspace lock removes it.
			add(Finding{Check: "store temporary files", OK: true, Problem: fmt.Sprintf("%d unfinished pack files in objects/tmp", n),
				Repair: "removed by the next plan command that changes the workspace, or by `plan doctor --repair` (no checkpoint references them)"})
		}
		if f, ok := checkUnindexed(s, repair && !storeFailed); ok {
			add(f)
		}
		if problems := s.Problems(); len(problems) > 0 {
			add(Finding{Check: "store", Problem: strings.Join(problems, "; "),
				Repair: "`plan verify` names the checkpoints that need the lost objects; delete those checkpoints (or restore the packs from a backup), then `plan gc`"})
		} else if !storeFailed {
			add(Finding{Check: "store", OK: true})
		}
		if dbHealthy {
			add(checkRoots(ctx, t, s))
		}
		_ = s.Close()
	}

	// Journal and staging.
	if _, err := os.Stat(l.JournalFile()); err == nil {
		add(Finding{Check: "journal", Problem: "an interrupted rollback or correction is pending",
			Repair: "`plan recover` (or any plan command that changes the workspace) finishes or undoes it"})
	} else {
		add(Finding{Check: "journal", OK: true})
	}
	if _, err := os.Stat(filepath.Join(l.Root, filepath.FromSlash(l.Staging()))); err == nil {
		_, pending := os.Stat(l.JournalFile())
		f := Finding{Check: "staging", Problem: "restore staging files were left behind"}
		if pending == nil {
			f.Repair = "`plan recover` uses and then removes them"
		} else if repair {
			if err := os.RemoveAll(filepath.Join(l.Root, filepath.FromSlash(l.Staging()))); err == nil {
				f.Repair, f.Repaired, f.OK = "removed (no operation is pending)", true, true
			}
		} else {
			f.Repair = "`plan doctor --repair` removes them (no operation is pending)"
		}
		add(f)
	}
	return r.done()
}

// behind says what the database lacks: the recorded transactions it never saw, by name.
func behind(unseen []string) string {
	var shown []string
	for _, n := range slices.Backward(unseen) {
		if len(shown) == 3 {
			shown = append(shown, fmt.Sprintf("and %d older", len(unseen)-3))
			break
		}
		shown = append(shown, persistence.ShortRecord(n))
	}
	return fmt.Sprintf("the database is behind the store: it has not seen %d recorded transactions (%s)", len(unseen), strings.Join(shown, ", "))
}

// lostCheckpoints asks db for the checkpoints the records hold and it lacks, twice when there are
// any: doctor holds no lock, and a checkpoint deleted between its reading of the records and of the
// database is not lost. Only those lacking both times are.
//
// A damaged record leaves nothing to compare with: the records check reports it (and its repair
// needs the database judged healthy), so it is not the database's problem here.
func lostCheckpoints(ctx context.Context, db *persistence.DB, recs *objectstore.Records) ([]string, error) {
	first, err := db.LostCheckpoints(ctx, recs)
	if errors.Is(err, fault.ErrIntegrity) {
		return nil, nil
	}
	if err != nil || len(first) == 0 {
		return nil, err
	}
	again, err := db.LostCheckpoints(ctx, recs)
	if err != nil {
		return nil, err
	}
	var lost []string
	for _, id := range again {
		if slices.Contains(first, id) {
			lost = append(lost, id)
		}
	}
	return lost, nil
}

// lostRows says which checkpoints the database lost.
func lostRows(lost []string) string {
	shown := lost
	if len(shown) > 5 {
		shown = append(slices.Clone(shown[:5]), fmt.Sprintf("and %d more", len(lost)-5))
	}
	return fmt.Sprintf("the database lacks %d checkpoints the store's records hold (rows lost): %s", len(lost), strings.Join(shown, ", "))
}

// storeRepair is the advice for a store that cannot be opened or refreshed: an index is rebuilt
// from its pack once deleted; anything else (a path that is not a directory plan can write) is the
// user's to put right.
func storeRepair(err error) string {
	if strings.Contains(err.Error(), ".idx") {
		return "`plan doctor --repair` rebuilds the named .idx from its pack (keep both files: the pack holds the data)"
	}
	return "make the named path what plan expects (a directory it can write), or restore .plan/objects from a backup"
}

// done sets OK from the findings.
func (r Report) done() Report {
	r.OK = true
	for _, f := range r.Findings {
		if !f.OK {
			r.OK = false
		}
	}
	return r
}

// checkIndexes finds packs whose index is missing or corrupt; with repair it removes a corrupt
// index so the next open rebuilds it from the pack, which is self-describing.
func checkIndexes(dir string, repair bool) Finding {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return Finding{Check: "pack indexes", OK: true}
	}
	if err != nil {
		return Finding{Check: "pack indexes", Problem: err.Error()}
	}
	var missing, empty []string
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	for _, e := range entries {
		name := e.Name()
		if base, ok := strings.CutSuffix(name, ".pack"); ok && !names[base+".idx"] {
			missing = append(missing, name)
		}
		if strings.HasSuffix(name, ".idx") {
			if fi, err := e.Info(); err == nil && fi.Size() == 0 {
				empty = append(empty, name)
			}
		}
	}
	switch {
	case len(empty) > 0 && repair:
		for _, n := range empty {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				return Finding{Check: "pack indexes", Problem: err.Error()}
			}
		}
		return Finding{Check: "pack indexes", OK: true, Problem: fmt.Sprintf("%d empty index files", len(empty)),
			Repair: "removed; they are rebuilt from their packs on the next open", Repaired: true}
	case len(empty) > 0:
		return Finding{Check: "pack indexes", Problem: fmt.Sprintf("%d empty index files: %s", len(empty), strings.Join(empty, ", ")),
			Repair: "`plan doctor --repair` removes them; plan rebuilds each from its self-describing pack"}
	case len(missing) > 0:
		return Finding{Check: "pack indexes", OK: true, Problem: fmt.Sprintf("%d packs without an index", len(missing)),
			Repair: "rebuilt automatically from the packs when the store is opened"}
	}
	return Finding{Check: "pack indexes", OK: true}
}

func countEntries(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	return len(entries)
}

// checkRecords verifies every committed record, and that none the database has seen (missing) is
// gone from the store (missingErr: that could not be compared; damaged records are still
// reported and repaired). Damaged and missing ones are replaced, when the database is healthy and
// repair is set, by compaction: the database's whole history written as a new baseline record,
// which makes every older record redundant, so they are removed.
func checkRecords(ctx context.Context, t Target, recs *objectstore.Records, missing []string, missingErr error, dbHealthy, repair bool) Finding {
	bad, err := recs.Verify()
	if err != nil {
		return Finding{Check: "records", Problem: err.Error()}
	}
	if missingErr != nil && len(bad) == 0 {
		return Finding{Check: "records", Problem: "compare the records with the database: " + missingErr.Error()}
	}
	if len(bad) == 0 && len(missing) == 0 {
		return Finding{Check: "records", OK: true}
	}
	var problems []string
	if len(bad) > 0 {
		problems = append(problems, fmt.Sprintf("%d damaged records: %s", len(bad), strings.Join(bad, ", ")))
	}
	if len(missing) > 0 {
		// Deleted from the store: until they are written again, a rebuild would lose what they
		// recorded, and a gc of another workspace (which reads only records) may collect what
		// this workspace's checkpoints reference.
		problems = append(problems, fmt.Sprintf("%d records the database has seen are missing from the store %s (%s): until they are written again, a gc of any other workspace of the store may delete this workspace's checkpoints' content",
			len(missing), recs.Dir(), shortList(missing, 3)))
	}
	f := Finding{Check: "records", Problem: strings.Join(problems, "; ")}
	switch {
	case !dbHealthy:
		f.Repair = "the database cannot be rebuilt past a damaged record: restore the named files (or .plan/plan.db) from a backup"
	case !repair:
		f.Repair = "`plan doctor --repair` writes the database's history as a new baseline record, which replaces them (run it before any gc)"
	default:
		unlock, err := workspace.NewLocker(t.Layout).Lock(ctx, "doctor --repair")
		if err != nil {
			f.Repair = err.Error()
			return f
		}
		defer func() { _ = unlock() }()
		db, err := t.open(ctx, false, persistence.WithLedger(recs))
		if err != nil {
			f.Repair = err.Error()
			return f
		}
		defer func() { _ = db.Close() }()
		n, err := db.Compact(ctx)
		if err != nil {
			f.Repair = "compaction failed: " + err.Error()
			return f
		}
		f.OK, f.Repaired = true, true
		f.Repair = fmt.Sprintf("the database's history is written as a new baseline record; %d older records, the damaged ones among them, are removed", n)
		if len(bad) == 0 {
			f.Repair = fmt.Sprintf("the database's history is written as a new baseline record, which stands for the missing ones (%d older records made redundant are removed)", n)
		}
	}
	return f
}

// checkRoots finds checkpoints whose root tree the store does not hold (a deleted packs directory,
// packs restored from an older backup): the cheap half of `plan verify`, which reads no content.
func checkRoots(ctx context.Context, t Target, s *objectstore.Store) Finding {
	db, err := t.open(ctx, false)
	if err != nil {
		return Finding{Check: "checkpoints", Problem: err.Error()}
	}
	defer func() { _ = db.Close() }()
	cps, err := persistence.NewCheckpoints(db).List(ctx)
	if err != nil {
		return Finding{Check: "checkpoints", Problem: err.Error()}
	}
	var missing []string
	for _, c := range cps {
		if !s.Has(c.Root()) {
			missing = append(missing, string(c.ID()))
		}
	}
	if len(missing) == 0 {
		return Finding{Check: "checkpoints", OK: true}
	}
	shown := missing
	if len(shown) > 5 {
		shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(missing)-5))
	}
	repair := "restore .plan/objects from a backup; otherwise delete those checkpoints (`plan verify` lists them)"
	if t.Shared {
		// A pack without its index holds objects no reader sees: index it before giving up on them.
		repair = "`plan doctor --repair` first indexes any pack that lost its index; otherwise restore the store's packs from a backup, or delete those checkpoints (`plan verify` lists them)"
	}
	return Finding{Check: "checkpoints",
		Problem: fmt.Sprintf("%d of %d checkpoints have no data in the store: %s", len(missing), len(cps), strings.Join(shown, ", ")),
		Repair:  repair}
}

// repairIndexes replaces every damaged idx whose pack can be re-indexed (see
// objectstore.RepairIndexes); ok is false when there was nothing to repair.
func repairIndexes(be objectstore.Backend, repair bool) (Finding, bool) {
	if !repair {
		return Finding{}, false
	}
	res, err := objectstore.RepairIndexes(be)
	switch {
	case err != nil:
		return Finding{Check: "pack indexes", Problem: err.Error()}, true
	case len(res.Unrepairable) > 0:
		return Finding{Check: "pack indexes", Problem: fmt.Sprintf("%d damaged index files whose packs are damaged too: %s",
			len(res.Unrepairable), strings.Join(res.Unrepairable, ", ")),
			Repair: "restore the named packs and their .idx files from a backup; both are kept as they are"}, true
	case len(res.Rebuilt) > 0:
		return Finding{Check: "pack indexes", OK: true, Repaired: true,
			Problem: fmt.Sprintf("%d damaged index files: %s", len(res.Rebuilt), strings.Join(res.Rebuilt, ", ")),
			Repair:  "rebuilt from their packs"}, true
	}
	return Finding{}, false
}

// checkUnindexed reports the packs of a shared store that have no index (an upload in flight, or
// an index lost), and with repair indexes them from their own records. ok is false when there
// are none. No gc deletes such a pack: it re-indexes it first, or keeps it.
func checkUnindexed(s *objectstore.Store, repair bool) (Finding, bool) {
	u, err := s.Unindexed()
	if err != nil {
		return Finding{Check: "pack indexes", Problem: err.Error()}, true
	}
	if len(u) == 0 {
		return Finding{}, false
	}
	ids := make([]string, len(u))
	for i, p := range u {
		ids[i] = p.ID
	}
	if !repair {
		return Finding{Check: "pack indexes", Problem: fmt.Sprintf("%d packs without an index (an upload in flight, or an index lost): %s",
			len(u), strings.Join(ids, ", ")),
			Repair: "`plan doctor --repair` indexes them from their own records; no gc deletes them meanwhile"}, true
	}
	res, err := s.Reindex(0)
	if err != nil {
		return Finding{Check: "pack indexes", Problem: err.Error()}, true
	}
	if len(res.Quarantined) > 0 {
		return Finding{Check: "pack indexes", Problem: fmt.Sprintf("%d files named like packs cannot be read as packs (damaged, or not plan's): %s",
			len(res.Quarantined), strings.Join(res.Quarantined, ", ")),
			Repair: "kept as they are (no gc deletes them): restore them from a backup, or remove them if they are not plan's"}, true
	}
	return Finding{Check: "pack indexes", OK: true, Repaired: true,
		Problem: fmt.Sprintf("%d packs without an index: %s", len(res.Reindexed), strings.Join(res.Reindexed, ", ")),
		Repair:  "indexed from their own records"}, true
}

// shortList names the first n of names, and how many more there are.
func shortList(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
