package cli

import (
	"fmt"
	"io"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/correction"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/interfaces/view"
)

func (h *handler) revertCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "revert",
		Usage: "undo one decision's changes and keep what later decisions and you did since (a surgical correction)",
		Description: "Every path the decision changed gets its state from before the decision back. A path changed\n" +
			"since is merged line by line; overlapping changes, binary files and kind changes are conflicts.\n" +
			"With --conflicts refuse (the default) a conflict changes nothing and exits 5; with --conflicts\n" +
			"markers conflicting text files get diff3 markers and a conflicting file's pre-state is written\n" +
			"beside it as PATH.reverted. Later decisions are not re-executed (--run runs a replacement for\n" +
			"this one). Undo: roll back to the safety checkpoint the output names.",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "decision", Usage: "the decision `ID` to revert"},
			&ucli.StringFlag{Name: "reason", Usage: "why it was wrong (kept with the correction)"},
			&ucli.StringFlag{Name: "plan", Usage: "the plan `NAME` (default: the current plan; `plan plans` lists them)"},
			&ucli.StringFlag{Name: "conflicts", Value: "refuse", Usage: "`refuse` (change nothing on a conflict) or markers"},
			&ucli.StringFlag{Name: "run", Usage: "a replacement `CMD` run once for the decision on the reverted workspace (later decisions are not run again)"},
			&ucli.BoolFlag{Name: "dry-run", Usage: "show the per-path plan (restore, merge, conflict); change nothing"},
		},
		Action: h.revert,
	}
}

func newRevertView(req application.RevertRequest, res application.RevertResult) view.Revert {
	v := view.Revert{
		Kind: string(correction.Surgical), DecisionID: req.DecisionID, Attempt: res.Item.Attempt, Reason: req.Reason,
		ConflictMode: string(req.Conflicts), DryRun: res.DryRun, Refused: res.Refused,
		Added: res.Counts.Added, Modified: res.Counts.Modified, Deleted: res.Counts.Deleted,
		Paths: []view.RevertPath{}, Conflicts: []view.RevertPath{}, Command: optional(req.Run), ReexecutedDecisions: []string{},
	}
	for _, p := range res.Paths {
		pv := view.RevertPath{Path: p.Path, Action: string(p.Action), Why: optional(p.Why), Written: optional(p.Written)}
		v.Paths = append(v.Paths, pv)
		if p.Action == application.RevertConflict {
			v.Conflicts = append(v.Conflicts, pv)
		}
	}
	if res.Backup != nil {
		v.SafetyCheckpointID = optional(string(res.Backup.ID()))
	}
	switch {
	case res.Refused:
		v.Status = "refused"
	case res.DryRun:
		v.Status = "dry_run"
	case res.Correction != nil:
		v.CorrectionID, v.ArchiveDir = optional(res.Correction.ID()), optional(res.Correction.Params().ArchiveDir)
		v.NeedsAttention = res.Correction.NeedsAttention()
		v.Status = "reverted"
		if v.NeedsAttention {
			v.Status = "needs_attention"
		}
		if req.Run != "" && res.Correction.Status() == correction.Failed {
			v.Status = "replacement_failed"
		}
		v.ReexecutedDecisions = nonNil(res.Correction.Reexecuted())
	}
	return v
}

func (h *handler) revert(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	id, reason := c.String("decision"), c.String("reason")
	if id == "" {
		return usagef("missing --decision ID (see `plan revert --help`)")
	}
	if reason == "" {
		return usagef("missing --reason TEXT: say why the decision was wrong")
	}
	mode := application.ConflictMode(c.String("conflicts"))
	if mode != application.ConflictRefuse && mode != application.ConflictMarkers {
		return usagef("--conflicts %q: want refuse or markers", mode)
	}
	req := application.RevertRequest{
		DecisionID: id, Reason: reason, Plan: c.String("plan"), Conflicts: mode, DryRun: c.Bool("dry-run"),
		Run: c.String("run"), Progress: h.progress(), Live: h.live(), Events: h.events(), Warn: h.warn,
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		svc := app.Services.Corrections
		if !req.DryRun && !h.yes {
			dry := req
			dry.DryRun = true
			preview, err := svc.RevertDecision(c.Context, dry)
			if err != nil {
				return err
			}
			if !preview.Refused {
				if err := h.confirm("revert", revertSummary(newRevertView(dry, preview))); err != nil {
					return err
				}
			}
		}
		res, err := svc.RevertDecision(c.Context, req)
		if err != nil && !res.Refused && res.Correction == nil {
			return err
		}
		v := newRevertView(req, res)
		if eerr := h.emit(v, func(w io.Writer) { printRevert(w, v) }); eerr != nil {
			return eerr
		}
		return err
	})
}

