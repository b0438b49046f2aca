// Package maintenance adapts the object store to the maintenance use cases (verify, gc, stats),
// reads the workspace's optional .plan/config.yaml, and implements `plan doctor`: the checks that
// must work even when the database or the store cannot be opened.
//
// Invariants: Health never changes the store except in Collect, which the caller runs under the
// workspace lock, and which MUST refuse (deleting nothing) roots that lack a tree the workspace's
// own records keep live; Doctor changes nothing unless asked to repair, and every repair it makes is one
// that cannot lose data (removing temporary files, rebuilding an index from its self-describing
// pack, finishing or undoing an interrupted operation through the normal recovery path). Messages
// name the database by Target.Shown, never with its password. Doctor and Rebuild judge a database
// behind the store by the names of the records it has not seen (persistence.DB.Unseen), never by a
// count; Rebuild MUST NOT report rebuilt while the new database lacks a committed record: it
// compares again after the swap, under the lock, and replays what arrived meanwhile.
//
// A shared store's gc deletes only provable garbage: it MUST NOT collect while it cannot know what
// some workspace keeps live, that is while a workspace's records have a hole (persistence.LedgerHole)
// or a workspace described in workspaces/ has no records left; it refuses then, deleting nothing
// and naming the workspace. It reads every workspace through package storeindex: a workspace the
// store's summary proves unchanged is taken from it, any other from its records, and a retired
// workspace keeps only what storeindex.Workspace.Live says. doctor and verify report the records a workspace's database has seen
// that the store lost (persistence.DB.MissingRecords); doctor --repair writes them again as a
// baseline.
package maintenance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/bucket"
	"github.com/planhq/plan/infrastructure/internal/config"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/persistence"
	"github.com/planhq/plan/infrastructure/internal/storeindex"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// Health is the application.StoreHealth adapter.
type Health struct {
	store   *objectstore.Store
	records *objectstore.Records
	// grace is how long a shared store's gc waits between condemning a pack and deleting it.
	grace time.Duration
	// db is the workspace's database, whose ledger names the records it has seen (nil: none are
	// compared with the store).
	db *persistence.DB
}

// WithDatabase has MissingRecords compare the records db has seen with the store's.
func (h *Health) WithDatabase(db *persistence.DB) *Health {
	h.db = db
	return h
}

// MissingRecords names the records db has seen that the store no longer holds (see
// persistence.DB.MissingRecords).
func (h *Health) MissingRecords(ctx context.Context) ([]string, error) {
	if h.db == nil || h.records == nil {
		return nil, nil
	}
	return h.db.MissingRecords(ctx, h.records)
}

// DefaultGrace is a shared store's gc grace period when the configuration names none: long enough
// for any upload in flight to have been referenced by its record.
const DefaultGrace = time.Hour

// NewHealth wraps store and the records kept beside it (records may be nil: none are checked).
func NewHealth(store *objectstore.Store, records *objectstore.Records) *Health {
	return &Health{store: store, records: records, grace: DefaultGrace}
}

// WithGrace sets a shared store's gc grace period.
func (h *Health) WithGrace(d time.Duration) *Health {
	h.grace = d
	return h
}

var _ port.StoreHealth = (*Health)(nil)

// ListTree returns one directory's entries, names in Path.
func (h *Health) ListTree(hash tree.Hash) ([]tree.Entry, error) {
	t, err := h.store.ReadTree(hash)
	if err != nil {
		return nil, err
	}
	out := make([]tree.Entry, len(t))
	for i, e := range t {
		out[i] = tree.Entry{Path: e.Name, Kind: e.Kind, Mode: e.Mode, Size: e.Size, Hash: e.Hash, Target: e.Target}
	}
	return out, nil
}

// CheckObject verifies one object; with readData from the store's own bytes (a remote store's
// local cache is bypassed: its copies are fetched again).
func (h *Health) CheckObject(hash tree.Hash, readData bool) error {
	if readData {
		h.store.ReadStoreBytes()
	}
	return h.store.CheckObject(hash, readData)
}

