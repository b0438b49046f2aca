package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/interfaces/view"
)

func (h *handler) checkpointCommands() []*ucli.Command {
	return []*ucli.Command{
		{
			Name: "checkpoint", Usage: "create, list, show and delete checkpoints",
			Subcommands: []*ucli.Command{
				{
					Name: "create", Usage: "record the workspace as a checkpoint",
					Flags: []ucli.Flag{
						&ucli.StringFlag{Name: "note", Usage: "a note to keep with the checkpoint"},
						&ucli.StringFlag{Name: "type", Value: string(checkpoint.Manual), Usage: "checkpoint `TYPE`"},
						&ucli.StringSliceFlag{Name: "label", Usage: "tag the checkpoint with `KEY=VALUE` (repeatable)"},
						&ucli.BoolFlag{Name: "validate", Usage: "refuse (exit 1, validation_failed) unless plan validate passes: nothing pending, no unresolved conflict, validate.command succeeds"},
					},
					Action: h.checkpointCreate,
				},
				{
					Name: "list", Usage: "list checkpoints, newest first",
					Flags: []ucli.Flag{&ucli.StringSliceFlag{Name: "label", Usage: "only checkpoints tagged `KEY=VALUE` (repeatable: all must match)"}, limitFlag(),
						&ucli.BoolFlag{Name: "graph", Usage: "draw the checkpoints as the tree their parents make (@ the head, ◌ a safety checkpoint), as jj log does"}},
					Action: h.checkpointList,
				},
				{Name: "pin", Usage: "keep a checkpoint from every prune", ArgsUsage: "ID", Action: h.checkpointPin(true)},
				{Name: "unpin", Usage: "let prune delete a checkpoint again", ArgsUsage: "ID", Action: h.checkpointPin(false)},
				{
					Name: "show", Usage: "show a checkpoint", ArgsUsage: "ID",
					Flags:  []ucli.Flag{&ucli.BoolFlag{Name: "files", Usage: "list every entry"}},
					Action: h.checkpointShow,
				},
				{
					Name: "delete", Usage: "delete a checkpoint (its data goes at the next gc)", ArgsUsage: "ID",
					Flags:  []ucli.Flag{&ucli.BoolFlag{Name: "force", Usage: "delete even a checkpoint a live decision or correction needs"}},
					Action: h.checkpointDelete,
				},
				h.pruneCommand(),
			},
		},
	}
}

func (h *handler) checkpointCreate(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	typ, err := checkpoint.ParseType(c.String("type"))
	if err != nil {
		return err
	}
	labels, err := parseLabels(c.StringSlice("label"))
	if err != nil {
		return err
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		check, err := h.checkFor(c, app)
		if err != nil {
			return err
		}
		var unreadable []string
		cp, err := app.Services.Checkpoints.Create(c.Context, application.CreateRequest{
			Type: typ, Note: c.String("note"), Labels: labels, Progress: h.progress(), Warn: h.warn, Check: check,
			Unreadable: func(paths []string) { unreadable = paths },
		})
		if err != nil {
			return err
		}
		short := shortName(c.Context, app, cp)
		v := newCheckpointView(cp, short)
		v.Unreadable = unreadable
		return h.emit(v, func(w io.Writer) {
			st := cp.Stats()
			_, _ = fmt.Fprintf(w, "Created checkpoint %s (%s, %s): %d files, %s, %s newly stored, %.1f ms\n",
				cp.ID(), short, cp.Type(), st.Files, humanBytes(st.Bytes), humanBytes(st.StoredBytes),
				float64(st.Duration.Microseconds())/1000)
		})
	})
}

