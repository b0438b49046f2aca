package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aymanbagabas/go-udiff"
	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/interfaces/view"
)

// maxPatchBytes bounds the files --patch renders; larger ones are reported as binary-like.
const maxPatchBytes = 1 << 20

func (h *handler) diffCommand() *ucli.Command {
	return &ucli.Command{
		Name: "diff", Usage: "compare two checkpoints, or a checkpoint with the workspace", ArgsUsage: "[FROM [TO]] [--] [PATH...]",
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
	if c.Bool("name-only") && (c.Bool("stat") || c.Bool("patch")) {
		return usagef("--name-only prints paths only: it does not go with --stat or --patch")
	}
	if i := slices.Index(c.Args().Slice(), "--"); !h.dashed && i > 2 {
		return usagef("unexpected argument %q: diff compares at most two checkpoints (see `plan diff --help`)", c.Args().Get(2))
	}
	differs := false
	err := h.with(c.Context, false, func(app *bootstrap.App) error {
		svc := app.Services.Checkpoints
		root := app.Services.Layout.Root
		refs, args, err := h.diffArgs(c, svc, root)
		if err != nil {
			return err
		}
		paths, err := h.diffPaths(root, args)
		if err != nil {
			return err
		}
		from, to := "@", ""
		if len(refs) > 0 {
			from = refs[0]
		}
		if len(refs) > 1 {
			to = refs[1]
		}
		res, err := svc.Diff(c.Context, from, to, h.progress())
		if err != nil {
			return err
		}
		if res.Changes, err = limitToPaths(c, svc, root, res, paths); err != nil {
			return err
		}
		differs = len(res.Changes) > 0
		v := view.Diff{From: string(res.From.ID()), Changes: newChangeViews(res.Changes)}
		if res.To != nil {
			v.To = optional(string(res.To.ID()))
		}
		if v.Stat, err = addPatches(svc, res.Changes, v.Changes, res.To == nil, c.Bool("patch"), c.Bool("stat")); err != nil {
			return err
		}
		return h.emit(v, func(w io.Writer) {
			writeChanges(w, h.colors, h.columns(), v.Changes, res.Changes, v.Stat, c.Bool("name-only"))
		})
	})
	if err == nil && differs && c.Bool("exit-code") {
		return &silentExit{code: ExitInternal}
	}
	return err
}

// diffArgs splits diff's arguments into checkpoints (at most two) and paths, as git does: what
// comes before "--" names checkpoints and what follows it paths; without "--", the leading
// arguments that name checkpoints are checkpoints and the rest paths, each of which must then exist
// in the workspace (a path only a checkpoint holds goes after "--"). An argument that names both a
// checkpoint and a file of the workspace is ambiguous (exit 3) unless "--" says which it is.
func (h *handler) diffArgs(c *ucli.Context, svc *application.CheckpointService, root string) (refs, paths []string, err error) {
	args := c.Args().Slice()
	if h.dashed {
		return nil, args, nil
	}
	if i := slices.Index(args, "--"); i >= 0 { // at most two before it: diff checked
		return args[:i], args[i+1:], nil
	}
	for len(refs) < 2 && len(args) > 0 {
		a := args[0]
		_, refErr := svc.Resolve(c.Context, a)
		onDisk := h.inWorkspace(root, a)
		switch {
		case refErr == nil && onDisk:
			return nil, nil, fault.Invalid("%q names both a checkpoint and a path of the workspace: write `plan diff %s --` for the checkpoint, `plan diff -- %s` for the path", a, a, a)
		case refErr == nil:
			refs, args = append(refs, a), args[1:]
			continue
		case !onDisk:
			return nil, nil, fmt.Errorf("%q is not a path in the workspace, nor a checkpoint: %w (a path that only a checkpoint holds goes after --)", a, refErr)
		}
		break
	}
	for _, a := range args {
		if !h.inWorkspace(root, a) {
			return nil, nil, fault.NotFound("%s: no such path in the workspace (a path that only a checkpoint holds goes after --)", a)
		}
	}
	return refs, args, nil
}

// inWorkspace reports whether a (relative to where the command started) is a file, symlink or
// directory inside the workspace.
func (h *handler) inWorkspace(root, a string) bool {
	rel, err := h.workspacePath(root, a)
	if err != nil {
		return false
	}
	_, err = os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
	return err == nil
}

// diffPaths maps diff's paths to the workspace's; nil means the whole workspace (no path given,
// or one of them is the workspace itself).
func (h *handler) diffPaths(root string, args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		rel, err := h.workspacePath(root, a)
		if err != nil {
			return nil, err
		}
		if rel == "" {
			return nil, nil
		}
		out = append(out, rel)
	}
	return out, nil
}