// Collect removes every object unreachable from roots. A shared store has writers in other
// workspaces, under no lock this one holds: it is collected in two phases (objectstore.SharedGC),
// and what is live is computed afresh for each, from roots and from every workspace's records.
func (h *Health) Collect(roots []tree.Hash, grace *time.Duration) (port.GCReport, error) {
	if err := h.rootsCover(roots); err != nil {
		return port.GCReport{}, err
	}
	if h.store.Shared() {
		return h.collectShared(roots, grace)
	}
	rep, _, err := h.collectPrivate(roots)
	return rep, err
}

// collectPrivate collects a private store and returns what it kept live.
func (h *Health) collectPrivate(roots []tree.Hash) (port.GCReport, map[tree.Hash]struct{}, error) {
	// What the checkpoints name, without the delta bases: GC re-encodes a kept object whose base
	// only pruned checkpoints named, so that base goes with them.
	live, err := h.store.Referenced(roots)
	if err != nil {
		return port.GCReport{}, nil, fmt.Errorf("find live objects (nothing was deleted): %w", err)
	}
	r, err := h.store.GCFrom(live, roots)
	if err != nil {
		return port.GCReport{}, nil, err
	}
	return port.GCReport{
		PacksDeleted: r.PacksDeleted, PacksRewritten: r.PacksRewritten, BytesReclaimed: r.BytesReclaimed,
		LiveObjects: len(live), ObjectsReencoded: r.ObjectsReencoded,
	}, live, nil
}

// Repack collects (see Collect), then rewrites what is live as compactly as it can (see
// objectstore.Repack). A shared store is refused before anything is done: its writers hold no lock
// in common with it, and a repack deletes every pack at once.
func (h *Health) Repack(roots []tree.Hash, p port.Progress) (port.GCReport, error) {
	if h.store.Shared() {
		return port.GCReport{}, fault.Invalid("gc --aggressive repacks a private store only: a shared store's writers hold no lock in common with it (nothing was done; run gc without --aggressive)")
	}
	if err := h.rootsCover(roots); err != nil {
		return port.GCReport{}, err
	}
	rep, live, err := h.collectPrivate(roots)
	if err != nil {
		return rep, err
	}
	r, err := h.store.Repack(live, roots, p)
	if err != nil {
		return rep, err
	}
	rep.Repack = &port.RepackReport{Objects: r.Objects, Bundles: r.Bundles, Bundled: r.Bundled, Similar: r.Similar,
		PacksDeleted: r.PacksDeleted, BytesBefore: r.BytesBefore, BytesAfter: r.BytesAfter, Kept: r.Kept}
	if !r.Kept {
		rep.BytesReclaimed += r.BytesBefore - r.BytesAfter
	}
	return rep, nil
}

// rootsCover refuses roots (what the database keeps live) that lack a tree the workspace's own
// records keep live: the database lost rows its records hold (deleted by hand, or a database the
// ledger-name comparison cannot see is behind), and a gc from it would delete the content of
// checkpoints only the records know.
func (h *Health) rootsCover(roots []tree.Hash) error {
	if h.records == nil {
		return nil
	}
	sum, err := persistence.SummarizeLedger(h.records)
	if err != nil {
		return fmt.Errorf("read the workspace's records (nothing was deleted): %w", err)
	}
	have := make(map[tree.Hash]bool, len(roots))
	for _, r := range roots {
		have[r] = true
	}
	lacking := 0
	for _, r := range sum.Roots {
		if !have[r] {
			lacking++
		}
	}
	if lacking > 0 {
		return fault.Integrity("the database lacks %d checkpoint or result trees its records hold (rows lost, or restored from an older backup): "+
			"nothing was deleted; run `plan doctor --rebuild`, then gc", lacking)
	}
	return nil
}

func (h *Health) collectShared(roots []tree.Hash, grace *time.Duration) (port.GCReport, error) {
	d := h.grace
	if grace != nil {
		d = *grace
	}
	live := func() ([]tree.Hash, []tree.Hash, error) { return h.sharedRoots(roots) }
	r, err := h.store.SharedGC(live, d)
	rep := port.GCReport{
		PacksDeleted: r.PacksDeleted, PacksRewritten: r.PacksRewritten, BytesReclaimed: r.BytesReclaimed,
		LiveObjects: r.LiveObjects, Shared: true, Grace: d, PacksCondemned: r.PacksCondemned, PacksKept: r.PacksKept,
		MarksPending: r.MarksPending, ObjectsReencoded: r.ObjectsReencoded,
	}
	return rep, err
}

