package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/interfaces/view"
)

func (h *handler) correctionCommands() []*ucli.Command {
	return []*ucli.Command{
		{
			Name: "correct", Usage: "revert a decision and everything after it, archive what they produced, re-execute",
			Flags: []ucli.Flag{
				&ucli.StringFlag{Name: "decision", Usage: "the decision `ID` to correct"},
				&ucli.StringFlag{Name: "reason", Usage: "why it was wrong (kept with the correction)"},
				&ucli.StringFlag{Name: "run", Usage: "a corrected `CMD` replacing the decision's command"},
				&ucli.BoolFlag{Name: "no-reexecute", Usage: "revert and archive only"},
				&ucli.StringFlag{Name: "validate", Usage: "run `CMD` in the workspace once the correction is done; its failure is exit 1 (validation_failed), the correction left in place"},
				&ucli.BoolFlag{Name: "dry-run", Usage: "show the scope, the files to archive and the rollback; change nothing"},
				&ucli.StringFlag{Name: "plan", Usage: "the plan `NAME` (default: the current plan; `plan plans` lists them)"},
			},
			Action: h.correct,
		},
		{
			Name: "correction", Usage: "list and show corrections",
			Subcommands: []*ucli.Command{
				{Name: "list", Usage: "list corrections, newest first", Flags: []ucli.Flag{limitFlag()}, Action: h.correctionList},
				{Name: "show", Usage: "show a correction", ArgsUsage: "ID", Action: h.correctionShow},
				{
					Name: "prune", Usage: "remove the archives of old, finished corrections (the records stay)",
					Flags: []ucli.Flag{
						&ucli.IntFlag{Name: "keep", Usage: "the newest `N` finished corrections keep their archive"},
						&ucli.StringFlag{Name: "older-than", Usage: "only remove archives of corrections older than `DURATION` (e.g. 30d)"},
						&ucli.BoolFlag{Name: "dry-run", Usage: "show what would be removed"},
					},
					Action: h.correctionPrune,
				},
			},
		},
	}
}

type correctionView struct {
	CorrectionID         *string         `json:"correction_id"`
	DecisionID           string          `json:"decision_id"`
	Reason               string          `json:"reason"`
	Command              *string         `json:"command"`
	RevertedDecisions    []string        `json:"reverted_decisions"`
	SafetyCheckpointID   *string         `json:"safety_checkpoint_id"`
	RollbackCheckpointID *string         `json:"rollback_checkpoint_id"`
	ArchiveDir           *string         `json:"archive_dir"`
	ReexecutedDecisions  []string        `json:"reexecuted_decisions"`
	Status               string          `json:"status"`
	CreatedAt            *string         `json:"created_at,omitempty"`
	FinishedAt           *string         `json:"finished_at,omitempty"`
	Scope                []scopeItemView `json:"scope"`
	DryRun               bool            `json:"dry_run"`
	Rollback             *rollbackCounts `json:"rollback,omitempty"`
	// Kind is "full" (plan correct) or "surgical" (plan revert); a surgical correction that left
	// conflicts for the user needs attention and lists them.
	Kind           string         `json:"kind"`
	NeedsAttention bool           `json:"needs_attention"`
	Conflicts      []conflictView `json:"conflicts"`
	// UndoneBy is the `plan undo` that undid the correction (null while it stands), as `plan
	// history` marks its entry.
	UndoneBy *string `json:"undone_by"`
}

// shownStatus is the correction's status as list and show print it: "(undone)" added once an undo
// took it back.
func (v correctionView) shownStatus() string {
	if v.UndoneBy != nil {
		return v.Status + " (undone)"
	}
	return v.Status
}

type conflictView struct {
	Path    string  `json:"path"`
	Why     string  `json:"why"`
	Written *string `json:"written"`
	// ResolvedAt is when plan resolve marked it (null while it is not).
	ResolvedAt *string `json:"resolved_at"`
}