// limitToPaths keeps the changes at or under one of paths (all of them when paths is nil). A path
// that names nothing on either side is not found (exit 4), as it is for `plan rollback PATH`: a
// typo would otherwise read as "no differences".
func limitToPaths(c *ucli.Context, svc *application.CheckpointService, root string, res application.DiffResult, paths []string) ([]tree.Change, error) {
	if paths == nil {
		return res.Changes, nil
	}
	var kept []tree.Change
	matched := map[string]bool{}
	for _, ch := range res.Changes {
		for _, p := range paths {
			if tree.Under(ch.Path, p) {
				matched[p] = true
				kept = append(kept, ch)
				break
			}
		}
	}
	for _, p := range paths {
		if matched[p] {
			continue
		}
		found, err := holds(c, svc, res.From, p)
		if err != nil {
			return nil, err
		}
		if !found && res.To != nil {
			if found, err = holds(c, svc, res.To, p); err != nil {
				return nil, err
			}
		}
		if !found && res.To == nil {
			_, statErr := os.Lstat(filepath.Join(root, filepath.FromSlash(p)))
			found = statErr == nil
		}
		if !found {
			to := "the workspace"
			if res.To != nil {
				to = string(res.To.ID())
			}
			return nil, fault.NotFound("%s names nothing in %s or %s", p, res.From.ID(), to)
		}
	}
	return kept, nil
}

// holds reports whether checkpoint cp has something at or under path p.
func holds(c *ucli.Context, svc *application.CheckpointService, cp *checkpoint.Checkpoint, p string) (bool, error) {
	entries, err := svc.Entries(c.Context, cp)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(entries, func(e tree.Entry) bool { return tree.Under(e.Path, p) }), nil
}

// addPatches fills in views (one per change) with each change's patch (withPatch) and line counts
// (withStat, which also returns the totals). live says the new side is the workspace.
func addPatches(svc *application.CheckpointService, changes []tree.Change, views []view.Change, live, withPatch, withStat bool) (*view.DiffStat, error) {
	if !withPatch && !withStat {
		return nil, nil
	}
	var total view.DiffStat
	for i, ch := range changes {
		p, err := patch(svc, ch, live)
		if err != nil {
			return nil, err
		}
		if withPatch {
			views[i].Patch = p.text
		}
		if withStat {
			views[i].Insertions, views[i].Deletions = &p.insertions, &p.deletions
			views[i].Binary = p.binary
			total.Files++
			total.Insertions += p.insertions
			total.Deletions += p.deletions
		}
	}
	if !withStat {
		return nil, nil
	}
	return &total, nil
}

// writeChanges prints changes as diff does: paths only, the --stat table, or one `A|M|D|T path`
// line each; then the patches, if any. src are the changes the views were made of (the --stat
// table names their mode changes); columns is the width the --stat table fits in.
func writeChanges(w io.Writer, p palette, columns int, changes []view.Change, src []tree.Change, stat *view.DiffStat, nameOnly bool) {
	switch {
	case nameOnly:
		for _, ch := range changes {
			_, _ = fmt.Fprintln(w, quote(ch.Path))
		}
	case stat != nil:
		writeStat(w, p, columns, changes, src, stat)
	default:
		for _, ch := range changes {
			_, _ = fmt.Fprintf(w, "%s %s\n", p.letter(tree.ChangeType(ch.Change)), quote(ch.Path))
		}
	}
	for _, ch := range changes {
		_, _ = io.WriteString(w, p.patch(ch.Patch))
	}
}

