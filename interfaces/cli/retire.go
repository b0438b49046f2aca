package cli

import (
	"fmt"
	"io"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// retireCommand is `plan workspaces retire ID`: a workspace of a shared store stops counting as
// one; gc then keeps only its pinned checkpoints (and whatever other workspaces keep).
func (h *handler) retireCommand(store, db ucli.Flag) *ucli.Command {
	return &ucli.Command{
		Name: "retire", Usage: "delete the history the data directory keeps for a local workspace whose directory is gone (asks first), or with --store retire a workspace of a shared store: it is no longer listed, and gc collects what only its unpinned checkpoints kept",
		ArgsUsage: "ID",
		Flags:     []ucli.Flag{notRequired(store), db},
		Action:    h.retire,
	}
}

// notRequired is f, not required.
func notRequired(f ucli.Flag) ucli.Flag {
	if sf, ok := f.(*ucli.StringFlag); ok {
		sf.Required = false
	}
	return f
}

type retireView struct {
	WorkspaceID    string     `json:"workspace_id"`
	Root           string     `json:"root"`
	Host           string     `json:"host"`
	RetiredAt      *time.Time `json:"retired_at"`
	AlreadyRetired bool       `json:"already_retired"`
	// Directory is what became of the workspace's directory as far as this machine can tell:
	// "gone", "live" (retired anyway, with consent) or "unknown" (another machine's).
	Directory string `json:"directory"`
}

var livenessNames = map[application.Liveness]string{application.Gone: "gone", application.Live: "live", application.Unknown: "unknown"}

// retire retires a workspace. One whose directory still holds it on this machine, or whose
// directory is on another machine (plan cannot tell), is retired only with consent: the global
// --yes, or `y` at the prompt (anything else is exit 8, nothing written).
func (h *handler) retire(c *ucli.Context) error {
	if c.NArg() != 1 {
		return usagef("workspaces retire needs exactly one argument: the workspace ID (see `plan workspaces`)")
	}
	id := c.Args().First()
	if !c.IsSet("store") {
		if c.IsSet("db") {
			return usagef("--db needs --store: the shared store's URL (see `plan workspaces retire --help`)")
		}
		return h.removeLocal(c, id)
	}
	s, closeStore, err := bootstrap.OpenShared(c.Context, bootstrap.SharedConfig{Store: c.String("store"), DB: c.String("db"), Getenv: h.r.Getenv})
	if err != nil {
		return err
	}
	defer closeStore()
	r, err := s.RetireCheck(id)
	if err != nil {
		return err
	}
	if !r.Already {
		what := "retiring workspace " + id
		after := "Once retired, every plan command there refuses to run, and gc collects every checkpoint of it that is not pinned and that no other workspace keeps.\n"
		switch r.Liveness {
		case application.Live:
			if err := h.confirm(what, fmt.Sprintf("Workspace %s is still in use in %s.\n%s", quote(id), quote(r.Root), after)); err != nil {
				return err
			}
		case application.Unknown:
			where := "a directory the store does not name"
			if r.Root != "" {
				where = fmt.Sprintf("%s on %s, another machine", quote(r.Root), quote(orDash(r.Host)))
			}
			if err := h.confirm(what, fmt.Sprintf("Workspace %s is in %s: plan cannot tell whether it is still in use.\n%s", id, where, after)); err != nil {
				return err
			}
		}
		if r, err = s.Retire(c.Context, r); err != nil {
			return err
		}
	}
	v := retireView{WorkspaceID: id, Root: r.Root, Host: r.Host, RetiredAt: timeOrNil(r.RetiredAt), AlreadyRetired: r.Already,
		Directory: livenessNames[r.Liveness]}
	return h.emit(v, func(w io.Writer) {
		if v.AlreadyRetired {
			_, _ = fmt.Fprintf(w, "Workspace %s was already retired (%s).\n", quote(id), localTime(*v.RetiredAt))
			return
		}
		_, _ = fmt.Fprintf(w, "Retired workspace %s (%s on %s). gc keeps only its pinned checkpoints, and what other workspaces keep.\n",
			quote(id), quote(orDash(v.Root)), quote(orDash(v.Host)))
	})
}