type scopeItemView struct {
	DecisionID string          `json:"decision_id"`
	Attempt    int             `json:"attempt"`
	Artifacts  []view.Artifact `json:"artifacts"`
}

type rollbackCounts struct {
	Added    int           `json:"added"`
	Modified int           `json:"modified"`
	Deleted  int           `json:"deleted"`
	Changes  []view.Change `json:"changes"`
}

func newScopeViews(items []correction.Item) []scopeItemView {
	out := make([]scopeItemView, 0, len(items))
	for _, it := range items {
		v := scopeItemView{DecisionID: it.DecisionID, Attempt: it.Attempt, Artifacts: []view.Artifact{}}
		for _, a := range it.Artifacts {
			v.Artifacts = append(v.Artifacts, view.Artifact{Path: a.Path, Change: string(a.Change), Size: a.Size, SHA256: a.SHA256})
		}
		out = append(out, v)
	}
	return out
}

func newCorrectionView(c *correction.Correction) correctionView {
	p := c.Params()
	return correctionView{
		CorrectionID: optional(p.ID), DecisionID: p.DecisionID, Reason: p.Reason, Command: optional(p.Command),
		RevertedDecisions: c.RevertedDecisions(), SafetyCheckpointID: optional(p.SafetyCheckpointID),
		RollbackCheckpointID: optional(p.RollbackCheckpointID), ArchiveDir: optional(p.ArchiveDir),
		ReexecutedDecisions: nonNil(c.Reexecuted()), Status: c.ShownStatus(),
		CreatedAt: timeString(p.CreatedAt), FinishedAt: timeString(c.FinishedAt()), Scope: newScopeViews(p.Scope),
		Kind: string(c.Kind()), NeedsAttention: c.NeedsAttention(), Conflicts: newConflictViews(p.Conflicts),
	}
}

func newConflictViews(cs []correction.Conflict) []conflictView {
	out := make([]conflictView, 0, len(cs))
	for _, c := range cs {
		out = append(out, conflictView{Path: c.Path, Why: c.Why, Written: optional(c.Written), ResolvedAt: timeString(c.ResolvedAt)})
	}
	return out
}

func (h *handler) correct(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	id, reason := c.String("decision"), c.String("reason")
	if id == "" {
		return usagef("missing --decision ID (see `plan correct --help`)")
	}
	if reason == "" {
		return usagef("missing --reason TEXT: say why the decision was wrong")
	}
	req := application.CorrectRequest{
		DecisionID: id, Reason: reason, Run: c.String("run"), NoReexecute: c.Bool("no-reexecute"), Plan: c.String("plan"),
		Validate: c.String("validate"),
		DryRun:   c.Bool("dry-run"), Progress: h.progress(), Live: h.live(), Events: h.events(), Warn: h.warn,
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		svc := app.Services.Corrections
		if !req.DryRun && !h.yes {
			dry := req
			dry.DryRun = true
			preview, err := svc.Correct(c.Context, dry)
			if err != nil {
				return err
			}
			if err := h.confirm("correction", correctionSummary(dry, preview)); err != nil {
				return err
			}
		}
		res, err := svc.Correct(c.Context, req)
		if err != nil {
			if res.Correction != nil && !h.json {
				printCorrection(h.r.Stderr, newCorrectionView(res.Correction))
			}
			return err
		}
		if res.DryRun {
			v := correctionView{
				DecisionID: id, Reason: reason, Command: optional(req.Run), DryRun: true, Status: "dry_run",
				Kind: string(correction.Full), Conflicts: []conflictView{},
				Scope: newScopeViews(res.Scope), ReexecutedDecisions: []string{},
				RollbackCheckpointID: optional(string(res.Rollback.Target.ID())),
				Rollback: &rollbackCounts{Added: res.Rollback.Counts.Added, Modified: res.Rollback.Counts.Modified,
					Deleted: res.Rollback.Counts.Deleted, Changes: newChangeViews(res.Rollback.Changes)},
			}
			for _, it := range res.Scope {
				v.RevertedDecisions = append(v.RevertedDecisions, it.DecisionID)
			}
			return h.emit(v, func(w io.Writer) { _, _ = io.WriteString(w, correctionSummary(req, res)) })
		}
		v := newCorrectionView(res.Correction)
		v.Rollback = &rollbackCounts{Added: res.Rollback.Counts.Added, Modified: res.Rollback.Counts.Modified,
			Deleted: res.Rollback.Counts.Deleted, Changes: newChangeViews(res.Rollback.Changes)}
		return h.emit(v, func(w io.Writer) { printCorrection(w, v) })
	})
}

