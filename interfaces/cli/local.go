package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// localWorkspaceView is a workspace the per-user data directory keeps a history for
// (docs/schema/workspaces-local.json).
type localWorkspaceView struct {
	WorkspaceID      string     `json:"workspace_id"`
	Root             string     `json:"root"`
	Host             string     `json:"host"`
	CreatedAt        *time.Time `json:"created_at"`
	Checkpoints      *int       `json:"checkpoints"`
	LastCheckpointAt *time.Time `json:"last_checkpoint_at"`
	// Directory is what is at Root now: present, detached (.plan/ gone: `plan init` there
	// re-attaches), replaced (another directory or workspace), gone, or damaged (the entry).
	Directory  string `json:"directory"`
	HistoryDir string `json:"history_dir"`
	Bytes      int64  `json:"bytes"`
	Store      string `json:"store"`
	Problem    string `json:"problem,omitempty"`
}

// localWorkspaces is `plan workspaces` without --store: the data directory's registry.
func (h *handler) localWorkspaces(c *ucli.Context) error {
	ws, err := bootstrap.LocalWorkspaces(c.Context, h.getenv)
	if err != nil {
		return err
	}
	if ws, err = limited(c, ws); err != nil {
		return err
	}
	views := make([]localWorkspaceView, len(ws))
	for i, w := range ws {
		v := localWorkspaceView{WorkspaceID: w.ID, Root: w.Root, Host: w.Host, CreatedAt: timeOrNil(w.CreatedAt),
			Directory: w.Directory, HistoryDir: w.HistoryDir, Bytes: w.Bytes, Store: w.Store, Problem: w.Problem}
		if w.Counted {
			n := w.Checkpoints
			v.Checkpoints, v.LastCheckpointAt = &n, timeOrNil(w.LastCheckpointAt)
		}
		views[i] = v
	}
	data, _ := bootstrap.DataDir(h.getenv)
	return h.emit(views, func(w io.Writer) {
		if len(views) == 0 {
			_, _ = fmt.Fprintf(w, "The data directory %s keeps no workspace's history.\n", data)
			return
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, "WORKSPACE\tDIRECTORY\tROOT\tCHECKPOINTS\tLAST CHECKPOINT\tSIZE")
		for _, v := range views {
			last, n := "-", "-"
			if v.LastCheckpointAt != nil {
				last = localTime(*v.LastCheckpointAt)
			}
			if v.Checkpoints != nil {
				n = fmt.Sprint(*v.Checkpoints)
			}
			_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", quote(v.WorkspaceID), v.Directory, quote(orDash(v.Root)), n, last, humanBytes(v.Bytes))
		}
		_ = tw.Flush()
		for _, v := range views {
			switch v.Directory {
			case bootstrap.DirDetached:
				_, _ = fmt.Fprintf(w, "%s lost its .plan/: `plan init` there re-attaches it.\n", quote(v.Root))
			case bootstrap.DirGone, bootstrap.DirReplaced:
				_, _ = fmt.Fprintf(w, "%s is %s: `plan clone --from %s DIR` brings the workspace back.\n", quote(v.Root), v.Directory, quote(v.WorkspaceID))
			case bootstrap.DirDamaged:
				_, _ = fmt.Fprintf(w, "the entry of %s cannot be read: %s\n", quote(v.WorkspaceID), scrub(v.Problem))
			}
		}
	})
}

// localCloneView is what `plan clone --from ID DIR` prints for a local workspace
// (docs/schema/clone-local.json).
type localCloneView struct {
	WorkspaceID  string `json:"workspace_id"`
	Root         string `json:"root"`
	WasAt        string `json:"was_at"`
	HistoryDir   string `json:"history_dir"`
	CheckpointID string `json:"checkpoint_id"`
	Files        int64  `json:"files"`
	Bytes        int64  `json:"bytes"`
}

// cloneLocal brings back a local workspace whose directory is gone (deleted, replaced, or
// detached): DIR becomes its directory, with its whole history, and its files are rolled back to
// the checkpoint asked for (default: the newest). The rollback is journaled as any other: killed,
// `plan recover` in DIR finishes it.
func (h *handler) cloneLocal(c *ucli.Context, dir string) error {
	w, err := bootstrap.FindLocal(c.Context, h.getenv, c.String("from"))
	if err != nil {
		return err
	}
	_, statErr := os.Lstat(dir)
	made := errors.Is(statErr, fs.ErrNotExist)
	if err := bootstrap.EmptyDir(dir); err != nil {
		return err
	}
	if err := bootstrap.AttachAt(w, dir); err != nil {
		if made {
			_ = os.RemoveAll(dir)
		}
		return err
	}
	h.root, h.exactRoot = dir, true
	ref := c.String("checkpoint")
	if ref == "" {
		ref = "@"
	}
	return h.with(c.Context, false, func(app *bootstrap.App) error {
		req := application.RollbackRequest{Ref: ref, Progress: h.progress(), Warn: h.warn, NeverUndo: true}
		res, err := app.Services.Checkpoints.Rollback(c.Context, req)
		if err != nil {
			return fmt.Errorf("restore checkpoint %s of workspace %s in %s (the workspace is attached there; `plan rollback --to-checkpoint ID` finishes it): %w", ref, w.ID, dir, err)
		}
		v := localCloneView{WorkspaceID: w.ID, Root: app.Services.Layout.Root, WasAt: w.Root, HistoryDir: w.HistoryDir,
			CheckpointID: string(res.Target.ID()), Files: res.Target.Stats().Files, Bytes: res.Target.Stats().Bytes}
		return h.emit(v, func(out io.Writer) {
			_, _ = fmt.Fprintf(out, "Brought workspace %s (was at %s) back into %s at checkpoint %s: %d files, %s.\n",
				v.WorkspaceID, quote(orDash(v.WasAt)), quote(v.Root), v.CheckpointID, v.Files, humanBytes(v.Bytes))
		})
	})
}

