package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

func (h *handler) restoreCommands() []*ucli.Command {
	return []*ucli.Command{
		{
			Name: "rollback", Usage: "restore the workspace (or only the given paths) to a checkpoint, atomically",
			ArgsUsage: "[--] [PATH…]",
			Description: "With PATHs, only those files and directories (recursively) are restored, including deleting what\n" +
				"the checkpoint does not have under them; everything else, and every decision's state, stays as it is.\n" +
				"A relative PATH is taken from the current directory when it is inside the workspace, otherwise from\n" +
				"the workspace root.",
			Flags: []ucli.Flag{
				&ucli.StringFlag{Name: "to-checkpoint", Usage: "the checkpoint `ID` to restore"},
				&ucli.StringFlag{Name: "at", Usage: "instead of an ID: the newest checkpoint created at or before `TIME` (RFC 3339, or a duration ago such as 2h or 3d)"},
				&ucli.StringFlag{Name: "mode", Value: "both", Usage: "both: workspace and decision states; files: the workspace only; state: decision states only"},
				&ucli.BoolFlag{Name: "dry-run", Usage: "show what would change; change nothing"},
				&ucli.StringFlag{Name: "validate", Usage: "run `CMD` in the workspace after the restore; its failure is exit 1 (validation_failed), the workspace left restored"},
			},
			Action: h.rollback,
		},
		{Name: "recover", Usage: "finish or undo an operation a crash interrupted", Action: h.recoverCmd},
	}
}

func (h *handler) rollback(c *ucli.Context) error {
	ref := c.String("to-checkpoint")
	var at *time.Time
	switch {
	case ref != "" && c.IsSet("at"):
		return usagef("give --to-checkpoint ID or --at TIME, not both")
	case ref == "" && !c.IsSet("at"):
		return usagef("missing --to-checkpoint ID or --at TIME (see `plan rollback --help`)")
	case c.IsSet("at"):
		t, err := parseWhen(c.String("at"), time.Now())
		if err != nil {
			return err
		}
		at = &t
	}
	mode, err := application.ParseRestoreMode(c.String("mode"))
	if err != nil {
		return err
	}
	dry := c.Bool("dry-run")
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		svc := app.Services.Checkpoints
		paths, err := h.workspacePaths(app.Services.Layout.Root, c.Args().Slice())
		if err != nil {
			return err
		}
		req := application.RollbackRequest{Ref: ref, At: at, Mode: mode, Paths: paths, DryRun: true}
		if !dry && !h.yes {
			preview, err := svc.Rollback(c.Context, req)
			if err != nil {
				return err
			}
			if err := h.confirm("rollback", rollbackSummary(preview)); err != nil {
				return err
			}
		}
		req.DryRun, req.Progress, req.Warn = dry, h.progress(), h.warn
		req.Validate, req.Live = c.String("validate"), h.live()
		res, err := svc.Rollback(c.Context, req)
		if err != nil {
			return err
		}
		if at != nil && !h.json {
			_, _ = fmt.Fprintf(h.r.Stderr, "plan: --at %s picked checkpoint %s, created %s\n",
				c.String("at"), res.Target.ID(), localTime(res.Target.CreatedAt()))
		}
		for _, k := range res.Kept {
			h.warn(fmt.Sprintf("left %q as it is: it holds data outside every snapshot (ignored)", k))
		}
		v := newRollbackView(res, res.Kept)
		v.Paths = paths
		return h.emit(v, func(w io.Writer) {
			if dry {
				_, _ = io.WriteString(w, rollbackSummary(res))
				return
			}
			if len(paths) > 0 {
				_, _ = fmt.Fprintf(w, "Restored %s from %s: %d added, %d modified, %d deleted; nothing else changed.\n",
					strings.Join(quoteEach(paths), ", "), res.Target.ID(), res.Counts.Added, res.Counts.Modified, res.Counts.Deleted)
			} else if mode == application.RestoreState {
				_, _ = fmt.Fprintf(w, "Decision states rolled back to %s; the workspace was left as it is.\n", res.Target.ID())
			} else {
				_, _ = fmt.Fprintf(w, "Rolled back to %s: %d added, %d modified, %d deleted.\n",
					res.Target.ID(), res.Counts.Added, res.Counts.Modified, res.Counts.Deleted)
			}
			if len(res.RevertedDecisions) > 0 {
				_, _ = fmt.Fprintf(w, "Reverted decisions: %s\n", strings.Join(quoteEach(res.RevertedDecisions), ", "))
			}
			if res.Backup != nil {
				_, _ = fmt.Fprintf(w, "Undo with: plan rollback --to-checkpoint %s\n", res.Backup.ID())
			}
		})
	})
}

func rollbackSummary(r application.RollbackResult) string {
	var b strings.Builder
	if r.Mode == application.RestoreState {
		reverts := "no decision"
		if len(r.RevertedDecisions) > 0 {
			reverts = strings.Join(quoteEach(r.RevertedDecisions), ", ")
		}
		_, _ = fmt.Fprintf(&b, "Rolling the decision states back to %s (%s) would revert %s; the workspace stays as it is.\n",
			r.Target.ID(), localTime(r.Target.CreatedAt()), reverts)
		return b.String()
	}
	n := r.Counts.Added + r.Counts.Modified + r.Counts.Deleted
	_, _ = fmt.Fprintf(&b, "Rolling back to %s (%s, %s) would change %d %s (%d added, %d modified, %d deleted):\n",
		r.Target.ID(), r.Target.Type(), localTime(r.Target.CreatedAt()), n, plural(n, "file", "files"),
		r.Counts.Added, r.Counts.Modified, r.Counts.Deleted)
	const show = 20
	for i, ch := range r.Changes {
		if i == show {
			_, _ = fmt.Fprintf(&b, "  … and %d more\n", len(r.Changes)-show)
			break
		}
		_, _ = fmt.Fprintf(&b, "  %s %s\n", ch.Type.Letter(), quote(ch.Path))
	}
	if len(r.Changes) == 0 {
		b.WriteString("  (the workspace already matches)\n")
	}
	return b.String()
}

