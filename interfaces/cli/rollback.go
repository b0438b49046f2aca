package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/aymanbagabas/go-udiff"
	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// maxPatchBytes bounds the files --patch renders; larger ones are reported as binary-like.
const maxPatchBytes = 1 << 20

func (h *handler) diff(c *ucli.Context) error {
	from, err := arg(c, 0, "FROM")
	if err != nil {
		return err
	}
	if err := noExtraArgs(c, 2); err != nil {
		return err
	}
	to := c.Args().Get(1)
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		svc := app.Services.Checkpoints
		res, err := svc.Diff(c.Context, from, to, h.progress())
		if err != nil {
			return err
		}
		v := diffView{From: string(res.From.ID()), Changes: newChangeViews(res.Changes)}
		if res.To != nil {
			v.To = optional(string(res.To.ID()))
		}
		if c.Bool("patch") {
			for i, ch := range res.Changes {
				if v.Changes[i].Patch, err = patch(svc, ch, res.To == nil); err != nil {
					return err
				}
			}
		}
		return h.emit(v, func(w io.Writer) {
			for _, ch := range v.Changes {
				_, _ = fmt.Fprintf(w, "%s %s\n", tree.ChangeType(ch.Change).Letter(), ch.Path)
			}
			for _, ch := range v.Changes {
				_, _ = io.WriteString(w, ch.Patch)
			}
		})
	})
}

// patch renders a unified diff of a changed text file; binary or large files get a one-line note.
func patch(svc *application.CheckpointService, ch tree.Change, live bool) (string, error) {
	side := func(e *tree.Entry, isLive bool) (string, bool, error) {
		if e == nil || e.Kind != tree.KindFile {
			return "", true, nil
		}
		if e.Size > maxPatchBytes {
			return "", false, nil
		}
		rc, err := svc.OpenContent(*e, isLive)
		if err != nil {
			return "", false, err
		}
		defer func() { _ = rc.Close() }()
		b, err := io.ReadAll(io.LimitReader(rc, maxPatchBytes+1))
		if err != nil {
			return "", false, err
		}
		text := len(b) <= maxPatchBytes && utf8.Valid(b) && !bytes.Contains(b, []byte{0})
		return string(b), text, nil
	}
	if (ch.From != nil && ch.From.Kind != tree.KindFile) && (ch.To != nil && ch.To.Kind != tree.KindFile) {
		return "", nil
	}
	old, oldText, err := side(ch.From, false)
	if err != nil {
		return "", err
	}
	cur, newText, err := side(ch.To, live)
	if err != nil {
		return "", err
	}
	if !oldText || !newText {
		return fmt.Sprintf("Binary or large file %s differs\n", ch.Path), nil
	}
	return udiff.Unified("a/"+ch.Path, "b/"+ch.Path, old, cur), nil
}

func (h *handler) rollback(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	ref := c.String("to-checkpoint")
	if ref == "" {
		return usagef("missing --to-checkpoint ID (see `plan rollback --help`)")
	}
	dry := c.Bool("dry-run")
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		svc := app.Services.Checkpoints
		if !dry && !h.yes {
			preview, err := svc.Rollback(c.Context, application.RollbackRequest{Ref: ref, DryRun: true})
			if err != nil {
				return err
			}
			if err := h.confirm("rollback", rollbackSummary(preview)); err != nil {
				return err
			}
		}
		res, err := svc.Rollback(c.Context, application.RollbackRequest{
			Ref: ref, DryRun: dry, Progress: h.progress(), Warn: h.warn,
		})
		if err != nil {
			return err
		}
		for _, k := range res.Kept {
			h.warn(fmt.Sprintf("left %q as it is: it holds data outside every snapshot (ignored)", k))
		}
		return h.emit(newRollbackView(res, res.Kept), func(w io.Writer) {
			if dry {
				_, _ = io.WriteString(w, rollbackSummary(res))
				return
			}
			_, _ = fmt.Fprintf(w, "Rolled back to %s: %d added, %d modified, %d deleted.\n",
				res.Target.ID(), res.Counts.Added, res.Counts.Modified, res.Counts.Deleted)
			if len(res.RevertedDecisions) > 0 {
				_, _ = fmt.Fprintf(w, "Reverted decisions: %s\n", strings.Join(res.RevertedDecisions, ", "))
			}
			_, _ = fmt.Fprintf(w, "Undo with: plan rollback --to-checkpoint %s\n", res.Backup.ID())
		})
	})
}

func rollbackSummary(r application.RollbackResult) string {
	var b strings.Builder
	_, _ = fmt.Fprintf(&b, "Rolling back to %s (%s, %s) would add %d, modify %d and delete %d files:\n",
		r.Target.ID(), r.Target.Type(), r.Target.CreatedAt().Format("2006-01-02 15:04:05"),
		r.Counts.Added, r.Counts.Modified, r.Counts.Deleted)
	const show = 20
	for i, ch := range r.Changes {
		if i == show {
			_, _ = fmt.Fprintf(&b, "  … and %d more\n", len(r.Changes)-show)
			break
		}
		_, _ = fmt.Fprintf(&b, "  %s %s\n", ch.Type.Letter(), ch.Path)
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
	res, err := app.Services.Guard.Recover(c.Context)
	if err != nil {
		return err
	}
	v := recoverView{Recovered: res.Recovered}
	if res.Operation != nil {
		v.Operation = optional(res.Operation.ID)
		v.Kind = optional(res.Operation.Kind)
		v.Outcome = optional(res.Outcome)
	}
	if res.Recorded != "" {
		v.Recorded = optional(res.Recorded)
		v.Unrecorded = res.Unrecorded
	}
	return h.emit(v, func(w io.Writer) {
		if !res.Recovered {
			_, _ = fmt.Fprintln(w, "Nothing to recover: no operation was interrupted.")
			return
		}
		if res.Recorded != "" {
			_, _ = fmt.Fprintf(w, "The workspace had changed since the crash: %d path(s) recorded first as checkpoint %s.\n",
				len(res.Unrecorded), res.Recorded)
		}
		_, _ = fmt.Fprintf(w, "Recovered interrupted %s %s: %s.\n", res.Operation.Kind, res.Operation.ID, res.Outcome)
	})
}
