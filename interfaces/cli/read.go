package cli

import (
	"encoding/base64"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/interfaces/view"
)

// readCommands read a checkpoint without restoring it: cat, ls, and restore into another
// directory. None of them changes the workspace or its history.
func (h *handler) readCommands() []*ucli.Command {
	return []*ucli.Command{
		{
			Name: "cat", Usage: "print a file as a checkpoint holds it (a symlink: its target)", ArgsUsage: "REF PATH",
			Description: "PATH is taken from the current directory when it is inside the workspace, otherwise from the\n" +
				"workspace root. With --json the content is base64 in content_base64.",
			Action: h.cat,
		},
		{
			Name: "ls", Usage: "list what a checkpoint holds at PATH (default: the top)", ArgsUsage: "REF [PATH]",
			Flags:  []ucli.Flag{&ucli.BoolFlag{Name: "recursive", Aliases: []string{"r"}, Usage: "list everything below PATH, not only what it holds directly"}},
			Action: h.ls,
		},
		{
			Name: "show", Usage: "show what one decision changed: its pre_decision checkpoint against the state it left", ArgsUsage: "DECISION",
			Flags: []ucli.Flag{
				&ucli.StringFlag{Name: "plan", Usage: "the plan `NAME` (default: the current plan; `plan plans` lists them)"},
				&ucli.IntFlag{Name: "attempt", Usage: "attempt `N` (default: the latest)"},
				&ucli.BoolFlag{Name: "patch", Usage: "add a unified diff for text files"},
				&ucli.BoolFlag{Name: "stat", Usage: "count the lines inserted and deleted in each text file, and in all"},
				&ucli.BoolFlag{Name: "name-only", Usage: "print only the changed paths, one a line"},
			},
			Action: h.show,
		},
		{
			Name: "restore", Usage: "copy a checkpoint (or some of its paths) into another directory; the workspace is not touched",
			ArgsUsage: "REF --target DIR [--] [PATH…]",
			Description: "DIR must not exist or be an empty directory; it ends up either as it was or holding the whole copy\n" +
				"(the copy is built beside it and renamed into place). With PATHs, only those files and directories\n" +
				"(recursively) are copied, with the directories above them, so the copy keeps the checkpoint's layout.",
			Flags: []ucli.Flag{
				&ucli.StringFlag{Name: "target", Usage: "the `DIR` to restore into (relative to where the command starts: -C DIR, else the current directory); required"},
			},
			Action: h.restoreTo,
		},
	}
}

// catView is the entry cat printed, with the file's content.
type catView struct {
	Checkpoint string `json:"checkpoint"`
	view.Entry
	ContentBase64 *string `json:"content_base64,omitempty"`
}

func (h *handler) cat(c *ucli.Context) error {
	ref, err := arg(c, 0, "REF")
	if err != nil {
		return err
	}
	arg1, err := arg(c, 1, "PATH")
	if err != nil {
		return err
	}
	if err := noExtraArgs(c, 2); err != nil {
		return err
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		path, err := h.workspacePath(app.Services.Layout.Root, arg1)
		if err != nil {
			return err
		}
		cp, e, rc, err := app.Services.Read.Open(c.Context, ref, path)
		if err != nil {
			return err
		}
		v := catView{Checkpoint: string(cp.ID()), Entry: newEntryViews([]tree.Entry{e})[0]}
		if rc == nil { // a symlink
			if h.json {
				return h.emit(v, nil)
			}
			_, err := io.WriteString(h.r.Stdout, e.Target)
			return err
		}
		defer func() { _ = rc.Close() }()
		if !h.json {
			// The content is verified as it is read: a damaged object stops the copy with an
			// integrity error, after what was read so far (as `git cat-file` would stream it).
			_, err := io.Copy(h.r.Stdout, rc)
			return err
		}
		b, err := io.ReadAll(rc)
		if err != nil {
			return err
		}
		enc := base64.StdEncoding.EncodeToString(b)
		v.ContentBase64 = &enc
		return h.emit(v, nil)
	})
}

type lsView struct {
	Checkpoint string       `json:"checkpoint"`
	Path       string       `json:"path"`
	Entries    []view.Entry `json:"entries"`
}

func (h *handler) ls(c *ucli.Context) error {
	ref, err := arg(c, 0, "REF")
	if err != nil {
		return err
	}
	if err := noExtraArgs(c, 2); err != nil {
		return err
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		path := ""
		if c.NArg() > 1 {
			if path, err = h.workspacePath(app.Services.Layout.Root, c.Args().Get(1)); err != nil {
				return err
			}
		}
		read := app.Services.Read.Children // one directory's tree, not all below it
		if c.Bool("recursive") {
			read = app.Services.Read.Entries
		}
		cp, entries, err := read(c.Context, ref, path)
		if err != nil {
			return err
		}
		shown := listed(entries, path, c.Bool("recursive"))
		v := lsView{Checkpoint: string(cp.ID()), Path: path, Entries: newEntryViews(shown)}
		return h.emit(v, func(w io.Writer) {
			for _, e := range v.Entries {
				size, name := fmt.Sprint(e.Size), quote(e.Path)
				switch e.Kind {
				case "dir":
					size, name = "-", name+"/"
				case "symlink":
					name += " -> " + quote(*e.Target)
				}
				_, _ = fmt.Fprintf(w, "%s %s %10s  %s\n", kindLetter(e.Kind), e.Mode, size, name)
			}
		})
	})
}