func (h *handler) checkpointList(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	want, err := parseLabels(c.StringSlice("label"))
	if err != nil {
		return err
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		all, err := app.Services.Checkpoints.List(c.Context)
		if err != nil {
			return err
		}
		shorts := application.ShortNamesOf(all)
		cps := all[:0:0]
		for _, cp := range all {
			if cp.HasLabels(want) {
				cps = append(cps, cp)
			}
		}
		if cps, err = limited(c, cps); err != nil {
			return err
		}
		head, err := app.Services.Checkpoints.Head(c.Context)
		if err != nil {
			return err
		}
		isHead := func(cp *checkpoint.Checkpoint) bool { return head != nil && cp.ID() == head.ID() }
		views := make([]view.Checkpoint, 0, len(cps))
		for _, cp := range cps {
			v := newCheckpointView(cp, shorts[cp.ID()])
			v.Head = isHead(cp)
			views = append(views, v)
		}
		return h.emit(views, func(w io.Writer) {
			switch {
			case len(cps) == 0 && len(want) > 0:
				_, _ = fmt.Fprintln(w, "No checkpoint carries those labels.")
				return
			case len(cps) == 0:
				_, _ = fmt.Fprintln(w, "No checkpoints yet: `plan checkpoint create` takes one.")
				return
			}
			if c.Bool("graph") {
				paintShortNames(w, h.colors, graphText(cps, shorts, head), shorts)
				return
			}
			// The table is laid out unpainted, then each row's short name painted in place:
			// escape sequences would count as width in the layout.
			var table bytes.Buffer
			defer func() { paintShortNames(w, h.colors, table.String(), shorts) }()
			tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
			_, _ = fmt.Fprintln(tw, "SHORT\tID\tTYPE\tCREATED\tFILES\tSIZE\tNOTE")
			for _, cp := range cps {
				note := quote(cp.Note())
				// The head is marked as jj marks @; a safety checkpoint says it is one.
				switch {
				case isHead(cp):
					note = strings.TrimSpace("@ head " + note)
				case cp.IsSafety():
					note = strings.TrimSpace("(safety) " + note)
				}
				if tags := labelText(cp); tags != "" {
					note = strings.TrimSpace(note + " " + tags)
				}
				_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", shorts[cp.ID()], cp.ID(), cp.Type(),
					localTime(cp.CreatedAt()), cp.Stats().Files, humanBytes(cp.Stats().Bytes), note)
			}
			_ = tw.Flush()
		})
	})
}

// graphText draws cps as the tree their parents make, newest branch first, as `jj log` draws a
// history: @ marks the head, ◌ a safety checkpoint, ○ any other. A checkpoint whose parent is not
// among cps (the first, or one whose parent was deleted or filtered out) starts a tree of its own.
func graphText(cps []*checkpoint.Checkpoint, shorts map[checkpoint.ID]string, head *checkpoint.Checkpoint) string {
	in := make(map[checkpoint.ID]bool, len(cps))
	for _, cp := range cps {
		in[cp.ID()] = true
	}
	children := map[checkpoint.ID][]*checkpoint.Checkpoint{}
	var roots []*checkpoint.Checkpoint
	for _, cp := range cps { // newest first: so are the children of each
		if p := cp.ParentID(); p != "" && in[p] && p != cp.ID() {
			children[p] = append(children[p], cp)
		} else {
			roots = append(roots, cp)
		}
	}
	var b strings.Builder
	var draw func(cp *checkpoint.Checkpoint, prefix, branch, next string)
	draw = func(cp *checkpoint.Checkpoint, prefix, branch, next string) {
		mark := "○"
		switch {
		case head != nil && cp.ID() == head.ID():
			mark = "@"
		case cp.IsSafety():
			mark = "◌"
		}
		fmt.Fprintf(&b, "%s%s%s %s %s %s %s %s\n", prefix, branch, mark, shorts[cp.ID()], cp.ID(), cp.Type(),
			localTime(cp.CreatedAt()), quote(cp.Note()))
		kids := children[cp.ID()]
		for i, k := range kids {
			if i == len(kids)-1 {
				draw(k, prefix+next, "└─", "  ")
			} else {
				draw(k, prefix+next, "├─", "│ ")
			}
		}
	}
	for _, r := range roots {
		draw(r, "", "", "")
	}
	return b.String()
}

func (h *handler) checkpointShow(c *ucli.Context) error {
	ref, err := arg(c, 0, "ID")
	if err != nil {
		return err
	}
	if err := noExtraArgs(c, 1); err != nil {
		return err
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		svc := app.Services.Checkpoints
		cp, err := svc.Resolve(c.Context, ref)
		if err != nil {
			return err
		}
		short := shortName(c.Context, app, cp)
		v := newCheckpointView(cp, short)
		if c.Bool("files") {
			entries, err := svc.Entries(c.Context, cp)
			if err != nil {
				return err
			}
			ev := newEntryViews(entries)
			v.Entries = &ev
		}
		return h.emit(v, func(w io.Writer) {
			printCheckpoint(w, v)
			if v.Entries != nil {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				for _, e := range *v.Entries {
					detail := ""
					switch {
					case e.SHA256 != nil:
						detail = (*e.SHA256)[:16]
					case e.Target != nil:
						detail = "-> " + quote(*e.Target)
					}
					_, _ = fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", e.Mode, e.Kind, e.Size, detail, quote(e.Path))
				}
				_ = tw.Flush()
			}
		})
	})
}

