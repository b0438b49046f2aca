package objectstore_test

import (
	"testing"

	"github.com/planhq/plan/infrastructure/objectstore"
	"github.com/planhq/plan/infrastructure/objectstore/storetest"
)

// A file:// store several workspaces share passes the shared-store suite.
func TestSharedDirStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) objectstore.Backend {
		return objectstore.NewDir(t.TempDir(), true)
	})
}
