package bootstrap

import (
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/storeindex"
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