// storeCommand is `plan store move-out`.
func (h *handler) storeCommand() *ucli.Command {
	return &ucli.Command{
		Name: "store", Usage: "where the workspace's history is kept",
		Action: groupAction,
		Subcommands: []*ucli.Command{{
			Name:   "move-out",
			Usage:  "move a history kept in .plan/ into the per-user data directory, out of reach of `git clean -fdx` and `rm -rf .plan` (crash-safe and resumable: run it again after a crash)",
			Action: h.moveOut,
		}},
	}
}

func (h *handler) moveOut(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	root, err := h.workspaceRoot()
	if err != nil {
		return err
	}
	res, err := bootstrap.MoveOut(c.Context, root, h.getenv)
	if err != nil {
		return err
	}
	return h.emit(res, func(w io.Writer) {
		switch {
		case res.Already && res.Resumed:
			_, _ = fmt.Fprintf(w, "The history of %s is in %s; the rest of the old copy in %s was removed.\n", quote(root), quote(res.To), quote(res.From))
		case res.Already:
			_, _ = fmt.Fprintf(w, "The history of %s is already outside it, in %s.\n", quote(root), quote(res.To))
		default:
			_, _ = fmt.Fprintf(w, "Moved the history of %s (%d files, %s) into %s; every byte was read back before the old copy was removed.\n",
				quote(root), res.Files, humanBytes(res.Bytes), quote(res.To))
		}
	})
}

// removedView is what `plan workspaces retire ID` prints for a local workspace.
type removedView struct {
	WorkspaceID string `json:"workspace_id"`
	Root        string `json:"root"`
	HistoryDir  string `json:"history_dir"`
	Bytes       int64  `json:"bytes"`
	Checkpoints *int   `json:"checkpoints"`
}

// removeLocal deletes the history the data directory keeps for a local workspace that is no
// longer in its directory, after the user said yes: nothing else (gc, prune, retention) ever
// deletes it.
func (h *handler) removeLocal(c *ucli.Context, id string) error {
	w, err := bootstrap.FindLocal(c.Context, h.getenv, id)
	if err != nil {
		return err
	}
	if w.Directory == bootstrap.DirPresent {
		return fault.Conflict("the workspace %s is in use at %s: its history is deleted only once its directory no longer holds it (remove %s/.plan there first)", w.ID, w.Root, w.Root)
	}
	n := "?"
	if w.Counted {
		n = fmt.Sprint(w.Checkpoints)
	}
	if err := h.confirm("deleting the history of workspace "+w.ID, fmt.Sprintf("Workspace %s (was at %s, now %s) keeps %s checkpoints, %s, in %s.\nDeleting them cannot be undone.\n",
		w.ID, quote(orDash(w.Root)), w.Directory, n, humanBytes(w.Bytes), quote(w.HistoryDir))); err != nil {
		return err
	}
	if err := bootstrap.RemoveLocal(w); err != nil {
		return err
	}
	v := removedView{WorkspaceID: w.ID, Root: w.Root, HistoryDir: w.HistoryDir, Bytes: w.Bytes}
	if w.Counted {
		v.Checkpoints = &w.Checkpoints
	}
	return h.emit(v, func(out io.Writer) {
		_, _ = fmt.Fprintf(out, "Deleted the history of workspace %s (%s freed).\n", w.ID, humanBytes(w.Bytes))
	})
}

// dataDirSummary sums up the data directory for `plan stats`; nil when it cannot be read.
func (h *handler) dataDirSummary(c *ucli.Context) *dataDirView {
	path, err := bootstrap.DataDir(h.getenv)
	if err != nil {
		return nil
	}
	ws, err := bootstrap.LocalWorkspaces(c.Context, h.getenv)
	if err != nil {
		return nil
	}
	v := &dataDirView{Path: path, Workspaces: len(ws)}
	if u, err := bootstrap.DataBudget(h.getenv, time.Now()); err == nil && u.MaxBytes > 0 {
		v.MaxBytes, v.Config = u.MaxBytes, u.Config
	}
	for _, w := range ws {
		v.Bytes += w.Bytes
		if w.Directory != bootstrap.DirPresent {
			v.Gone++
			v.GoneBytes += w.Bytes
		}
	}
	return v
}