// writeStat prints git's --stat table, laid out as git lays it out: each path, its lines inserted
// and deleted right-aligned, and a bar of +/- scaled so the largest change fits the width (a
// binary or large file says Bin, a directory its change); then the totals and git's --summary
// line of each mode change. Nothing at all for no changes.
func writeStat(w io.Writer, p palette, columns int, changes []view.Change, src []tree.Change, s *view.DiffStat) {
	if len(changes) == 0 {
		return
	}
	names := make([]string, len(changes))
	maxChange, nameWidth := 0, 0
	for i, ch := range changes {
		names[i] = quote(ch.Path)
		nameWidth = max(nameWidth, utf8.RuneCountInString(names[i]))
		if !ch.Binary && ch.Kind != "dir" {
			maxChange = max(maxChange, *ch.Insertions+*ch.Deletions)
		}
	}
	numWidth := len(strconv.Itoa(maxChange))
	graphWidth, nameWidth := statWidths(columns, nameWidth, numWidth, maxChange)
	for i, ch := range changes {
		name := names[i]
		if n := utf8.RuneCountInString(name); n > nameWidth {
			r := []rune(name)
			name = "..." + string(r[n-(nameWidth-3):])
		}
		pad := strings.Repeat(" ", nameWidth-utf8.RuneCountInString(name))
		switch {
		case ch.Binary:
			_, _ = fmt.Fprintf(w, " %s%s | Bin (%s)\n", name, pad, ch.Change)
		case ch.Kind == "dir":
			_, _ = fmt.Fprintf(w, " %s%s | %s\n", name, pad, ch.Change)
		default:
			add, del := scaleBars(*ch.Insertions, *ch.Deletions, graphWidth, maxChange)
			bar := ""
			if add+del > 0 {
				bar = " " + p.paint(sgrGreen, strings.Repeat("+", add)) + p.paint(sgrRed, strings.Repeat("-", del))
			}
			_, _ = fmt.Fprintf(w, " %s%s | %*d%s\n", name, pad, numWidth, *ch.Insertions+*ch.Deletions, bar)
		}
	}
	_, _ = fmt.Fprintf(w, " %d %s changed, %d %s(+), %d %s(-)\n", s.Files, plural(s.Files, "file", "files"),
		s.Insertions, plural(s.Insertions, "insertion", "insertions"), s.Deletions, plural(s.Deletions, "deletion", "deletions"))
	for _, ch := range src {
		if ch.From != nil && ch.To != nil && ch.From.Kind == ch.To.Kind && ch.From.Kind == tree.KindFile && ch.From.Mode != ch.To.Mode {
			_, _ = fmt.Fprintf(w, " mode change %s => %s %s\n", gitMode(*ch.From), gitMode(*ch.To), quote(ch.Path))
		}
	}
}

// statWidths is git's layout of a --stat line in columns: the graph as wide as the largest change
// when everything fits; else the graph gets at most 3/8 of the width (at least 6) and the names
// what is left (a longer name is cut at its start).
func statWidths(columns, nameWidth, numWidth, maxChange int) (graph, name int) {
	width := max(columns, 16+6+numWidth)
	graph = maxChange
	if nameWidth+numWidth+6+graph > width {
		if limit := width*3/8 - numWidth - 6; graph > limit {
			graph = max(limit, 6)
		}
		nameWidth = min(nameWidth, width-numWidth-6-graph)
	}
	return graph, nameWidth
}

