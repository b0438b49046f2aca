package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

func (h *handler) maintenanceCommands() []*ucli.Command {
	return []*ucli.Command{
		{
			Name: "verify", Usage: "check that every object the checkpoints need is present (and intact)", ArgsUsage: "[ID]",
			Flags: []ucli.Flag{
				&ucli.BoolFlag{Name: "read-data", Usage: "also re-hash every object's content"},
				&ucli.BoolFlag{Name: "repair", Usage: "with --read-data: first heal damaged or missing objects from intact copies (workspace files, archived artifacts)"},
			},
			Action: h.verify,
		},
		{
			Name: "gc", Usage: "remove objects no checkpoint references",
			Flags: []ucli.Flag{
				&ucli.StringFlag{Name: "grace", Usage: "shared store: how long a pack stays condemned before it is deleted (`DURATION`; default gc.grace in .plan/config.yaml, else 1h)"},
				&ucli.BoolFlag{Name: "aggressive", Usage: "private store: also repack what is live as compactly as it can (small files bundled, deltas against similar files, strong compression)"},
			},
			Action: h.gc,
		},
		{Name: "stats", Usage: "counts, sizes, dedup ratio and checkpoint timings", Action: h.stats},
		{
			Name: "doctor", Usage: "check the database and the store, and say how to repair them",
			Flags: []ucli.Flag{
				&ucli.BoolFlag{Name: "repair", Usage: "perform the safe repairs"},
				&ucli.BoolFlag{Name: "rebuild", Usage: "rebuild a missing, empty or damaged database from the records in the store (a damaged file is kept aside)"},
			},
			Action: h.doctor,
		},
	}
}

func (h *handler) pruneCommand() *ucli.Command {
	return &ucli.Command{
		Name: "prune", Usage: "delete old checkpoints, keeping the newest N and those still needed",
		Flags: []ucli.Flag{
			&ucli.IntFlag{Name: "keep", Usage: "keep the newest `N` checkpoints"},
			&ucli.StringFlag{Name: "older-than", Usage: "only delete checkpoints older than `DURATION` (e.g. 72h)"},
			&ucli.BoolFlag{Name: "dry-run", Usage: "show what would be deleted"},
			&ucli.BoolFlag{Name: "policy", Usage: "prune by the retention policy of .plan/config.yaml (keep, older_than, classes) instead of --keep"},
			&ucli.IntFlag{Name: "keep-hourly", Usage: "also keep the newest checkpoint of each of the `N` most recent hours that have one"},
			&ucli.IntFlag{Name: "keep-daily", Usage: "also keep the newest checkpoint of each of the `N` most recent days"},
			&ucli.IntFlag{Name: "keep-weekly", Usage: "also keep the newest checkpoint of each of the `N` most recent ISO weeks"},
			&ucli.IntFlag{Name: "keep-monthly", Usage: "also keep the newest checkpoint of each of the `N` most recent months"},
		},
		Action: h.prune,
	}
}

type pruneView struct {
	Deleted []string          `json:"deleted"`
	Kept    []string          `json:"kept"`
	Reasons map[string]string `json:"reasons"`
	DryRun  bool              `json:"dry_run"`
	// UndoLost are the operations whose safety checkpoint goes: plan undo steps past them.
	UndoLost []undoLostView `json:"undo_lost"`
}

type undoLostView struct {
	ID             string `json:"id"`
	Kind           string `json:"kind"`
	UndoCheckpoint string `json:"undo_checkpoint"`
}

func newPruneView(r application.PruneResult, dry bool) pruneView {
	v := pruneView{Deleted: []string{}, Kept: []string{}, Reasons: map[string]string{}, DryRun: dry, UndoLost: []undoLostView{}}
	for _, op := range r.UndoLost {
		v.UndoLost = append(v.UndoLost, undoLostView{ID: op.ID, Kind: op.Kind, UndoCheckpoint: string(op.UndoCheckpoint)})
	}
	for _, id := range r.Deleted {
		v.Deleted = append(v.Deleted, string(id))
	}
	for _, id := range r.Kept {
		v.Kept = append(v.Kept, string(id))
	}
	for id, why := range r.Reasons {
		v.Reasons[string(id)] = why
	}
	return v
}