// listed picks what ls shows of entries (path and what is under it): a file or symlink itself; a
// directory's direct content, or all of it when recursive.
func listed(entries []tree.Entry, path string, recursive bool) []tree.Entry {
	if path != "" && entries[0].Kind != tree.KindDir {
		return entries[:1]
	}
	var out []tree.Entry
	for _, e := range entries {
		rel := e.Path
		if path != "" {
			if e.Path == path {
				continue
			}
			rel = strings.TrimPrefix(e.Path, path+"/")
		}
		if recursive || !strings.Contains(rel, "/") {
			out = append(out, e)
		}
	}
	return out
}

func kindLetter(kind string) string {
	switch kind {
	case "dir":
		return "d"
	case "symlink":
		return "l"
	}
	return "-"
}

type restoreToView struct {
	Checkpoint string   `json:"checkpoint"`
	Target     string   `json:"target"`
	Paths      []string `json:"paths"`
	Files      int      `json:"files"`
	Symlinks   int      `json:"symlinks"`
	Dirs       int      `json:"dirs"`
	Bytes      int64    `json:"bytes"`
}

func (h *handler) restoreTo(c *ucli.Context) error {
	ref, err := arg(c, 0, "REF")
	if err != nil {
		return err
	}
	if !c.IsSet("target") {
		return usagef("missing --target DIR (see `plan restore --help`)")
	}
	target := c.String("target")
	if target == "" {
		return usagef("--target needs a directory")
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(h.root, target) // as git -C: relative to where the command starts
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		l := app.Services.Layout
		for _, state := range []string{l.State(), l.Home()} {
			if rel, err := filepath.Rel(state, target); err == nil && (rel == "." || filepath.IsLocal(rel)) {
				return fault.Invalid("%s is inside the workspace's state directory %s: restore elsewhere", target, state)
			}
		}
		paths, err := h.workspacePaths(l.Root, afterDashes(c.Args().Tail()))
		if err != nil {
			return err
		}
		res, err := app.Services.Read.RestoreTo(c.Context, application.RestoreToRequest{Ref: ref, Target: target, Paths: paths, Progress: h.progress()})
		if err != nil {
			return err
		}
		v := restoreToView{Checkpoint: string(res.Checkpoint.ID()), Target: res.Target, Paths: res.Paths,
			Files: res.Stats.Files, Symlinks: res.Stats.Symlinks, Dirs: res.Stats.Dirs, Bytes: res.Stats.Bytes}
		if v.Paths == nil {
			v.Paths = []string{}
		}
		return h.emit(v, func(w io.Writer) {
			_, _ = fmt.Fprintf(w, "Restored checkpoint %s into %s: %d files, %d symlinks, %d directories, %s\n",
				v.Checkpoint, quote(v.Target), v.Files, v.Symlinks, v.Dirs, humanBytes(v.Bytes))
		})
	})
}

// afterDashes drops the "--" that may separate a command's paths from its REF (`plan restore REF
// --target DIR -- PATH`): it ends the flags, it is not a path.
func afterDashes(args []string) []string {
	if len(args) > 0 && args[0] == "--" {
		return args[1:]
	}
	return args
}

type showView struct {
	Plan         string         `json:"plan"`
	Decision     string         `json:"decision"`
	Attempt      int            `json:"attempt"`
	Status       string         `json:"status"`
	Command      string         `json:"command"`
	CheckpointID string         `json:"checkpoint_id"`
	Changes      []view.Change  `json:"changes"`
	Stat         *view.DiffStat `json:"stat,omitempty"`
}

func (h *handler) show(c *ucli.Context) error {
	id, err := arg(c, 0, "DECISION")
	if err != nil {
		return err
	}
	if err := noExtraArgs(c, 1); err != nil {
		return err
	}
	if c.Int("attempt") < 0 {
		return fault.Invalid("--attempt must be positive")
	}
	if c.Bool("name-only") && (c.Bool("stat") || c.Bool("patch")) {
		return usagef("--name-only prints paths only: it does not go with --stat or --patch")
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		res, err := app.Services.Read.Decision(c.Context, c.String("plan"), id, c.Int("attempt"))
		if err != nil {
			return err
		}
		a := res.Attempt
		v := showView{Plan: res.Plan.Name(), Decision: res.Decision, Attempt: a.Number, Status: string(a.Status),
			Command: a.Command, CheckpointID: string(res.Before.ID()), Changes: newChangeViews(res.Changes)}
		if v.Stat, err = addPatches(app.Services.Checkpoints, res.Changes, v.Changes, false, c.Bool("patch"), c.Bool("stat")); err != nil {
			return err
		}
		return h.emit(v, func(w io.Writer) {
			if !c.Bool("name-only") {
				_, _ = fmt.Fprintf(w, "decision %s of plan %s, attempt %d (%s)\ncommand: %s\nbefore:  checkpoint %s\n\n",
					quote(v.Decision), quote(v.Plan), v.Attempt, v.Status, quote(v.Command), v.CheckpointID)
			}
			writeChanges(w, h.colors, h.columns(), v.Changes, res.Changes, v.Stat, c.Bool("name-only"))
		})
	})
}
