package bootstrap

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/infrastructure/internal/config"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/storeindex"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// checkRetired refuses (fault.ErrConflict) to open a workspace retired from its shared store:
// its unpinned checkpoints may already be collected, and what it would record now no gc keeps
// for it beyond what it records (see storeindex). Nothing is written before this check.
func (s *Setup) checkRetired(be objectstore.Backend) error {
	r, err := storeindex.ReadRetirement(be, s.WorkspaceID)
	if err != nil || r == nil {
		return err
	}
	return fault.Conflict("workspace %s was retired from the store %s at %s (`plan workspaces retire`): only its pinned checkpoints are kept, the others may already be collected; nothing was changed. Its files here are untouched: to keep working in %s, remove %s and run `plan init%s` there (a new workspace, its history starting afresh)",
		s.WorkspaceID, s.File.Store, r.RetiredAt.UTC().Format(time.RFC3339), s.Layout.Root, s.Layout.State(), s.initArgs())
}

// Liveness says whether a workspace's directory still holds it, as far as this machine can tell.
type Liveness int

const (
	// Gone is a directory on this machine that no longer holds the workspace.
	Gone Liveness = iota
	// Live is a directory on this machine that still holds the workspace.
	Live
	// Unknown is a directory on another machine (or the store does not say where it is).
	Unknown
)

// Retirement is what retiring a workspace did.
type Retirement struct {
	ID, Root, Host string
	RetiredAt      time.Time
	Already        bool
	Liveness       Liveness
}

// RetireCheck finds workspace id in the store (fault.ErrNotFound when it holds none such) and says
// whether its directory is live, before anything is written: the caller asks for confirmation.
func (s *SharedStore) RetireCheck(id string) (Retirement, error) {
	if err := ident.ValidateFull("workspace", id); err != nil {
		return Retirement{}, err
	}
	r := Retirement{ID: id, Liveness: Unknown}
	if prior, err := storeindex.ReadRetirement(s.be, id); err != nil {
		return r, err
	} else if prior != nil {
		r.Already, r.RetiredAt = true, prior.RetiredAt
	}
	d, err := s.descriptor(id)
	switch {
	case errors.Is(err, os.ErrNotExist):
		names, lerr := objectstore.NewRecords(s.be, objectstore.WorkspaceRecords(id)).Committed()
		if lerr != nil {
			return r, lerr
		}
		if len(names) == 0 {
			return r, fault.NotFound("the store %s holds no workspace %s (see `plan workspaces --store %s`)", s.be.Location(""), id, s.cfg.Store)
		}
		return r, nil // its descriptor is not written yet (or was lost): where it is, is not known
	case err != nil:
		return r, err
	}
	r.Root, r.Host = d.Root, d.Host
	host, _ := os.Hostname()
	if d.Root == "" || d.Host != host {
		return r, nil
	}
	r.Liveness = Gone
	if l, err := workspace.NewLayout(d.Root); err == nil {
		// A configuration that cannot be read may be this workspace's: live, to be safe.
		if f, err := config.Load(config.Path(l.State())); err != nil || f.WorkspaceID == id {
			r.Liveness = Live
		}
	}
	return r, nil
}

// Retire retires workspace id (see storeindex.Retire); retiring one retired before changes nothing.
func (s *SharedStore) Retire(_ context.Context, r Retirement) (Retirement, error) {
	host, _ := os.Hostname()
	now, err := s.be.Now()
	if err != nil {
		return r, err
	}
	ret, already, err := storeindex.Retire(s.be, r.ID, host, now)
	if err != nil {
		return r, err
	}
	r.RetiredAt, r.Already = ret.RetiredAt, already
	return r, nil
}
