package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// sharedCommands are the commands of a shared store: the workspaces it holds, and a clone of one
// of their checkpoints.
func (h *handler) sharedCommands() []*ucli.Command {
	// Each command gets flags of its own: the parser marks what it parsed on the flag itself.
	storeFlag := func() ucli.Flag {
		return &ucli.StringFlag{Name: "store", Usage: "the shared store's `URL` (file:///abs/path or s3://bucket[/prefix])", Required: true}
	}
	dbFlag := func() ucli.Flag {
		return &ucli.StringFlag{Name: "db", Usage: "the `DSN` of the database its workspaces share, if they do (postgres://… or sqlite:///abs/path)"}
	}
	return []*ucli.Command{
		{
			Name: "workspaces", Usage: "list the local workspaces (those whose directory is gone included), or with --store those a shared store holds",
			// --store is checked by the action: a required flag here would be required of the
			// subcommands too, before they parse theirs.
			Flags: []ucli.Flag{notRequired(storeFlag()), dbFlag(), limitFlag(),
				&ucli.BoolFlag{Name: "all", Usage: "list retired workspaces too"}},
			Action:      h.workspaces,
			Subcommands: []*ucli.Command{h.retireCommand(storeFlag(), dbFlag())},
		},
		{
			Name: "clone", Usage: "bring a local workspace whose directory is gone back into DIR, or with --store materialise a shared store's workspace's checkpoint into an empty DIR as a new workspace",
			ArgsUsage: "DIR",
			Flags: []ucli.Flag{notRequired(storeFlag()), dbFlag(),
				// --from is the name that cannot be read as the global --workspace/-C (a directory);
				// --workspace stays, as the contract names it.
				&ucli.StringFlag{Name: "from", Aliases: []string{"workspace"}, Usage: "the workspace `ID` to clone from (see plan workspaces)", Required: true},
				&ucli.StringFlag{Name: "checkpoint", Usage: "the checkpoint `ID` to clone (default: the workspace's newest)"},
			},
			Action: h.clone,
		},
	}
}

type workspaceView struct {
	WorkspaceID      string     `json:"workspace_id"`
	Root             string     `json:"root"`
	Host             string     `json:"host"`
	CreatedAt        *time.Time `json:"created_at"`
	Checkpoints      int        `json:"checkpoints"`
	LastCheckpointAt *time.Time `json:"last_checkpoint_at"`
	RetiredAt        *time.Time `json:"retired_at"`
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC().Truncate(time.Second)
	return &u
}