func correctionSummary(req application.CorrectRequest, res application.CorrectResult) string {
	var b strings.Builder
	ids := make([]string, len(res.Scope))
	files := 0
	for i, it := range res.Scope {
		ids[i] = fmt.Sprintf("%s (attempt %d)", quote(it.DecisionID), it.Attempt)
		files += len(it.Artifacts)
	}
	_, _ = fmt.Fprintf(&b, "Correcting %s would revert %s,\n", quote(req.DecisionID), strings.Join(ids, ", "))
	_, _ = fmt.Fprintf(&b, "archive their %d artifacts:\n", files)
	for _, it := range res.Scope {
		for _, a := range it.Artifacts {
			_, _ = fmt.Fprintf(&b, "  %s %s\n", a.Change.Letter(), quote(it.DecisionID+"/"+a.Path))
		}
	}
	_, _ = io.WriteString(&b, rollbackSummary(res.Rollback))
	switch {
	case req.NoReexecute:
		b.WriteString("and not re-execute anything (--no-reexecute).\n")
	case req.Run != "":
		_, _ = fmt.Fprintf(&b, "then re-execute from %s with the command: %s\n", quote(req.DecisionID), quote(req.Run))
	default:
		_, _ = fmt.Fprintf(&b, "then re-execute from %s.\n", quote(req.DecisionID))
	}
	return b.String()
}

func printCorrection(w io.Writer, v correctionView) {
	or := func(s *string) string {
		if s == nil {
			return "-"
		}
		return quote(*s)
	}
	_, _ = fmt.Fprintf(w, "correction %s of %s: %s\n", or(v.CorrectionID), quote(v.DecisionID), v.shownStatus())
	if v.UndoneBy != nil {
		_, _ = fmt.Fprintf(w, "undone by:           %s (plan redo takes the undo back)\n", quote(*v.UndoneBy))
	}
	if v.Kind == string(correction.Surgical) {
		_, _ = fmt.Fprintf(w, "kind:                surgical (%s alone; later decisions kept)\n", quote(v.DecisionID))
	}
	if v.NeedsAttention {
		open := 0
		for _, c := range v.Conflicts {
			if c.ResolvedAt == nil {
				open++
			}
		}
		_, _ = fmt.Fprintf(w, "needs attention:     %d conflict(s) left to resolve (plan resolve PATH marks one done)\n", open)
		for _, c := range v.Conflicts {
			if c.ResolvedAt != nil {
				continue
			}
			line := fmt.Sprintf("  %s: %s", quote(c.Path), quote(c.Why))
			if c.Written != nil {
				line += " (wrote " + quote(*c.Written) + ")"
			}
			_, _ = fmt.Fprintln(w, line)
		}
	}
	_, _ = fmt.Fprintf(w, "reason:              %s\n", quote(v.Reason))
	if v.Command != nil {
		_, _ = fmt.Fprintf(w, "corrected command:   %s\n", quote(*v.Command))
	}
	_, _ = fmt.Fprintf(w, "reverted:            %s\n", strings.Join(quoteEach(v.RevertedDecisions), ", "))
	_, _ = fmt.Fprintf(w, "re-executed:         %s\n", strings.Join(quoteEach(v.ReexecutedDecisions), ", "))
	_, _ = fmt.Fprintf(w, "safety checkpoint:   %s (roll back to it to undo the correction)\n", or(v.SafetyCheckpointID))
	if v.Kind == string(correction.Surgical) {
		_, _ = fmt.Fprintf(w, "reverted against:    %s (%s's pre_decision checkpoint)\n", or(v.RollbackCheckpointID), quote(v.DecisionID))
	} else {
		_, _ = fmt.Fprintf(w, "rolled back to:      %s\n", or(v.RollbackCheckpointID))
	}
	_, _ = fmt.Fprintf(w, "archive:             %s\n", or(v.ArchiveDir))
}