// revertSummary is what the confirmation shows.
func revertSummary(v view.Revert) string {
	var b strings.Builder
	_, _ = fmt.Fprintf(&b, "Reverting %s (attempt %d) alone would change %d path(s):\n", quote(v.DecisionID), v.Attempt, len(v.Paths))
	writeRevertPaths(&b, v.Paths)
	if len(v.Conflicts) > 0 {
		_, _ = fmt.Fprintf(&b, "and leave %d conflict(s) to resolve.\n", len(v.Conflicts))
	}
	if v.Command != nil {
		_, _ = fmt.Fprintf(&b, "then run for %s alone: %s\n", quote(v.DecisionID), quote(*v.Command))
	}
	return b.String()
}

func writeRevertPaths(w io.Writer, paths []view.RevertPath) {
	for _, p := range paths {
		line := fmt.Sprintf("  %-8s %s", p.Action, quote(p.Path))
		if p.Why != nil {
			line += ": " + quote(*p.Why)
		}
		if p.Written != nil {
			line += " (wrote " + quote(*p.Written) + ")"
		}
		_, _ = fmt.Fprintln(w, line)
	}
}

func printRevert(w io.Writer, v view.Revert) {
	// A dry run shows the whole per-path plan even when the real revert would be refused (its status
	// is then "refused"), and says how to go ahead.
	switch {
	case v.DryRun:
		_, _ = fmt.Fprintf(w, "Reverting %s (attempt %d) alone would do, path by path (nothing was changed):\n", quote(v.DecisionID), v.Attempt)
	case v.Refused:
		_, _ = fmt.Fprintf(w, "Reverting %s (attempt %d) conflicts with later changes in %d path(s); nothing was changed:\n", quote(v.DecisionID), v.Attempt, len(v.Conflicts))
		writeRevertPaths(w, v.Conflicts)
		return
	default:
		_, _ = fmt.Fprintf(w, "Reverted %s (attempt %d) alone as correction %s; later decisions keep their results:\n",
			quote(v.DecisionID), v.Attempt, deref(v.CorrectionID))
	}
	writeRevertPaths(w, v.Paths)
	_, _ = fmt.Fprintf(w, "%d added, %d modified, %d deleted.\n", v.Added, v.Modified, v.Deleted)
	if v.DryRun {
		if len(v.Conflicts) > 0 && v.ConflictMode == string(application.ConflictRefuse) {
			_, _ = fmt.Fprintf(w, "It would be refused for %d conflict(s); --conflicts markers writes them for you to resolve.\n", len(v.Conflicts))
		}
		return
	}
	if v.NeedsAttention {
		_, _ = fmt.Fprintf(w, "Needs attention: %d conflict(s) left for you to resolve (markers or PATH.reverted where written).\n", len(v.Conflicts))
	}
	if v.Command != nil {
		ran := "did not succeed"
		if v.Status != "replacement_failed" {
			ran = "succeeded"
		}
		_, _ = fmt.Fprintf(w, "replacement:         %s (%s)\n", quote(*v.Command), ran)
	}
	_, _ = fmt.Fprintf(w, "safety checkpoint:   %s (roll back to it to undo the revert)\n", deref(v.SafetyCheckpointID))
	_, _ = fmt.Fprintf(w, "archive:             %s\n", quote(deref(v.ArchiveDir)))
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}
