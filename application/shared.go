package application

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/tree"
)

// SharedStoreService is the use cases of a shared store looked at without being in one of its
// workspaces: `plan workspaces` (and its retire), and the source of `plan clone`.
type SharedStoreService struct {
	url     string
	store   port.SharedStore
	records port.SharedRecords
	db      port.SharedDatabase
	machine port.Machine
}

// NewSharedStoreService returns the use cases of the shared store url (as the user named it) that
// store and records reach; db is the database its workspaces share, nil when none was named.
func NewSharedStoreService(url string, store port.SharedStore, records port.SharedRecords, db port.SharedDatabase, machine port.Machine) *SharedStoreService {
	return &SharedStoreService{url: url, store: store, records: records, db: db, machine: machine}
}

// WorkspaceSummary is one workspace of a shared store.
type WorkspaceSummary struct {
	ID, Root, Host   string
	CreatedAt        time.Time
	Checkpoints      int
	LastCheckpointAt time.Time // zero when there is none
	// RetiredAt is when the workspace was retired (zero: it was not).
	RetiredAt time.Time
}

// Workspaces lists the workspaces the store holds: those with records or a descriptor in it,
// without the retired ones unless all is set. Their counts come from the database when one was
// named and holds them, else from their records.
func (s *SharedStoreService) Workspaces(ctx context.Context, all bool) ([]WorkspaceSummary, error) {
	stored, err := s.store.Workspaces()
	if err != nil {
		return nil, err
	}
	byID := map[string]*WorkspaceSummary{}
	for _, w := range stored {
		if ident.ValidateFull("workspace", w.ID) != nil || (w.Retired && !all) {
			continue
		}
		if w.DescriptorDamaged {
			return nil, fault.Integrity("the workspace descriptor %s is damaged", s.store.DescriptorLocation(w.ID))
		}
		ws := &WorkspaceSummary{ID: w.ID, Checkpoints: w.Checkpoints, LastCheckpointAt: w.LastCheckpointAt}
		if d := w.Descriptor; d != nil {
			ws.Root, ws.Host, ws.CreatedAt = d.Root, d.Host, d.CreatedAt
		}
		if w.Retired {
			ws.RetiredAt = w.RetiredAt
		}
		byID[w.ID] = ws
	}
	if s.db != nil {
		rows, err := s.db.Workspaces(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			w, ok := byID[r.ID]
			if !ok {
				continue // a workspace of the database that keeps its content in another store, or retired
			}
			if w.Root == "" {
				w.Root, w.Host, w.CreatedAt = r.Root, r.Host, r.CreatedAt
			}
			w.Checkpoints, w.LastCheckpointAt = r.Checkpoints, r.Newest
		}
	}
	out := make([]WorkspaceSummary, 0, len(byID))
	for _, w := range byID {
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b WorkspaceSummary) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// SourceCheckpoint is the checkpoint a clone starts from.
type SourceCheckpoint struct {
	Workspace string
	ID        string
	Root      tree.Hash
	CreatedAt time.Time
}

// Checkpoint finds workspace id's checkpoint ref (a full ID or a unique prefix; empty: the newest)
// of the store: in the database when one was named and holds the workspace, else in the
// workspace's records. A workspace the store holds no records of is not found, whatever a database
// says of it (its content is in another store).
func (s *SharedStoreService) Checkpoint(ctx context.Context, id, ref string) (SourceCheckpoint, error) {
	if err := ident.ValidateFull("workspace", id); err != nil {
		return SourceCheckpoint{}, err
	}
	if ref != "" {
		if err := ident.ValidateRef("checkpoint", ref); err != nil {
			return SourceCheckpoint{}, err
		}
	}
	if held, err := s.records.Committed(id); err != nil {
		return SourceCheckpoint{}, err
	} else if !held {
		return SourceCheckpoint{}, fault.NotFound("the store %s holds no workspace %s", s.url, id)
	}
	retired, retiredAt, err := s.store.Retirement(id)
	if err != nil {
		return SourceCheckpoint{}, err
	}
	if s.db != nil && !retired {
		if src, held, err := s.dbCheckpoint(ctx, id, ref); held {
			return src, err
		}
		// A workspace of the store whose metadata is not in this database (its own plan.db):
		// its records are the whole of it, as Workspaces counts it.
	}
	list, err := s.records.Checkpoints(id)
	if err != nil {
		return SourceCheckpoint{}, err
	}
	var found []port.RecordedCheckpoint
	for _, c := range list {
		if retired && !c.Pinned {
			continue // a retired workspace keeps only its pinned checkpoints
		}
		if ref == "" || strings.HasPrefix(c.ID, ref) {
			found = append(found, c)
		}
		if ref == "" || c.ID == ref {
			break
		}
	}
	switch {
	case len(found) == 0 && retired:
		return SourceCheckpoint{}, fault.NotFound("workspace %s was retired at %s and keeps only its pinned checkpoints: %s",
			id, retiredAt.UTC().Format(time.RFC3339), map[bool]string{true: "it has none", false: "checkpoint " + ref + " is not one of them"}[ref == ""])
	case len(found) == 0 && ref == "":
		return SourceCheckpoint{}, fault.NotFound("workspace %s has no checkpoint", id)
	case len(found) == 0:
		return SourceCheckpoint{}, fault.NotFound("checkpoint %s not found in workspace %s", ref, id)
	case len(found) > 1 && found[len(found)-1].ID != ref:
		ids := make([]string, len(found))
		for i, c := range found {
			ids[i] = c.ID
		}
		return SourceCheckpoint{}, fault.Invalid("checkpoint ID prefix %s is ambiguous: it matches %s", ref, strings.Join(ids, ", "))
	}
	c := found[len(found)-1]
	return SourceCheckpoint{Workspace: id, ID: c.ID, Root: c.Root, CreatedAt: c.CreatedAt}, nil
}

// dbCheckpoint finds the checkpoint in the database; held is false when the database does not hold
// the workspace.
func (s *SharedStoreService) dbCheckpoint(ctx context.Context, id, ref string) (src SourceCheckpoint, held bool, err error) {
	cps, err := s.db.Checkpoints(ctx, id)
	if errors.Is(err, fault.ErrNotFound) {
		return SourceCheckpoint{}, false, nil
	}
	if err != nil {
		return SourceCheckpoint{}, true, err
	}
	defer func() { _ = cps.Close() }()
	var cp *checkpoint.Checkpoint
	if ref == "" {
		if cp, err = cps.Latest(ctx); errors.Is(err, fault.ErrNotFound) {
			return SourceCheckpoint{}, true, fault.NotFound("workspace %s has no checkpoint", id)
		}
	} else {
		cp, err = cps.Resolve(ctx, ref)
	}
	if err != nil {
		return SourceCheckpoint{}, true, err
	}
	return SourceCheckpoint{Workspace: id, ID: string(cp.ID()), Root: cp.Root(), CreatedAt: cp.CreatedAt()}, true, nil
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
func (s *SharedStoreService) RetireCheck(id string) (Retirement, error) {
	if err := ident.ValidateFull("workspace", id); err != nil {
		return Retirement{}, err
	}
	r := Retirement{ID: id, Liveness: Unknown}
	if retired, at, err := s.store.Retirement(id); err != nil {
		return r, err
	} else if retired {
		r.Already, r.RetiredAt = true, at
	}
	d, ok, err := s.store.Descriptor(id)
	switch {
	case err != nil:
		return r, err
	case !ok:
		held, err := s.records.Committed(id)
		if err != nil {
			return r, err
		}
		if !held {
			return r, fault.NotFound("the store %s holds no workspace %s (see `plan workspaces --store %s`)", s.store.Location(), id, s.url)
		}
		return r, nil // its descriptor is not written yet (or was lost): where it is, is not known
	case d.WorkspaceID != id:
		return r, fault.Integrity("the workspace descriptor %s is damaged", s.store.DescriptorLocation(id))
	}
	r.Root, r.Host = d.Root, d.Host
	if d.Root == "" || d.Host != s.machine.Hostname() {
		return r, nil
	}
	r.Liveness = Gone
	// A configuration that cannot be read may be this workspace's: live, to be safe.
	if configured, err := s.machine.ConfiguredWorkspace(d.Root); err != nil || configured == id {
		r.Liveness = Live
	}
	return r, nil
}

// Retire retires the workspace RetireCheck found; retiring one retired before changes nothing.
func (s *SharedStoreService) Retire(_ context.Context, r Retirement) (Retirement, error) {
	now, err := s.store.Now()
	if err != nil {
		return r, err
	}
	at, already, err := s.store.Retire(r.ID, s.machine.Hostname(), now)
	if err != nil {
		return r, err
	}
	r.RetiredAt, r.Already = at, already
	return r, nil
}