func (h *handler) recoverCmd(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	app, err := h.open(c.Context, false)
	if err != nil {
		return err
	}
	defer func() { _ = app.Close() }()
	res, err := app.Services.Maintenance.Recover(c.Context)
	// Then an interrupted clone, whose journal (if it got that far) was just finished.
	var clone *cloneMarker
	cloneOp := ""
	if err == nil {
		var m cloneMarker
		var ok bool
		if m, ok, err = readCloneMarker(app.Services.Layout.State()); err == nil && ok {
			if cloneOp, err = h.finishClone(c.Context, app, m); err == nil {
				clone = &m
			}
		}
	}
	if err == nil && !res.Recovered && clone == nil {
		h.op = nil // nothing was interrupted: not an operation
	}
	h.recordOp(c.Context, app, err)
	if err != nil {
		return err
	}
	v := recoverView{Recovered: res.Recovered || clone != nil}
	switch {
	case res.Operation != nil:
		v.Operation = optional(res.Operation.ID)
		v.Kind = optional(res.Operation.Kind)
		v.Outcome = optional(res.Outcome)
	case clone != nil:
		if cloneOp != "" {
			v.Operation = optional(cloneOp)
		}
		v.Kind, v.Outcome = optional("clone"), optional("completed")
	}
	if res.Recorded != "" {
		v.Recorded = optional(res.Recorded)
		v.Unrecorded = res.Unrecorded
	}
	return h.emit(v, func(w io.Writer) {
		if !v.Recovered {
			_, _ = fmt.Fprintln(w, "Nothing to recover: no operation was interrupted.")
			return
		}
		if res.Recorded != "" {
			_, _ = fmt.Fprintf(w, "The workspace had changed since the crash: %d path(s) recorded first as checkpoint %s.\n",
				len(res.Unrecorded), res.Recorded)
		}
		if res.Operation != nil {
			_, _ = fmt.Fprintf(w, "Recovered interrupted %s %s: %s.\n", res.Operation.Kind, res.Operation.ID, scrub(res.Outcome))
		}
		if clone != nil {
			_, _ = fmt.Fprintf(w, "Finished the interrupted clone of checkpoint %s of workspace %s.\n", clone.SourceCheckpoint, clone.SourceWorkspace)
		}
	})
}

// parseWhen reads --at: an RFC 3339 time, or a duration (2h, 3d) meaning that long before now.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := parseAge(s)
	if err != nil {
		return time.Time{}, fault.Invalid("--at %q is neither an RFC 3339 time nor a duration such as 2h or 3d", s)
	}
	return now.Add(-d), nil
}

// workspacePaths turns PATH arguments into workspace-relative slash paths. A relative one is taken
// from where the command started (the current directory, or -C DIR) when that is inside the
// workspace (as git does), otherwise from the workspace root. Symlinks are resolved only on
// the way to the workspace (a route to it from outside); inside it a path is taken as written, so a
// symlink that replaced a checkpoint's directory is never followed to restore another path.
// A path outside the workspace, or the workspace itself, is invalid input.
func (h *handler) workspacePaths(root string, args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(args))
	for _, a := range args {
		rel, err := h.workspacePath(root, a)
		if err != nil {
			return nil, err
		}
		if rel == "" {
			return nil, fault.Invalid("%s is the whole workspace: to restore everything, give no path", a)
		}
		out = append(out, rel)
	}
	return out, nil
}

// workspacePath is workspacePaths for one path; the workspace itself is "".
func (h *handler) workspacePath(root, a string) (string, error) {
	if a == "" {
		return "", fault.Invalid("an empty path")
	}
	cwd := h.root // where the command started: the current directory, or -C DIR
	if r, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = r
	}
	base := root
	if rel, err := filepath.Rel(root, cwd); err == nil && (filepath.IsLocal(rel) || rel == ".") {
		base = cwd
	}
	p := a
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	rel, ok := relToWorkspace(root, filepath.Clean(p))
	switch {
	case !ok:
		return "", fault.Invalid("%s is outside the workspace %s", a, root)
	case rel == ".":
		return "", nil
	}
	return filepath.ToSlash(rel), nil
}

// relToWorkspace maps p (absolute and clean) to its path relative to root (absolute, resolved).
// The directories above p are resolved through symlinks from the top down only until one of them
// is root or inside it; the rest of p is taken as written. p itself is never resolved.
func relToWorkspace(root, p string) (string, bool) {
	inside := func(dir string) (string, bool) {
		rel, err := filepath.Rel(root, dir)
		return rel, err == nil && (filepath.IsLocal(rel) || rel == ".")
	}
	if rel, ok := inside(p); ok {
		return rel, true // written inside the workspace: no symlink is followed
	}
	var above []string // p's directories, the deepest first
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		above = append(above, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i := len(above) - 1; i >= 0; i-- {
		r, err := filepath.EvalSymlinks(above[i])
		if err != nil {
			return "", false // a missing directory outside the workspace leads nowhere in it
		}
		if rel, ok := inside(r); ok {
			rest, _ := filepath.Rel(above[i], p) // above[i] is a directory above p
			return filepath.Join(rel, rest), true
		}
	}
	return "", false
}