func (h *handler) workspaces(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	if !c.IsSet("store") {
		if c.IsSet("db") {
			return usagef("--db needs --store: the shared store's URL (see `plan workspaces --help`)")
		}
		return h.localWorkspaces(c)
	}
	s, closeStore, err := bootstrap.OpenShared(c.Context, bootstrap.SharedConfig{Store: c.String("store"), DB: c.String("db"), Getenv: h.r.Getenv})
	if err != nil {
		return err
	}
	defer closeStore()
	ws, err := s.Workspaces(c.Context, c.Bool("all"))
	if err != nil {
		return err
	}
	if ws, err = limited(c, ws); err != nil {
		return err
	}
	views := make([]workspaceView, len(ws))
	for i, w := range ws {
		views[i] = workspaceView{WorkspaceID: w.ID, Root: w.Root, Host: w.Host, CreatedAt: timeOrNil(w.CreatedAt),
			Checkpoints: w.Checkpoints, LastCheckpointAt: timeOrNil(w.LastCheckpointAt), RetiredAt: timeOrNil(w.RetiredAt)}
	}
	return h.emit(views, func(w io.Writer) {
		if len(views) == 0 {
			_, _ = fmt.Fprintf(w, "The store %s holds no workspace.\n", quote(c.String("store")))
			return
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		_, _ = fmt.Fprintln(tw, "WORKSPACE\tHOST\tROOT\tCHECKPOINTS\tLAST CHECKPOINT")
		for _, v := range views {
			last := "-"
			if v.LastCheckpointAt != nil {
				last = localTime(*v.LastCheckpointAt)
			}
			if v.RetiredAt != nil {
				last += "  (retired " + localTime(*v.RetiredAt) + ")"
			}
			_, _ = fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", quote(v.WorkspaceID), quote(orDash(v.Host)), quote(orDash(v.Root)), v.Checkpoints, last)
		}
		_ = tw.Flush()
	})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

type cloneView struct {
	WorkspaceID        string `json:"workspace_id"`
	Root               string `json:"root"`
	Store              string `json:"store"`
	DB                 string `json:"db"`
	SourceWorkspaceID  string `json:"source_workspace_id"`
	SourceCheckpointID string `json:"source_checkpoint_id"`
	CheckpointID       string `json:"checkpoint_id"`
	Files              int64  `json:"files"`
	Bytes              int64  `json:"bytes"`
}

// clone finds the source checkpoint, makes DIR a new workspace on the same store and database,
// adopts the checkpoint as its first (type clone), and rolls DIR back to it: the journaled rollback
// makes the materialisation crash-safe like any other, and it is never undone, only finished
// (there is nothing to put back): once journaled, a materialisation cut short (a download cut, the
// database lost) is finished by `plan recover` in DIR, or by the next command there. A record of
// the clone in DIR's state directory (cloneMarker), written before anything is adopted, lets
// `plan recover` finish a clone killed at any step. A clone that
// failed before that, with DIR still holding nothing but .plan, takes back what it made (its
// adopted checkpoint when the database answers, .plan, DIR when it made it): DIR is as it was
// found, and takes the next attempt.
func (h *handler) clone(c *ucli.Context) error {
	if c.NArg() != 1 {
		return usagef("clone needs exactly one argument: the directory to clone into")
	}
	dir := c.Args().First()
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(h.root, dir) // as git -C: relative to where the command starts
	}
	if !c.IsSet("store") {
		if c.IsSet("db") {
			return usagef("--db needs --store: the shared store's URL (see `plan clone --help`)")
		}
		return h.cloneLocal(c, dir)
	}
	s, closeStore, err := bootstrap.OpenShared(c.Context, bootstrap.SharedConfig{Store: c.String("store"), DB: c.String("db"), Getenv: h.r.Getenv})
	if err != nil {
		return err
	}
	src, err := s.Checkpoint(c.Context, c.String("from"), c.String("checkpoint"))
	closeStore()
	if err != nil {
		return err
	}
	_, statErr := os.Lstat(dir)
	made := errors.Is(statErr, fs.ErrNotExist)
	if err := bootstrap.EmptyDir(dir); err != nil {
		return err
	}
	h.root, h.exactRoot = dir, true
	h.fresh.store, h.fresh.db = c.String("store"), c.String("db")
	adopted, state, history := false, "", ""
	err = h.with(c.Context, true, func(app *bootstrap.App) error {
		state = app.Services.Layout.State()
		if app.Services.Layout.Outside() {
			history = app.Services.Layout.Home()
		}
		svc := app.Services.Checkpoints
		marker := cloneMarker{SourceWorkspace: src.Workspace, SourceCheckpoint: src.ID, Root: src.Root}
		if err := writeCloneMarker(state, marker); err != nil {
			return err
		}
		cp, err := svc.Adopt(c.Context, application.AdoptRequest{Root: src.Root, Note: marker.note()})
		if err != nil {
			return fmt.Errorf("clone checkpoint %s of workspace %s: %w", src.ID, src.Workspace, err)
		}
		adopted = true
		req := application.RollbackRequest{Ref: string(cp.ID()), Progress: h.progress(), Warn: h.warn, NeverUndo: true}
		if _, err := svc.Rollback(c.Context, req); err != nil {
			if op, perr := app.Services.Maintenance.Interrupted(); perr != nil || op != nil || !onlyState(dir, state) {
				// Journaled (its error says `plan recover` finishes it), or DIR holds more than
				// .plan: the clone stands as far as it went.
				return fmt.Errorf("materialise checkpoint %s in %s: %w", src.ID, dir, err)
			}
			// Nothing was materialised: take the adopted checkpoint back, so that removing .plan
			// leaves no checkpoint of a workspace that is gone in a shared database.
			adopted = false
			h.takeBack(context.WithoutCancel(c.Context), svc.Delete, string(cp.ID()), app.WorkspaceID())
			return fmt.Errorf("materialise checkpoint %s in %s (nothing was materialised: %s is as it was): %w", src.ID, dir, dir, err)
		}
		if err := clearCloneMarker(state); err != nil {
			return err
		}
		setup := app.Services.Setup
		v := cloneView{WorkspaceID: app.WorkspaceID(), Root: setup.Layout.Root, Store: setup.File.Store, DB: setup.File.DB,
			SourceWorkspaceID: src.Workspace, SourceCheckpointID: src.ID, CheckpointID: string(cp.ID()),
			Files: cp.Stats().Files, Bytes: cp.Stats().Bytes}
		return h.emit(v, func(w io.Writer) {
			_, _ = fmt.Fprintf(w, "Cloned checkpoint %s of workspace %s into %s: %d files, %s.\n",
				v.SourceCheckpointID, quote(v.SourceWorkspaceID), quote(v.Root), v.Files, humanBytes(v.Bytes))
			_, _ = fmt.Fprintf(w, "New workspace %s; its history starts at checkpoint %s.\n", v.WorkspaceID, v.CheckpointID)
		})
	})
	if err != nil && !adopted {
		if state != "" { // else Open failed, and removed what it made
			_ = os.RemoveAll(state)
		}
		if history != "" {
			_ = os.RemoveAll(history)
		}
		if made {
			_ = os.Remove(dir)
		}
	}
	return err
}

// takeBack deletes checkpoint id, adopted by a clone that materialised nothing, before the clone
// removes the workspace (workspace) it made; one it cannot delete is named in a warning.
func (h *handler) takeBack(ctx context.Context, del func(context.Context, string, bool) (*checkpoint.Checkpoint, error), id, workspace string) {
	if _, err := del(ctx, id, true); err != nil {
		h.warn(fmt.Sprintf("the clone's checkpoint %s (workspace %s) could not be deleted and stays in the database, keeping its content from gc: %v",
			id, workspace, err))
	}
}

// onlyState says whether dir holds nothing but plan's state directory state: a clone that failed
// left nothing of its own in it.
func onlyState(dir, state string) bool {
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) == 1 && entries[0].Name() == filepath.Base(state)
}
