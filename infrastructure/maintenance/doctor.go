package maintenance

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/config"
	"github.com/planhq/plan/infrastructure/objectstore"
	"github.com/planhq/plan/infrastructure/persistence"
	"github.com/planhq/plan/infrastructure/workspace"
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
					Repair: "make " + l.State() + " writable (chmod u+w, chattr -i, or remount read-write); the database itself may be fine"})
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
		var head uint64
		if err == nil && len(complaints) == 0 {
			head, err = db.LedgerHead(ctx)
		}
		_ = db.Close()
		var last uint64
		if len(committed) > 0 {
			last, _ = objectstore.ParseRecordName(committed[len(committed)-1])
		}
		switch {
		case err != nil:
			add(Finding{Check: "database", Problem: err.Error(), Repair: rebuild})
		case len(complaints) == 0 && head < last:
			// Healthy but behind: restored from an older backup, or rows lost. Its gc would
			// collect what the newer records still reference.
			add(Finding{Check: "database", Problem: fmt.Sprintf("the database is behind the store: it has seen %d of %d recorded transactions", head, last),
				Repair: "`plan doctor --rebuild` brings it up to date from the store's records"})
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
	add(checkRecords(ctx, t, recs, dbHealthy, repair))

	// Store: index files that do not match their packs, packs without an index, packs missing or
	// cut short, broken delta chains, an interrupted gc.
	if !t.Shared {
		add(checkIndexes(filepath.Join(l.Objects(), "packs"), repair))
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

// storeRepair is the advice for a store that cannot be opened or refreshed: an index is rebuilt
// from its pack once deleted; anything else (a path that is not a directory plan can write) is the
// user's to put right.
func storeRepair(err error) string {
	if strings.Contains(err.Error(), ".idx") {
		return "delete the named .idx file: plan rebuilds it from its pack"
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

// checkRecords verifies every committed record. Damaged ones are replaced, when the database is
// healthy and repair is set, by compaction: the database's whole history written as a new baseline
// record, which makes every older record redundant, so they are removed.
func checkRecords(ctx context.Context, t Target, recs *objectstore.Records, dbHealthy, repair bool) Finding {
	bad, err := recs.Verify()
	if err != nil {
		return Finding{Check: "records", Problem: err.Error()}
	}
	if len(bad) == 0 {
		return Finding{Check: "records", OK: true}
	}
	f := Finding{Check: "records", Problem: fmt.Sprintf("%d damaged records: %s", len(bad), strings.Join(bad, ", "))}
	switch {
	case !dbHealthy:
		f.Repair = "the database cannot be rebuilt past a damaged record: restore the named files (or .plan/plan.db) from a backup"
	case !repair:
		f.Repair = "`plan doctor --repair` writes the database's history as a new baseline record, which replaces them"
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
	return Finding{Check: "checkpoints",
		Problem: fmt.Sprintf("%d of %d checkpoints have no data in the store: %s", len(missing), len(cps), strings.Join(shown, ", ")),
		Repair:  "restore .plan/objects from a backup; otherwise delete those checkpoints (`plan verify` lists them)"}
}