// sharedRoots returns this workspace's roots, which must be readable (its lock is held: nothing
// removes them), and what every workspace's records keep live or their pending records may (see
// storeindex.Workspace.Live: a retired workspace keeps only its pinned checkpoints and what it
// recorded after its retirement). The other workspaces' roots may vanish while the gc runs (pruned
// there, and swept by a gc of their own), so they only count for what can still be read. The
// workspaces unchanged since the store's summary are taken from it; when any was read, a new
// summary is written for the next gc.
func (h *Health) sharedRoots(roots []tree.Hash) (mine, maybe []tree.Hash, err error) {
	be := h.store.Backend()
	v, err := storeindex.Read(be)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (nothing was deleted)", err)
	}
	for _, w := range v.Sorted() {
		// A history with a hole kept live what this gc cannot know: it must not collect at all.
		if w.Hole != "" {
			return nil, nil, incomplete(be, w.ID, w.Descriptor, w.Hole)
		}
		maybe = append(maybe, w.Live()...)
	}
	if v.Read > 0 || v.Summary == "" {
		if _, err := storeindex.WriteSummary(be, v); err != nil {
			return nil, nil, fmt.Errorf("gc (nothing was deleted): %w", err)
		}
	}
	return slices.Clone(roots), maybe, nil
}

// incomplete is the refusal of a gc that cannot know what workspace id keeps live.
func incomplete(be objectstore.Backend, id string, d *storeindex.Descriptor, why string) error {
	where := ""
	if d != nil && d.Root != "" {
		where = fmt.Sprintf(" (%s on %s)", d.Root, d.Host)
	}
	return fault.Integrity("gc: the records of workspace %s%s in %s are incomplete: %s. What its checkpoints reference cannot be known, so nothing was deleted: run `plan doctor --repair` in that workspace, which writes its history again from its database (if the workspace is gone for good, remove records/%s/ and workspaces/%s.json from the store to let gc collect what it kept)",
		id, where, be.Location(""), why, id, id)
}

// ScanStore reads every pack end to end.
func (h *Health) ScanStore() ([]port.ObjectProblem, error) {
	ps, err := h.store.ScanPacks()
	if err != nil {
		return nil, err
	}
	out := make([]port.ObjectProblem, 0, len(ps))
	for _, p := range ps {
		out = append(out, port.ObjectProblem{Path: "pack " + p.Pack, Problem: p.Problem})
	}
	if h.records != nil {
		bad, err := h.records.Verify()
		if err != nil {
			return out, err
		}
		for _, b := range bad {
			out = append(out, port.ObjectProblem{Path: "record " + b,
				Problem: "damaged (its bytes do not match its name): `plan doctor --repair` replaces it with a new baseline record"})
		}
	}
	return out, nil
}

// Usage reports the store's size.
func (h *Health) Usage() port.StoreUsage {
	s := h.store.Stats()
	u := port.StoreUsage{Packs: s.Packs, Objects: s.Objects, StoredBytes: s.StoredBytes, RawBytes: s.RawBytes}
	if h.store.Shared() {
		u.Location = h.store.Backend().Location("")
	}
	if b, ok := h.store.Backend().(interface{ Stats() bucket.CacheStats }); ok {
		c := b.Stats()
		u.Cache = &port.CacheUsage{Hits: c.Hits, Misses: c.Misses, DownloadedBytes: c.DownloadedBytes,
			CachedBytes: c.CachedBytes, LimitBytes: c.CacheLimit}
	}
	return u
}

// ConsolidationDue tells whether the store has enough small packs to merge (see
// objectstore.Store.ConsolidationDue).
func (h *Health) ConsolidationDue() bool { return h.store.ConsolidationDue() }

// Consolidate merges the store's small packs (see objectstore.Store.Consolidate); the caller holds
// the workspace lock.
func (h *Health) Consolidate() (port.ConsolidationReport, error) {
	c, err := h.store.Consolidate()
	return port.ConsolidationReport{PacksMerged: c.PacksMerged, PacksWritten: c.PacksWritten,
		BytesWritten: c.BytesWritten, BytesRemoved: c.BytesRemoved}, err
}

