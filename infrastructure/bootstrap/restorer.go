package bootstrap

import (
	"context"

	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/watch"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// newRestorer is the workspace's restorer, which tells the watch service (through the command's
// snapshotter) what each restore placed and hands it what the restore replaced: see
// workspace.Scanner.Vouch and watch.Snapshotter.Placed.
func newRestorer(l workspace.Layout, store *objectstore.Store, sc *workspace.Scanner, w *watch.Snapshotter) *workspace.Restorer {
	r := workspace.NewRestorer(l, store, sc)
	r.OnPlaced = func(ctx context.Context, files []workspace.Placed, trash string) bool {
		_, took := w.Placed(ctx, files, trash)
		return took
	}
	return r
}