func (h *handler) prune(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	policy := c.Bool("policy")
	calendar := c.IsSet("keep-hourly") || c.IsSet("keep-daily") || c.IsSet("keep-weekly") || c.IsSet("keep-monthly")
	switch {
	case policy && (c.IsSet("keep") || c.IsSet("older-than") || calendar):
		return usagef("--policy takes the rules from .plan/config.yaml: give it without --keep, --keep-daily and the like, or --older-than")
	case !policy && !c.IsSet("keep") && !calendar:
		return usagef("missing --keep N, --keep-daily N (or -hourly, -weekly, -monthly) or --policy (see `plan checkpoint prune --help`)")
	}
	req := application.PruneRequest{Keep: c.Int("keep"), DryRun: c.Bool("dry-run"), Calendar: checkpoint.Calendar{
		Hourly: c.Int("keep-hourly"), Daily: c.Int("keep-daily"), Weekly: c.Int("keep-weekly"), Monthly: c.Int("keep-monthly")}}
	if !c.IsSet("keep") {
		req.Keep = 0 // calendar rules alone: only they keep
	}
	// An empty value is a mistake (an unset shell variable, say), not "no age condition".
	if c.IsSet("older-than") {
		d, err := parseAge(c.String("older-than"))
		if err != nil {
			return err
		}
		req.OlderThan = d
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		var res application.PruneResult
		var err error
		if policy {
			res, err = app.Services.Maintenance.PruneByPolicy(c.Context, req.DryRun)
		} else {
			res, err = app.Services.Maintenance.Prune(c.Context, req)
		}
		if err != nil {
			return err
		}
		v := newPruneView(res, req.DryRun)
		var table string
		if req.DryRun && !h.json {
			if table, err = pruneTable(c, app, res); err != nil {
				return err
			}
		}
		return h.emit(v, func(w io.Writer) {
			verb := "Deleted"
			if req.DryRun {
				verb = "Would delete"
			}
			_, _ = fmt.Fprintf(w, "%s %d checkpoints, kept %d.\n", verb, len(v.Deleted), len(v.Kept))
			if req.DryRun {
				_, _ = io.WriteString(w, table)
			} else {
				ids := make([]string, 0, len(v.Reasons))
				for id := range v.Reasons {
					ids = append(ids, id)
				}
				sort.Strings(ids)
				for _, id := range ids {
					_, _ = fmt.Fprintf(w, "  kept %s: %s\n", id, scrub(v.Reasons[id]))
				}
			}
			if n := len(v.UndoLost); n > 0 {
				verb := "can no longer"
				if req.DryRun {
					verb = "would no longer"
				}
				_, _ = fmt.Fprintf(w, "plan undo %s take back these %d operations on their own (their safety checkpoints go; it steps past them):\n", verb, n)
				for _, op := range v.UndoLost {
					_, _ = fmt.Fprintf(w, "  %s %s (safety checkpoint %s)\n", op.Kind, op.ID, op.UndoCheckpoint)
				}
			}
			if len(v.Deleted) > 0 && !req.DryRun {
				_, _ = fmt.Fprintln(w, "`plan gc` reclaims their space.")
			}
		})
	})
}

// parseAge accepts Go durations plus a day suffix ("7d").
func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(days, "%d", &n); err == nil && n > 0 && fmt.Sprint(n) == days {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fault.Invalid("--older-than %q is not a positive duration such as 36h or 7d", s)
	}
	return d, nil
}

func (h *handler) gc(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	req := port.GCRequest{Aggressive: c.Bool("aggressive"), Progress: h.progress()}
	if g := c.String("grace"); c.IsSet("grace") {
		d, err := time.ParseDuration(g)
		if err != nil || d < 0 {
			return fault.Invalid("--grace %q: want a duration such as 1h, 10m or 0s", g)
		}
		req.Grace = &d
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		r, err := app.Services.Maintenance.GC(c.Context, req)
		if err != nil {
			return err
		}
		v := gcView{BytesReclaimed: r.BytesReclaimed, PacksDeleted: r.PacksDeleted,
			PacksRewritten: r.PacksRewritten, LiveObjects: r.LiveObjects, ObjectsReencoded: r.ObjectsReencoded}
		if p := r.Repack; p != nil {
			v.Repack = &repackView{Objects: p.Objects, Bundles: p.Bundles, Bundled: p.Bundled, Similar: p.Similar,
				PacksDeleted: p.PacksDeleted, BytesBefore: p.BytesBefore, BytesAfter: p.BytesAfter, Kept: p.Kept}
		}
		if r.Shared {
			v.Shared = &sharedGCView{GraceSeconds: r.Grace.Seconds(), PacksCondemned: r.PacksCondemned,
				PacksKept: r.PacksKept, MarksPending: r.MarksPending}
		}
		return h.emit(v, func(w io.Writer) { writeGC(w, r) })
	})
}