// WrittenPerDay sums, per UTC day of their modification time, the sizes of the pack and idx files
// and the records (all written once, never changed).
func (h *Health) WrittenPerDay() (map[string]int64, error) {
	// The store may not have read its index yet (it loads on first use, and checks an idx at its
	// first use); stats reads and checks it here, where a damaged idx can be reported, before
	// Usage sums it up.
	if err := h.store.CheckIndex(); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	files, err := h.store.PackFiles()
	if err != nil {
		return nil, err
	}
	if h.records != nil {
		recs, err := h.records.Files()
		if err != nil {
			return nil, err
		}
		files = append(files, recs...)
	}
	for _, fi := range files {
		out[fi.ModTime.UTC().Format(time.DateOnly)] += fi.Size
	}
	return out, nil
}

// ConfigFile is the optional configuration's name inside .plan/.
const ConfigFile = config.FileName

// Settings reads the policies of .plan/config.yaml (package config holds its whole schema):
//
//	retention:
//	  keep: 50          # newest checkpoints kept after each run
//	  older_than: 168h  # optional: only prune checkpoints older than this
//	  keep_daily: 7     # optional calendar rules (keep_hourly, keep_daily, keep_weekly,
//	  keep_weekly: 4    #   keep_monthly): the newest checkpoint of each of the N most recent
//	                    #   hours, days, ... is kept too, as restic's forget --keep-daily does
//	  archives:         # optional: correction archives kept after each run
//	    keep: 10
//	    older_than: 720h
//	  classes:          # optional: per type and labels, decided before keep/older_than
//	    - type: pre_decision
//	      older_than: 168h
//	    - labels: {phase: milestone}
//	      keep: forever
//	store:            # a URL (a shared store), or a mapping:
//	  max_bytes: 10GiB  # optional: the store's disk budget (see application.EnforceBudget)
type Settings struct{ path string }

// NewSettings returns the settings of the workspace in l.
func NewSettings(l workspace.Layout) *Settings {
	return &Settings{path: config.Path(l.State())}
}

var _ port.Settings = (*Settings)(nil)

// Retention returns the configured policy.
func (s *Settings) Retention() (port.RetentionRule, bool, error) {
	c, err := config.Load(s.path)
	if err != nil {
		return port.RetentionRule{}, false, err
	}
	if c.Retention == nil {
		return port.RetentionRule{}, false, nil
	}
	cal, err := s.calendar(c.Retention)
	if err != nil {
		return port.RetentionRule{}, false, err
	}
	if c.Retention.Keep == nil && cal.IsZero() && c.Retention.OlderThan != "" {
		return port.RetentionRule{}, false, fault.Invalid("%s: retention.older_than needs retention.keep (or a keep_hourly … keep_monthly rule)", s.path)
	}
	if c.Retention.Keep == nil && cal.IsZero() && c.Retention.Archives == nil && len(c.Retention.Classes) == 0 {
		return port.RetentionRule{}, false, nil
	}
	rule := port.RetentionRule{Calendar: cal}
	if c.Retention.Keep == nil && !cal.IsZero() {
		d, err := s.age("retention.older_than", c.Retention.OlderThan)
		if err != nil {
			return rule, false, err
		}
		rule.OlderThan = d
	}
	if c.Retention.Keep != nil {
		rule.Keep = *c.Retention.Keep
		if rule.Keep < 1 {
			return rule, false, fault.Invalid("%s: retention.keep must be at least 1", s.path)
		}
		d, err := s.age("retention.older_than", c.Retention.OlderThan)
		if err != nil {
			return rule, false, err
		}
		rule.OlderThan = d
	}
	if a := c.Retention.Archives; a != nil {
		if a.Keep == nil || *a.Keep < 0 {
			return rule, false, fault.Invalid("%s: retention.archives.keep must be given, zero or more", s.path)
		}
		d, err := s.age("retention.archives.older_than", a.OlderThan)
		if err != nil {
			return rule, false, err
		}
		rule.Archives = &port.ArchiveRetention{Keep: *a.Keep, OlderThan: d}
	}
	for i, cl := range c.Retention.Classes {
		key := fmt.Sprintf("retention.classes[%d]", i)
		class := port.RetentionClass{Labels: cl.Labels}
		if cl.Type == "" && len(cl.Labels) == 0 {
			return rule, false, fault.Invalid("%s: %s needs a type or labels to match", s.path, key)
		}
		if cl.Type != "" {
			t, err := checkpoint.ParseType(cl.Type)
			if err != nil {
				return rule, false, fault.Invalid("%s: %s: %v", s.path, key, err)
			}
			class.Type = t
		}
		if err := checkpoint.ValidateLabels(cl.Labels); err != nil {
			return rule, false, fault.Invalid("%s: %s: %v", s.path, key, err)
		}
		switch {
		case cl.Keep == "forever" && cl.OlderThan == "":
			class.Forever = true
		case cl.Keep == "" && cl.OlderThan != "":
			d, err := s.age(key+".older_than", cl.OlderThan)
			if err != nil {
				return rule, false, err
			}
			class.OlderThan = d
		default:
			return rule, false, fault.Invalid("%s: %s needs older_than: DURATION or keep: forever (one of them)", s.path, key)
		}
		rule.Classes = append(rule.Classes, class)
	}
	return rule, true, nil
}