func printCheckpoint(w io.Writer, v view.Checkpoint) {
	or := func(s *string, none string) string {
		if s == nil {
			return none
		}
		return quote(*s)
	}
	_, _ = fmt.Fprintf(w, "checkpoint %s (%s)\n", v.ID, v.ShortID)
	_, _ = fmt.Fprintf(w, "type:        %s\ncreated:     %s\n", v.Type, localOf(v.CreatedAt))
	if v.Note != "" {
		_, _ = fmt.Fprintf(w, "note:        %s\n", quote(v.Note))
	}
	_, _ = fmt.Fprintf(w, "decision:    %s\nparent:      %s\ngit commit:  %s\n",
		or(v.DecisionID, "-"), or(v.ParentID, "-"), or(v.GitCommit, "-"))
	_, _ = fmt.Fprintf(w, "files:       %d (%s), %s newly stored, taken in %.1f ms\nrollbacks:   %d\n",
		v.Files, humanBytes(v.Bytes), humanBytes(v.StoredBytes), v.DurationMs, v.RollbackCount)
}

func (h *handler) checkpointDelete(c *ucli.Context) error {
	ref, err := arg(c, 0, "ID")
	if err != nil {
		return err
	}
	if err := noExtraArgs(c, 1); err != nil {
		return err
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		cp, err := app.Services.Checkpoints.Delete(c.Context, ref, c.Bool("force"))
		if err != nil {
			return err
		}
		return h.emit(map[string]string{"deleted": string(cp.ID())}, func(w io.Writer) {
			_, _ = fmt.Fprintf(w, "Deleted checkpoint %s; `plan gc` reclaims its data.\n", cp.ID())
		})
	})
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// parseLabels reads repeated --label KEY=VALUE flags; a key given twice is invalid input.
func parseLabels(flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(flags))
	for _, f := range flags {
		k, v, err := checkpoint.ParseLabel(f)
		if err != nil {
			return nil, err
		}
		if _, dup := out[k]; dup {
			return nil, fault.Invalid("label %s is given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

// checkpointPin is checkpoint pin (on) and unpin.
func (h *handler) checkpointPin(on bool) ucli.ActionFunc {
	return func(c *ucli.Context) error {
		ref, err := arg(c, 0, "ID")
		if err != nil {
			return err
		}
		if err := noExtraArgs(c, 1); err != nil {
			return err
		}
		return h.with(c.Context, false, func(app *bootstrap.App) error {
			cp, err := app.Services.Checkpoints.SetPinned(c.Context, ref, on)
			if err != nil {
				return err
			}
			short := shortName(c.Context, app, cp)
			return h.emit(newCheckpointView(cp, short), func(w io.Writer) {
				if on {
					_, _ = fmt.Fprintf(w, "Pinned checkpoint %s: no prune deletes it.\n", cp.ID())
				} else {
					_, _ = fmt.Fprintf(w, "Unpinned checkpoint %s.\n", cp.ID())
				}
			})
		})
	}
}

// labelText shows a checkpoint's pin and labels in text output: "[pinned k=v …]".
func labelText(cp *checkpoint.Checkpoint) string {
	var parts []string
	if cp.Pinned() {
		parts = append(parts, "pinned")
	}
	labels := cp.Labels()
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, quote(k)+"="+quote(labels[k]))
	}
	if len(parts) == 0 {
		return ""
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// shortName is cp's short name among the workspace's checkpoints. When the others cannot be read
// (a damaged row), it is the whole short form: longer, and still a name that resolves to cp, so the
// command that made or changed cp never fails for want of its nickname.
func shortName(ctx context.Context, app *bootstrap.App, cp *checkpoint.Checkpoint) string {
	names, err := app.Services.Checkpoints.ShortNames(ctx)
	if err != nil {
		return ident.Short(string(cp.ID()))
	}
	return names[cp.ID()]
}

// paintShortNames writes the checkpoint table, each row's leading short name painted as jj paints
// change IDs (the prefix that names it alone highlighted).
func paintShortNames(w io.Writer, p palette, table string, shorts map[checkpoint.ID]string) {
	all := make(map[string]bool, len(shorts))
	for _, n := range shorts {
		all[n] = true
	}
	lines := strings.SplitAfter(table, "\n")
	for i, l := range lines {
		if i == 0 {
			continue // the header
		}
		if name, rest, ok := strings.Cut(l, " "); ok && all[name] {
			lines[i] = p.shortName(name, all) + " " + rest
		}
	}
	_, _ = io.WriteString(w, strings.Join(lines, ""))
}
