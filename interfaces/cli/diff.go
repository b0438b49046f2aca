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

func (h *handler) diffCommand() *ucli.Command {
	return &ucli.Command{
		Name: "diff", Usage: "compare two checkpoints, or a checkpoint with the workspace", ArgsUsage: "FROM [TO]",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "patch", Usage: "add a unified diff for text files"},
			&ucli.BoolFlag{Name: "stat", Usage: "count the lines inserted and deleted in each text file, and in all"},
			&ucli.BoolFlag{Name: "name-only", Usage: "print only the changed paths, one a line"},
			&ucli.BoolFlag{Name: "exit-code", Usage: "exit 1 when there are differences, 0 when there are none"},
		},
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
	if c.Bool("name-only") && (c.Bool("stat") || c.Bool("patch")) {
		return usagef("--name-only prints paths only: it does not go with --stat or --patch")
	}
	to := c.Args().Get(1)
	differs := false
	err = h.with(c.Context, false, func(app *bootstrap.App) error {
		svc := app.Services.Checkpoints
		res, err := svc.Diff(c.Context, from, to, h.progress())
		if err != nil {
			return err
		}
		differs = len(res.Changes) > 0
		v := diffView{From: string(res.From.ID()), Changes: newChangeViews(res.Changes)}
		if res.To != nil {
			v.To = optional(string(res.To.ID()))
		}
		if c.Bool("patch") || c.Bool("stat") {
			var total diffStat
			for i, ch := range res.Changes {
				p, err := patch(svc, ch, res.To == nil)
				if err != nil {
					return err
				}
				if c.Bool("patch") {
					v.Changes[i].Patch = p.text
				}
				if c.Bool("stat") {
					v.Changes[i].Insertions, v.Changes[i].Deletions = &p.insertions, &p.deletions
					v.Changes[i].Binary = p.binary
					total.Files++
					total.Insertions += p.insertions
					total.Deletions += p.deletions
				}
			}
			if c.Bool("stat") {
				v.Stat = &total
			}
		}
		return h.emit(v, func(w io.Writer) {
			switch {
			case c.Bool("name-only"):
				for _, ch := range v.Changes {
					_, _ = fmt.Fprintln(w, ch.Path)
				}
			case v.Stat != nil:
				writeStat(w, v)
			default:
				for _, ch := range v.Changes {
					_, _ = fmt.Fprintf(w, "%s %s\n", tree.ChangeType(ch.Change).Letter(), ch.Path)
				}
			}
			for _, ch := range v.Changes {
				_, _ = io.WriteString(w, ch.Patch)
			}
		})
	})
	if err == nil && differs && c.Bool("exit-code") {
		return &silentExit{code: ExitInternal}
	}
	return err
}

// writeStat prints git's --stat table: each path, its lines inserted and deleted (or that it is a
// binary or large file), then the totals.
func writeStat(w io.Writer, v diffView) {
	width := 0
	for _, ch := range v.Changes {
		width = max(width, len(ch.Path))
	}
	for _, ch := range v.Changes {
		n := *ch.Insertions + *ch.Deletions
		bar := strings.Repeat("+", min(*ch.Insertions, 40)) + strings.Repeat("-", min(*ch.Deletions, 40))
		switch {
		case ch.Binary:
			_, _ = fmt.Fprintf(w, " %-*s | Bin (%s)\n", width, ch.Path, ch.Change)
		case ch.Kind == "dir" || ch.Kind == "symlink" || ch.Kind == "":
			_, _ = fmt.Fprintf(w, " %-*s | %s\n", width, ch.Path, ch.Change)
		default:
			_, _ = fmt.Fprintf(w, " %-*s | %d %s\n", width, ch.Path, n, bar)
		}
	}
	s := v.Stat
	_, _ = fmt.Fprintf(w, " %d %s changed, %d %s(+), %d %s(-)\n", s.Files, plural(s.Files, "path", "paths"),
		s.Insertions, plural(s.Insertions, "insertion", "insertions"), s.Deletions, plural(s.Deletions, "deletion", "deletions"))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// filePatch is a change's unified diff and its line counts. A binary or large file has a one-line
// note for text and no counts.
type filePatch struct {
	text                  string
	insertions, deletions int
	binary                bool
}

// patch renders a unified diff of a changed text file; binary or large files get a one-line note.
func patch(svc *application.CheckpointService, ch tree.Change, live bool) (filePatch, error) {
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
		return filePatch{}, nil
	}
	old, oldText, err := side(ch.From, false)
	if err != nil {
		return filePatch{}, err
	}
	cur, newText, err := side(ch.To, live)
	if err != nil {
		return filePatch{}, err
	}
	if !oldText || !newText {
		return filePatch{text: fmt.Sprintf("Binary or large file %s differs\n", ch.Path), binary: true}, nil
	}
	p := filePatch{text: udiff.Unified("a/"+ch.Path, "b/"+ch.Path, old, cur)}
	for i, line := range strings.Split(p.text, "\n") {
		switch {
		case i < 2: // the ---/+++ header
		case strings.HasPrefix(line, "+"):
			p.insertions++
		case strings.HasPrefix(line, "-"):
			p.deletions++
		}
	}
	return p, nil
}