// pruneTable is prune --dry-run's table, as restic forget prints one: every checkpoint, newest
// first, whether it would be kept or deleted, and the rule that says so.
func pruneTable(c *ucli.Context, app *bootstrap.App, res application.PruneResult) (string, error) {
	cps, err := app.Services.Checkpoints.List(c.Context)
	if err != nil {
		return "", err
	}
	deleted := map[checkpoint.ID]bool{}
	for _, id := range res.Deleted {
		deleted[id] = true
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "  ACTION\tID\tTYPE\tCREATED\tNOTE\tRULE")
	for _, cp := range cps {
		rule := res.Rules[cp.ID()] // every checkpoint the prune looked at has one
		action := "keep"
		if deleted[cp.ID()] {
			action = "delete"
		}
		note := "-"
		if cp.Note() != "" {
			note = quote(cp.Note())
		}
		_, _ = fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", action, cp.ID(), cp.Type(), localTime(cp.CreatedAt()), note, scrub(rule))
	}
	_ = tw.Flush()
	return b.String(), nil
}

// writeGC is gc's text: what was reclaimed (or that the store grew, never a negative size
// reclaimed), re-encoded, repacked or kept, and a shared store's phases.
func writeGC(w io.Writer, r port.GCReport) {
	if r.BytesReclaimed >= 0 {
		_, _ = fmt.Fprintf(w, "Reclaimed %s (%d packs deleted, %d rewritten; %d live objects kept).\n",
			humanBytes(r.BytesReclaimed), r.PacksDeleted, r.PacksRewritten, r.LiveObjects)
	} else {
		// Re-encoding what deleted checkpoints were the delta bases of wrote more than the
		// deletion freed: say so, not "reclaimed" a negative size.
		_, _ = fmt.Fprintf(w, "Reclaimed nothing: the store grew by %s (%d packs deleted, %d rewritten; %d live objects kept).\n",
			humanBytes(-r.BytesReclaimed), r.PacksDeleted, r.PacksRewritten, r.LiveObjects)
	}
	if r.ObjectsReencoded > 0 {
		_, _ = fmt.Fprintf(w, "Re-encoded %d kept objects whose delta base only deleted checkpoints held.\n", r.ObjectsReencoded)
	}
	if p := r.Repack; p != nil && p.Kept {
		_, _ = fmt.Fprintf(w, "Repacking would not make the store smaller (%s of packs, %s repacked): the old packs are kept.\n",
			humanBytes(p.BytesBefore), humanBytes(p.BytesAfter))
	} else if p != nil {
		_, _ = fmt.Fprintf(w, "Repacked %d live objects from %s into %s (%d files in %d bundles, %d as deltas against a similar file).\n",
			p.Objects, humanBytes(p.BytesBefore), humanBytes(p.BytesAfter), p.Bundled, p.Bundles, p.Similar)
	}
	if r.Shared {
		_, _ = fmt.Fprintf(w, "Shared store: %d packs condemned now, deleted by a gc after %s if still unused; %d marks pending.\n",
			r.PacksCondemned, r.Grace, r.MarksPending)
	}
}

// problemView is one verify problem; checkpoint_id is null for damage the store scan found in data
// no checkpoint reads (a second copy of an object, a pack header, an index).
type problemView struct {
	CheckpointID *string `json:"checkpoint_id"`
	Path         string  `json:"path"`
	Problem      string  `json:"problem"`
}

