package port

import (
	"context"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/tree"
)

// WorkspaceDescriptor is what a shared store says of one of its workspaces: where it was made, and
// when.
type WorkspaceDescriptor struct {
	WorkspaceID, Root, Host string
	CreatedAt               time.Time
}

// StoredWorkspace is one workspace a shared store holds (records, a descriptor or a retirement of
// it), as the store's listing reads it.
type StoredWorkspace struct {
	ID string
	// Descriptor is nil when the store holds none; DescriptorDamaged says one is there that does not
	// describe the workspace (it does not parse, or names another).
	Descriptor        *WorkspaceDescriptor
	DescriptorDamaged bool
	// Retired says the workspace was retired, at RetiredAt.
	Retired   bool
	RetiredAt time.Time
	// Checkpoints counts the checkpoints its records hold; LastCheckpointAt is when the newest was
	// made (zero when there is none, or its records were not read).
	Checkpoints      int
	LastCheckpointAt time.Time
}

// RecordedCheckpoint is one checkpoint as a workspace's records in a shared store hold it.
type RecordedCheckpoint struct {
	ID        string
	Root      tree.Hash
	CreatedAt time.Time
	// Pinned is set for a checkpoint kept from every prune (and, its workspace retired, from gc).
	Pinned bool
}

// SharedStore is what the shared-store use cases read and write of a shared store, outside any
// of its workspaces.
type SharedStore interface {
	// Location is the store as messages name it; DescriptorLocation is workspace id's descriptor's.
	Location() string
	DescriptorLocation(id string) string
	// Workspaces lists what the store holds of each workspace, through the summary the last gc
	// wrote when one is there (a workspace unchanged since is not read again).
	Workspaces() ([]StoredWorkspace, error)
	// Descriptor reads workspace id's descriptor; ok is false when the store holds none. One that
	// does not parse is returned naming no workspace.
	Descriptor(id string) (d WorkspaceDescriptor, ok bool, err error)
	// Retirement says whether workspace id was retired, and when; a retirement that cannot be read
	// is fault.ErrIntegrity.
	Retirement(id string) (retired bool, at time.Time, err error)
	// Retire retires workspace id from host at now; a workspace retired before keeps its
	// retirement (already is set, and at is that retirement's time).
	Retire(id, host string, now time.Time) (at time.Time, already bool, err error)
	// Now is the store's time.
	Now() (time.Time, error)
}

// SharedRecords reads the records a shared store holds of its workspaces' history.
type SharedRecords interface {
	// Committed says whether the store holds committed records of workspace id.
	Committed(id string) (bool, error)
	// Checkpoints lists the checkpoints workspace id's records hold, newest first.
	Checkpoints(id string) ([]RecordedCheckpoint, error)
}

// DatabaseWorkspace is one workspace of a database its workspaces share.
type DatabaseWorkspace struct {
	ID, Root, Host string
	CreatedAt      time.Time
	// Checkpoints counts its checkpoints; Newest is when the newest was made (zero: none).
	Checkpoints int
	Newest      time.Time
}

// SharedDatabase is a database several workspaces of a shared store share.
type SharedDatabase interface {
	// Workspaces lists every workspace the database holds.
	Workspaces(ctx context.Context) ([]DatabaseWorkspace, error)
	// Checkpoints opens the checkpoints of workspace id, fault.ErrNotFound when the database does
	// not hold it; the caller closes them.
	Checkpoints(ctx context.Context, id string) (WorkspaceCheckpoints, error)
}

// WorkspaceCheckpoints are one workspace's checkpoints in a shared database (see
// checkpoint.Repository for what Latest and Resolve return).
type WorkspaceCheckpoints interface {
	Latest(ctx context.Context) (*checkpoint.Checkpoint, error)
	Resolve(ctx context.Context, ref string) (*checkpoint.Checkpoint, error)
	Close() error
}

// Machine is the machine a command runs on, as the shared-store use cases look at it.
type Machine interface {
	// Hostname is this machine's name ("" when it has none).
	Hostname() string
	// ConfiguredWorkspace is the workspace ID the configuration in directory root names ("" when
	// none does, or root cannot be a workspace's directory); an error when it cannot be read.
	ConfiguredWorkspace(root string) (string, error)
}
