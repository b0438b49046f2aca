package maintenance_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/infrastructure/internal/maintenance"
	"github.com/planhq/plan/tests/testkit/servertest"
)

// pgWorkspace makes a workspace on a shared directory store and a fresh PostgreSQL database, with
// one checkpoint, and returns doctor's view of it and the database's DSN.
func pgWorkspace(t *testing.T) (*bootstrap.Setup, string) {
	t.Helper()
	ctx := context.Background()
	dsn := servertest.Postgres(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Init: true, Store: "file://" + t.TempDir(), DB: dsn})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Services.Checkpoints.Create(ctx, application.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	// As plan doctor sees it: the configuration records the DSN without its password.
	pw := password(t, dsn)
	s, err := bootstrap.Inspect(root, func(k string) string {
		if k == "PGPASSWORD" {
			return pw
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, dsn
}

// password is the password dsn carries (the test server's always has one).
func password(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		t.Fatalf("the test server's DSN: %v", err)
	}
	pw, ok := u.User.Password()
	if !ok || pw == "" {
		t.Fatal("the test server's DSN has no password")
	}
	return pw
}

// A healthy workspace on PostgreSQL is left alone by a rebuild; one whose configuration lost its
// workspace ID cannot be rebuilt in a shared database (it would not know its rows).
func TestRebuildInPlaceRefusals(t *testing.T) {
	ctx := context.Background()
	s, _ := pgWorkspace(t)
	target := s.Target()
	res, err := maintenance.Rebuild(ctx, target, rebuildTime)
	if err != nil || res.Rebuilt || res.Why != "" {
		t.Fatalf("rebuild of a healthy workspace: %+v, %v", res, err)
	}
	target.WorkspaceID = ""
	if _, err := maintenance.Rebuild(ctx, target, rebuildTime); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "workspace ID") {
		t.Errorf("rebuild in place without the workspace ID: %v", err)
	}
}

// doctor checks a PostgreSQL database's schema: rows that belong to no workspace it lists (a
// workspace's row deleted by hand) are a complaint naming the table, with the advice to rebuild in
// place, and no message shows the password.
func TestDoctorChecksThePostgresSchema(t *testing.T) {
	ctx := context.Background()
	s, dsn := pgWorkspace(t)
	if r := maintenance.Doctor(ctx, s.Target(), false); !r.OK {
		t.Fatalf("doctor of a healthy workspace: %+v", r)
	}
	servertest.Exec(t, dsn, "INSERT INTO checkpoint_failures (workspace_id, id, at, reason) VALUES ('fedcba9876543210fedcba98', 1, 0, 'x')")
	r := maintenance.Doctor(ctx, s.Target(), false)
	var db *maintenance.Finding
	for i, f := range r.Findings {
		if f.Check == "database" {
			db = &r.Findings[i]
		}
		if strings.Contains(f.Problem+f.Repair, password(t, dsn)) {
			t.Errorf("a finding shows the DSN with its password: %+v", f)
		}
	}
	if r.OK || db == nil || db.OK || !strings.Contains(db.Problem, "PostgreSQL schema check") ||
		!strings.Contains(db.Problem, "checkpoint_failures has 1 rows of no listed workspace") || !strings.Contains(db.Repair, "in place") {
		t.Fatalf("doctor of a database missing a table: %+v", r)
	}
}

// A shared database restored from a backup older than the workspace holds none of its rows: doctor
// says the workspace is missing from it, and the rebuild puts its rows back from its records,
// leaving the other workspaces' rows as they are.
func TestAWorkspaceMissingFromItsDatabase(t *testing.T) {
	ctx := context.Background()
	s, dsn := pgWorkspace(t)
	other, err := bootstrap.Open(ctx, bootstrap.Config{Root: t.TempDir(), Init: true, Store: "file://" + t.TempDir(), DB: dsn})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Services.Checkpoints.Create(ctx, application.CreateRequest{}); err != nil {
		t.Fatal(err)
	}
	_ = other.Close()
	env := func(k string) string {
		if k == "PGPASSWORD" {
			return password(t, dsn)
		}
		return ""
	}
	ids := func(root string) []string {
		t.Helper()
		app, err := bootstrap.Open(ctx, bootstrap.Config{Root: root, Getenv: env})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = app.Close() }()
		cps, err := app.Services.Checkpoints.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cps {
			out = append(out, string(c.ID()))
		}
		return out
	}
	want, theirs := ids(s.Layout.Root), ids(other.Services.Layout.Root)
	for _, table := range []string{"attempts", "decisions", "corrections", "plans", "checkpoints", "checkpoint_failures", "history", "operations", "ledger", "workspaces"} {
		column := "workspace_id"
		if table == "workspaces" {
			column = "id"
		}
		servertest.Exec(t, dsn, "DELETE FROM "+table+" WHERE "+column+" = '"+s.WorkspaceID+"'")
	}
	r := maintenance.Doctor(ctx, s.Target(), false)
	if r.OK || r.Findings[0].Check != "database" || r.Findings[0].OK {
		t.Fatalf("doctor of a workspace missing from its database: %+v", r)
	}
	res, err := maintenance.Rebuild(ctx, s.Target(), rebuildTime)
	if err != nil || !res.Rebuilt || !strings.Contains(res.Why, "no rows of this workspace") || res.Checkpoints != 1 {
		t.Fatalf("rebuild: %+v, %v", res, err)
	}
	if got := ids(s.Layout.Root); len(got) != 1 || got[0] != want[0] {
		t.Errorf("checkpoints after the rebuild: %v, want %v", got, want)
	}
	if r := maintenance.Doctor(ctx, s.Target(), false); !r.OK {
		t.Errorf("doctor after the rebuild: %+v", r)
	}
	if got := ids(other.Services.Layout.Root); len(got) != 1 || got[0] != theirs[0] {
		t.Errorf("the other workspace's checkpoints: %v, want %v", got, theirs)
	}
}

// A database server that refuses the credentials: doctor says so and advises the credentials,
// not a reachable server, nor a rebuild.
func TestDoctorOfADatabaseThatRefusesTheLogin(t *testing.T) {
	s, _ := pgWorkspace(t)
	tg := s.Target()
	u, err := url.Parse(tg.DB)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), "not-the-password")
	tg.DB = u.String()
	r := maintenance.Doctor(context.Background(), tg, false)
	f := r.Findings[0]
	if r.OK || f.Check != "database" || f.OK || !strings.Contains(f.Repair, "credentials the server accepts") || strings.Contains(f.Problem+f.Repair, "not-the-password") {
		t.Fatalf("doctor with a refused login: %+v", r)
	}
}