// CheckCommand returns validate.command ("" when it is not set); a value of blanks only is invalid.
func (s *Settings) CheckCommand() (string, error) {
	c, err := config.Load(s.path)
	if err != nil || c.Validate == nil {
		return "", err
	}
	if c.Validate.Command != "" && strings.TrimSpace(c.Validate.Command) == "" {
		return "", fault.Invalid("%s: validate.command is blank", s.path)
	}
	if strings.ContainsRune(c.Validate.Command, 0) {
		return "", fault.Invalid("%s: validate.command holds a NUL character", s.path)
	}
	return c.Validate.Command, nil
}

// calendar reads the calendar rules (retention.keep_hourly … keep_monthly): each, when given, at
// least 1.
func (s *Settings) calendar(r *config.Retention) (checkpoint.Calendar, error) {
	var cal checkpoint.Calendar
	for _, x := range []struct {
		key string
		v   *int
		to  *int
	}{{"keep_hourly", r.KeepHourly, &cal.Hourly}, {"keep_daily", r.KeepDaily, &cal.Daily},
		{"keep_weekly", r.KeepWeekly, &cal.Weekly}, {"keep_monthly", r.KeepMonthly, &cal.Monthly}} {
		if x.v == nil {
			continue
		}
		if *x.v < 1 {
			return cal, fault.Invalid("%s: retention.%s must be at least 1", s.path, x.key)
		}
		*x.to = *x.v
	}
	return cal, nil
}

// StoreBudget returns store.max_bytes in bytes (0: no budget).
func (s *Settings) StoreBudget() (int64, error) {
	return s.budgetKey("max_bytes", func(b *config.Budget) string { return b.MaxBytes })
}

// WorkspaceQuota returns store.workspace_max_bytes in bytes (0: no quota).
func (s *Settings) WorkspaceQuota() (int64, error) {
	return s.budgetKey("workspace_max_bytes", func(b *config.Budget) string { return b.WorkspaceMaxBytes })
}

func (s *Settings) budgetKey(key string, get func(*config.Budget) string) (int64, error) {
	c, err := config.Load(s.path)
	if err != nil || c.Budget == nil || get(c.Budget) == "" {
		return 0, err
	}
	n, err := config.ParseBytes(get(c.Budget))
	if err != nil || n <= 0 {
		return 0, fault.Invalid("%s: store.%s %q is not a positive size such as 10GiB or 500MB", s.path, key, get(c.Budget))
	}
	return n, nil
}

// WorkspaceBytes is the stored size of every object roots reach, delta bases included: what a
// workspace's checkpoints take of a shared store.
func (h *Health) WorkspaceBytes(roots []tree.Hash) (int64, error) {
	live, err := h.store.Reachable(roots)
	if err != nil {
		return 0, err
	}
	var n int64
	for o := range live {
		if info, ok := h.store.Info(o); ok {
			n += info.StoredSize
		}
	}
	return n, nil
}

var (
	_ port.BudgetSettings = (*Settings)(nil)
	_ port.WorkspaceUsage = (*Health)(nil)
)

// age parses an optional positive duration setting.
func (s *Settings) age(key, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fault.Invalid("%s: %s %q is not a positive duration", s.path, key, v)
	}
	return d, nil
}
