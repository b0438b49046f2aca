package persistence

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/ident"
)

// limitedRole makes a login role of the server that may use every table of the database at dsn
// except what revoke takes back (a grant an administrator got wrong), and returns its DSN. The role
// is dropped when the test ends.
func limitedRole(t *testing.T, dsn string, revoke ...string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	role, pw := "plan_limited_"+hex.EncodeToString(b[:]), hex.EncodeToString(b[:])
	stmts := []string{
		`CREATE ROLE ` + role + ` LOGIN PASSWORD '` + pw + `'`,
		`GRANT USAGE, CREATE ON SCHEMA public TO ` + role,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ` + role,
		`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ` + role,
	}
	for _, r := range revoke {
		stmts = append(stmts, `REVOKE `+r+` FROM `+role)
	}
	pgExec(t, dsn, stmts...)
	t.Cleanup(func() { pgExec(t, dsn, `DROP OWNED BY `+role, `DROP ROLE `+role) })
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, pw)
	return u.String()
}

// An Open whose reads of the workspaces or the ledger the server refuses fails with the refusal,
// naming what it read: it never takes an unreadable list for an empty one (which would add a
// workspace, or write a baseline over records it cannot see), and writes no record.
func TestPostgresOpenWhenReadsAreRefused(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, revoke string
		pending      bool
		says         string
	}{
		{"workspaces", "SELECT ON workspaces", false, "list the workspaces"},
		{"ledger, settling pending records", "SELECT ON ledger", true, "ledger"},
		{"ledger, deciding on a baseline", "SELECT ON ledger", false, "ledger"},
		{"a table the baseline counts", "SELECT ON history", false, "history"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := pgImpatient(t)
			ws := ident.New(time.Now())
			made, err := Open(ctx, dsn, true, WithWorkspace(ws))
			if err != nil {
				t.Fatal(err)
			}
			if err := NewCheckpoints(made).Add(ctx, newCP(t, id1, time.Unix(1, 0))); err != nil {
				t.Fatal(err)
			}
			_ = made.Close()
			limited := limitedRole(t, dsn, tc.revoke)
			recs := newRecords(t)
			if tc.pending {
				if _, err := recs.Prepare(7, []byte(recordBody(7, ""))); err != nil {
					t.Fatal(err)
				}
			}
			_, err = Open(ctx, limited, false, WithWorkspace(ws), WithLedger(recs))
			if err == nil || !strings.Contains(err.Error(), "permission denied") || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("open: %v, want the server's refusal naming %q", err, tc.says)
			}
			c, p := names(t, recs)
			if len(c) != 0 || len(p) != map[bool]int{true: 1}[tc.pending] {
				t.Fatalf("records %v, pending %v", c, p)
			}
		})
	}
}