func (h *handler) verify(c *ucli.Context) error {
	if err := noExtraArgs(c, 1); err != nil {
		return err
	}
	if c.Bool("repair") && !c.Bool("read-data") {
		return usagef("--repair needs --read-data: healing starts from reading every stored byte")
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		var heal *port.HealReport
		if c.Bool("repair") {
			rep, err := app.Services.Maintenance.Heal(c.Context)
			if err != nil {
				return err
			}
			heal = &rep
		}
		r, err := app.Services.Maintenance.Verify(c.Context, c.Args().First(), c.Bool("read-data"))
		if err != nil {
			return err
		}
		problems := make([]problemView, 0, len(r.Problems))
		damaged := map[string]bool{}
		for _, p := range r.Problems {
			problems = append(problems, problemView{CheckpointID: optional(string(p.CheckpointID)), Path: p.Path, Problem: p.Problem})
			if p.CheckpointID != "" {
				damaged[string(p.CheckpointID)] = true
			}
		}
		v := verifyView{OK: len(problems) == 0, CheckedCheckpoints: r.CheckedCheckpoints, CheckedObjects: r.CheckedObjects,
			Problems: problems, RetriedReads: r.Retried, ReadData: c.Bool("read-data")}
		if v.ReadData {
			v.ReadFrom = app.StoreLocation()
		}
		if heal != nil {
			v.Healed, v.Unhealed = hashStrings(heal.Healed), hashStrings(heal.Unhealed)
		}
		if err := h.emit(v, func(w io.Writer) {
			if heal != nil {
				_, _ = fmt.Fprintf(w, "Healed %d damaged or missing object(s) from intact copies; %d have none.\n", len(heal.Healed), len(heal.Unhealed))
				for _, x := range v.Unhealed {
					_, _ = fmt.Fprintf(w, "  no intact copy of %s\n", quote(x))
				}
			}
			_, _ = fmt.Fprintf(w, "Checked %d checkpoints, %d objects", r.CheckedCheckpoints, r.CheckedObjects)
			if v.ReadData {
				_, _ = fmt.Fprintf(w, " (content re-hashed, read from %s", quote(v.ReadFrom))
				if app.StoreChecksLocalCopies() {
					_, _ = fmt.Fprint(w, ", not the local cache")
				}
				_, _ = fmt.Fprint(w, ")")
			}
			_, _ = fmt.Fprintln(w, ".")
			if r.Retried > 0 {
				_, _ = fmt.Fprintf(w, "%d transient read errors succeeded when retried.\n", r.Retried)
			}
			for _, p := range problems {
				where := "store"
				if p.CheckpointID != nil {
					where = *p.CheckpointID
				}
				_, _ = fmt.Fprintf(w, "  %s %s: %s\n", where, quote(p.Path), scrub(p.Problem))
			}
		}); err != nil {
			return err
		}
		if len(problems) > 0 {
			return fault.Integrity("%d problems in %d checkpoints; rolling back to them is refused. `plan doctor` explains repairs", len(problems), len(damaged))
		}
		return nil
	})
}

func (h *handler) stats(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		st, err := app.Services.Maintenance.Stats(c.Context)
		if err != nil {
			return err
		}
		budget, err := app.Services.Maintenance.BudgetReport(c.Context)
		if err != nil {
			return err
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		growth := make([]growthView, 0, len(st.GrowthPerDay))
		for _, g := range st.GrowthPerDay {
			growth = append(growth, growthView{Day: g.Day, Checkpoints: g.Checkpoints, StoredBytes: g.StoredBytes})
		}
		v := statsView{
			Checkpoints: st.Checkpoints, LogicalBytes: st.LogicalBytes, StoredBytes: st.Store.StoredBytes,
			Objects: st.Store.Objects, Packs: st.Store.Packs, DedupRatio: st.DedupRatio,
			CheckpointMS:          timingView{Avg: ms(st.AvgCheckpoint), P95: ms(st.P95Checkpoint), Max: ms(st.MaxCheckpoint)},
			CheckpointFailures:    st.CheckpointFailures,
			CheckpointSuccessRate: st.SuccessRate,
			GrowthPerDay:          growth,
			ArchiveBytes:          st.ArchiveBytes,
			Store:                 st.Store.Location,
			Budget:                budgetOf(budget),
			HistoryDir:            app.Services.Layout.Home(),
			DataDir:               h.dataDirSummary(c),
		}
		if c := st.Store.Cache; c != nil {
			v.Cache = &cacheView{Hits: c.Hits, Misses: c.Misses, DownloadedBytes: c.DownloadedBytes,
				CachedBytes: c.CachedBytes, LimitBytes: c.LimitBytes}
			if c.Hits+c.Misses > 0 {
				v.Cache.HitRatio = float64(c.Hits) / float64(c.Hits+c.Misses)
			}
		}
		return h.emit(v, func(w io.Writer) {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			_, _ = fmt.Fprintf(tw, "checkpoints\t%d\n", st.Checkpoints)
			_, _ = fmt.Fprintf(tw, "logical size\t%s (what full copies would take)\n", humanBytes(st.LogicalBytes))
			_, _ = fmt.Fprintf(tw, "stored size\t%s in %d objects, %d packs\n", humanBytes(st.Store.StoredBytes), st.Store.Objects, st.Store.Packs)
			_, _ = fmt.Fprintf(tw, "dedup ratio\t%.1fx\n", st.DedupRatio)
			_, _ = fmt.Fprintf(tw, "checkpoint time\tavg %.1f ms, p95 %.1f ms, max %.1f ms\n", ms(st.AvgCheckpoint), ms(st.P95Checkpoint), ms(st.MaxCheckpoint))
			_, _ = fmt.Fprintf(tw, "checkpoint success\t%.1f%% (%d failed)\n", 100*st.SuccessRate, st.CheckpointFailures)
			_, _ = fmt.Fprintf(tw, "correction archives\t%s\n", humanBytes(st.ArchiveBytes))
			if b := v.Budget; b != nil {
				_, _ = fmt.Fprintf(tw, "budget\t%s of %s (%.0f%%)\n", humanBytes(b.UsedBytes), humanBytes(b.MaxBytes), b.Percent)
			}
			if v.Store != "" {
				_, _ = fmt.Fprintf(tw, "shared store\t%s\n", quote(v.Store))
			}
			_, _ = fmt.Fprintf(tw, "history\t%s\n", quote(v.HistoryDir))
			if d := v.DataDir; d != nil {
				_, _ = fmt.Fprintf(tw, "data directory\t%s: %d workspaces, %s", quote(d.Path), d.Workspaces, humanBytes(d.Bytes))
				if d.Gone > 0 {
					_, _ = fmt.Fprintf(tw, " (%d no longer in their directory: %s, kept until `plan workspaces retire ID`)", d.Gone, humanBytes(d.GoneBytes))
				}
				if d.MaxBytes > 0 {
					_, _ = fmt.Fprintf(tw, ", budget %s (%.0f%%)", humanBytes(d.MaxBytes), 100*float64(d.Bytes)/float64(d.MaxBytes))
				}
				_, _ = fmt.Fprintln(tw)
			}
			if c := v.Cache; c != nil {
				_, _ = fmt.Fprintf(tw, "local cache\t%d hits, %d misses (%.0f%%), %s downloaded, %s of %s held\n",
					c.Hits, c.Misses, 100*c.HitRatio, humanBytes(c.DownloadedBytes), humanBytes(c.CachedBytes), humanBytes(c.LimitBytes))
			}
			for _, g := range st.GrowthPerDay {
				_, _ = fmt.Fprintf(tw, "  %s\t%d checkpoints, +%s stored\n", g.Day, g.Checkpoints, humanBytes(g.StoredBytes))
			}
			_ = tw.Flush()
		})
	})
}