func (h *handler) correctionList(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		cs, err := app.Services.Corrections.List(c.Context)
		if err != nil {
			return err
		}
		if cs, err = limited(c, cs); err != nil {
			return err
		}
		undone, err := app.Services.Corrections.UndoneBy(c.Context)
		if err != nil {
			return err
		}
		views := make([]correctionView, 0, len(cs))
		for _, x := range cs {
			v := newCorrectionView(x)
			v.UndoneBy = optional(undone[x.ID()])
			views = append(views, v)
		}
		return h.emit(views, func(w io.Writer) {
			if len(views) == 0 {
				_, _ = fmt.Fprintln(w, "No corrections yet.")
				return
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			_, _ = fmt.Fprintln(tw, "ID\tDECISION\tSTATUS\tCREATED\tREASON")
			for i, x := range cs {
				_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", x.ID(), quote(x.Params().DecisionID), views[i].shownStatus(),
					localTime(x.Params().CreatedAt), quote(x.Params().Reason))
			}
			_ = tw.Flush()
		})
	})
}

func (h *handler) correctionShow(c *ucli.Context) error {
	ref, err := arg(c, 0, "ID")
	if err != nil {
		return err
	}
	if err := noExtraArgs(c, 1); err != nil {
		return err
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		x, err := app.Services.Corrections.Show(c.Context, ref)
		if err != nil {
			return err
		}
		undone, err := app.Services.Corrections.UndoneBy(c.Context)
		if err != nil {
			return err
		}
		v := newCorrectionView(x)
		v.UndoneBy = optional(undone[x.ID()])
		return h.emit(v, func(w io.Writer) {
			printCorrection(w, v)
			for _, it := range v.Scope {
				for _, a := range it.Artifacts {
					_, _ = fmt.Fprintf(w, "  %s %s (%d bytes)\n", tree.ChangeType(a.Change).Letter(), quote(it.DecisionID+"/"+a.Path), a.Size)
				}
			}
		})
	})
}

func (h *handler) correctionPrune(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	if !c.IsSet("keep") {
		return usagef("missing --keep N (see `plan correction prune --help`)")
	}
	req := application.PruneRequest{Keep: c.Int("keep"), DryRun: c.Bool("dry-run")}
	if c.IsSet("older-than") {
		d, err := parseAge(c.String("older-than"))
		if err != nil {
			return err
		}
		req.OlderThan = d
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		res, err := app.Services.Maintenance.PruneArchives(c.Context, req)
		if err != nil {
			return err
		}
		v := archivePruneView{Deleted: nonNil(res.Deleted), Kept: nonNil(res.Kept), Reasons: res.Reasons, BytesFreed: res.BytesFreed, DryRun: req.DryRun}
		return h.emit(v, func(w io.Writer) {
			// A dry run measures nothing (BytesFreed is 0), so it names no size.
			if req.DryRun {
				_, _ = fmt.Fprintf(w, "Would remove the archives of %d correction(s); %d kept.\n", len(res.Deleted), len(res.Kept))
			} else {
				_, _ = fmt.Fprintf(w, "Removed the archives of %d correction(s), %s; %d kept.\n", len(res.Deleted), humanBytes(res.BytesFreed), len(res.Kept))
			}
			for _, id := range res.Kept {
				if why := res.Reasons[id]; why != "" {
					_, _ = fmt.Fprintf(w, "  kept %s: %s\n", id, scrub(why))
				}
			}
		})
	})
}