// scaleBars is git's scaling of one line's insertions and deletions to a graph of width columns
// for a largest change of maxChange: every non-zero count keeps at least one mark.
func scaleBars(add, del, width, maxChange int) (int, int) {
	if width >= maxChange {
		return add, del
	}
	scale := func(n int) int {
		if n == 0 {
			return 0
		}
		return 1 + n*(width-1)/maxChange
	}
	total := scale(add + del)
	if total < 2 && add > 0 && del > 0 {
		total = 2
	}
	if add < del {
		add = scale(add)
		return add, total - add
	}
	del = scale(del)
	return total - del, del
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

// patch renders one change as git does: a `diff --git` header, what happened to the entry (new,
// deleted, a mode change, a type change shown as one change, not a deletion and an addition), then a
// unified diff of the content. A symlink's content is its target. An added side is /dev/null; a
// binary or large file (over maxPatchBytes) gets a one-line note instead of its bytes.
func patch(svc *application.CheckpointService, ch tree.Change, live bool) (filePatch, error) {
	var b strings.Builder
	from, to := ch.From, ch.To
	// Names are quoted as git quotes them (the whole "a/name"), so a name cannot act on a terminal.
	oldName, newName := quote("a/"+ch.Path), quote("b/"+ch.Path)
	_, _ = fmt.Fprintf(&b, "diff --git %s %s\n", oldName, newName)
	switch {
	case from == nil:
		_, _ = fmt.Fprintf(&b, "new %s mode %s\n", headerWord(to.Kind), gitMode(*to))
	case to == nil:
		_, _ = fmt.Fprintf(&b, "deleted %s mode %s\n", headerWord(from.Kind), gitMode(*from))
	case from.Kind != to.Kind:
		_, _ = fmt.Fprintf(&b, "type change: %s -> %s\nold mode %s\nnew mode %s\n", kindWord(from.Kind), kindWord(to.Kind), gitMode(*from), gitMode(*to))
	case from.Mode != to.Mode && from.Kind != tree.KindSymlink:
		_, _ = fmt.Fprintf(&b, "old mode %s\nnew mode %s\n", gitMode(*from), gitMode(*to))
	}
	old, err := patchSide(svc, from, false)
	if err != nil {
		return filePatch{}, err
	}
	cur, err := patchSide(svc, to, live)
	if err != nil {
		return filePatch{}, err
	}
	if !old.present {
		oldName = "/dev/null"
	}
	if !cur.present {
		newName = "/dev/null"
	}
	p := filePatch{}
	switch {
	case !old.present && !cur.present: // directories: the header says it all
	case !old.text || !cur.text:
		_, _ = fmt.Fprintf(&b, "Binary or large file %s differs\n", quote(ch.Path))
		p.binary = true
	default:
		u := udiff.Unified(oldName, newName, old.content, cur.content)
		for i, line := range strings.Split(u, "\n") {
			switch {
			case i < 2: // the ---/+++ header
			case strings.HasPrefix(line, "+"):
				p.insertions++
			case strings.HasPrefix(line, "-"):
				p.deletions++
			}
		}
		b.WriteString(u)
	}
	p.text = b.String()
	return p, nil
}

// side is one side of a change as a patch shows it.
type side struct {
	present bool // a file or symlink, which has content (not nothing, not a directory)
	text    bool // shown line by line (not binary, not too large)
	content string
}

func patchSide(svc *application.CheckpointService, e *tree.Entry, live bool) (side, error) {
	switch {
	case e == nil || e.Kind == tree.KindDir:
		return side{text: true}, nil
	case e.Kind == tree.KindSymlink:
		return side{present: true, text: true, content: e.Target}, nil
	case e.Size > maxPatchBytes:
		return side{present: true}, nil
	}
	rc, err := svc.OpenContent(*e, live)
	if err != nil {
		return side{}, err
	}
	defer func() { _ = rc.Close() }()
	b, err := io.ReadAll(io.LimitReader(rc, maxPatchBytes+1))
	if err != nil {
		return side{}, err
	}
	text := len(b) <= maxPatchBytes && utf8.Valid(b) && !bytes.Contains(b, []byte{0})
	return side{present: true, text: text, content: string(b)}, nil
}

// gitMode is an entry's mode as git prints it: 100644 for a file, 120000 for a symlink, 040755 for
// a directory (git keeps no directories; plan does, with their modes).
func gitMode(e tree.Entry) string {
	switch e.Kind {
	case tree.KindSymlink:
		return "120000"
	case tree.KindDir:
		return "040" + fmt.Sprintf("%03o", e.Mode&0o777)
	}
	return fmt.Sprintf("10%04o", e.Mode&tree.ModeMask)
}

// headerWord is what git's "new file mode" says of an entry: a symlink is a file of mode 120000
// there; a directory, which git does not keep, is one.
func headerWord(k tree.Kind) string {
	if k == tree.KindDir {
		return "directory"
	}
	return "file"
}

func kindWord(k tree.Kind) string {
	switch k {
	case tree.KindSymlink:
		return "symlink"
	case tree.KindDir:
		return "directory"
	}
	return "file"
}
