package cli

import (
	"bytes"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/aymanbagabas/go-udiff"
	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// maxPatchBytes bounds the files --patch renders; larger ones are reported as binary-like.
const maxPatchBytes = 1 << 20

func (h *handler) diffCommand() *ucli.Command {
	return &ucli.Command{
		Name: "diff", Usage: "compare two checkpoints, or a checkpoint with the workspace", ArgsUsage: "FROM [TO]",
		Flags:  []ucli.Flag{&ucli.BoolFlag{Name: "patch", Usage: "add a unified diff for text files"}},
		Action: h.diff,
	}
}

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
