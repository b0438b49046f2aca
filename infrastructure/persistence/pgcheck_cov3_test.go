package persistence

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/infrastructure/servertest"
)

// A shared database that lost its workspaces table is never reported healthy by the integrity
// check: it cannot tell which rows belong to a listed workspace, and says the table is what fails.
func TestPostgresIntegrityCheckWithoutTheWorkspacesTable(t *testing.T) {
	ctx := context.Background()
	dsn := servertest.Postgres(t)
	db, err := Open(ctx, dsn, true, WithWorkspace(ident.New(time.Now())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := NewCheckpoints(db).Add(ctx, newCP(t, id1, time.Unix(1, 0))); err != nil {
		t.Fatal(err)
	}
	pgExec(t, dsn, `DROP TABLE workspaces CASCADE`)
	complaints, err := db.IntegrityCheck(ctx)
	if err == nil || !strings.Contains(err.Error(), "workspaces") {
		t.Fatalf("integrity check without the workspaces table: complaints %v, error %v", complaints, err)
	}
}