func (h *handler) doctor(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	root, err := h.workspaceRoot()
	if err != nil {
		return err
	}
	setup, err := bootstrap.Inspect(root, h.r.Getenv)
	if err != nil {
		return err
	}
	if c.Bool("rebuild") {
		if c.Bool("repair") {
			return fault.Invalid("--rebuild and --repair are separate steps: rebuild the database first, then run `plan doctor --repair`")
		}
		return h.rebuild(c.Context, setup)
	}
	r := setup.Doctor(c.Context, c.Bool("repair"))
	if err := h.emit(newDoctorView(r), func(w io.Writer) {
		for _, f := range r.Findings {
			mark := "ok  "
			if !f.OK {
				mark = "FAIL"
			}
			_, _ = fmt.Fprintf(w, "%s %s", mark, f.Check)
			if f.Problem != "" {
				_, _ = fmt.Fprintf(w, ": %s", scrub(f.Problem))
			}
			_, _ = fmt.Fprintln(w)
			if f.Repair != "" {
				_, _ = fmt.Fprintf(w, "     → %s\n", scrub(f.Repair))
			}
		}
	}); err != nil {
		return err
	}
	if !r.OK {
		return fault.Integrity("doctor found problems it could not repair; see above")
	}
	return nil
}

func hashStrings(hs []tree.Hash) []string {
	out := make([]string, len(hs))
	for i, x := range hs {
		out[i] = x.String()
	}
	return out
}

// rebuild runs doctor --rebuild.
func (h *handler) rebuild(ctx context.Context, t *bootstrap.Setup) error {
	res, err := t.Rebuild(ctx, time.Now())
	if err != nil {
		return err
	}
	return h.emit(newRebuildView(res), func(w io.Writer) {
		if !res.Rebuilt {
			_, _ = fmt.Fprintf(w, "The database %s is healthy and up to date with the store; nothing to rebuild.\n", quote(t.DatabaseShown()))
			return
		}
		_, _ = fmt.Fprintf(w, "Rebuilt %s (it was %s) from %d records: %d checkpoints, %d plans, %d decisions, %d corrections.\n",
			quote(t.DatabaseShown()), scrub(res.Why), res.Records, res.Checkpoints, res.Plans, res.Decisions, res.Corrections)
		if res.KeptAside != "" {
			_, _ = fmt.Fprintf(w, "The old file is kept as %s.\n", quote(res.KeptAside))
		}
		if res.Pending > 0 {
			_, _ = fmt.Fprintf(w, "%d records of operations a crash cut short were left out (they never completed).\n", res.Pending)
		}
	})
}
