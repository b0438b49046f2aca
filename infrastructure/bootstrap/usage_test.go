package bootstrap_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/infrastructure/bootstrap"
)

// The data directory's budget counts every workspace's history, the deleted workspace's too; the
// total is measured again when a workspace is added or retired or the last measure is old, and is
// otherwise read from its cache; it warns from 80% on and deletes nothing.
func TestTheDataDirectoryBudgetCountsDeletedWorkspaces(t *testing.T) {
	home := t.TempDir()
	o := newOutside(t)
	env := map[string]string{"HOME": home, "PLAN_DATA_DIR": o.data}
	o.getenv = func(k string) string { return env[k] }
	getenv := o.getenv
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	size := func(n int64) string { return fmt.Sprintf("%dB", n) }

	if u, err := bootstrap.DataBudget(getenv, now); err != nil || u != (bootstrap.DataUsage{}) {
		t.Fatalf("no budget: %+v %v", u, err)
	}
	cfg := filepath.Join(home, ".config", "plan", "config.yaml")
	mkdir(t, filepath.Dir(cfg))
	if err := os.WriteFile(cfg, []byte("data_max_bytes: 100\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if u, err := bootstrap.DataBudget(getenv, now); err != nil || u.Bytes != 0 || u.MaxBytes != 100 || u.Warning(size) != "" {
		t.Fatalf("a data directory not made yet: %+v %v", u, err)
	}

	kept, gone := mkdir(t, filepath.Join(t.TempDir(), "kept")), mkdir(t, filepath.Join(t.TempDir(), "gone"))
	if err := os.WriteFile(filepath.Join(gone, "big"), []byte(strings.Repeat("x", 4096)), 0o600); err != nil {
		t.Fatal(err)
	}
	o.init(kept, "first")
	o.init(gone, "first")
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	u, err := bootstrap.DataBudget(getenv, now)
	if err != nil || u.Workspaces != 2 || u.Gone != 1 || u.GoneBytes == 0 || u.Bytes <= u.GoneBytes || u.Config != cfg {
		t.Fatalf("measured: %+v %v", u, err)
	}
	w := u.Warning(size)
	if !strings.Contains(w, "over its budget of 100B") || !strings.Contains(w, "1 workspace(s) no longer in their directory") ||
		!strings.Contains(w, "plan workspaces retire ID") || !strings.Contains(w, cfg) {
		t.Fatalf("warning: %s", w)
	}

	// Within the measure's age, with no workspace added or retired, the cache answers.
	mine := filepath.Join(o.data, "workspaces")
	entries, err := os.ReadDir(mine)
	if err != nil || len(entries) != 2 {
		t.Fatalf("workspaces: %v %v", entries, err)
	}
	grown := filepath.Join(mine, entries[0].Name(), "grown")
	if err := os.WriteFile(grown, make([]byte, 1000), 0o600); err != nil {
		t.Fatal(err)
	}
	if again, err := bootstrap.DataBudget(getenv, now.Add(time.Minute)); err != nil || again.Bytes != u.Bytes {
		t.Fatalf("within the cache's age: %+v %v (was %d)", again, err, u.Bytes)
	}
	later, err := bootstrap.DataBudget(getenv, now.Add(11*time.Minute))
	if err != nil || later.Bytes != u.Bytes+1000 {
		t.Fatalf("past the cache's age: %+v %v (was %d)", later, err, u.Bytes)
	}
	// A damaged entry counts as no longer in its directory.
	damaged := mkdir(t, filepath.Join(mine, "ws-damaged"))
	if err := os.WriteFile(filepath.Join(damaged, "workspace.json"), make([]byte, 10), 0o600); err != nil {
		t.Fatal(err)
	}
	if d, err := bootstrap.DataBudget(getenv, now.Add(12*time.Minute)); err != nil || d.Workspaces != 3 || d.Gone != 2 || d.Bytes != later.Bytes+10 {
		t.Fatalf("with a damaged entry: %+v %v", d, err)
	}
	if err := os.RemoveAll(damaged); err != nil {
		t.Fatal(err)
	}
	// A clock that went back measures again too; so does a damaged cache.
	if err := os.WriteFile(filepath.Join(o.data, "usage.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if again, err := bootstrap.DataBudget(getenv, now); err != nil || again.Bytes != later.Bytes {
		t.Fatalf("a damaged cache: %+v %v", again, err)
	}

	// Under 80%: no warning; between: the share, and what frees space when nothing is gone.
	within := bootstrap.DataUsage{Path: o.data, Config: cfg, MaxBytes: 1000, Bytes: 850, Workspaces: 1}
	if w := within.Warning(size); !strings.Contains(w, "85% of its budget of 1000B") || !strings.Contains(w, "plan checkpoint prune") {
		t.Fatalf("at 85%%: %s", w)
	}
	within.Bytes = 100
	if w := within.Warning(size); w != "" {
		t.Fatalf("at 10%%: %s", w)
	}
	if (bootstrap.DataUsage{}).Percent() != 0 {
		t.Fatal("percent without a budget")
	}

	// A configuration that cannot be read is an error, as is a data directory that is not private.
	if err := os.WriteFile(cfg, []byte("data_max_bytes: lots\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrap.DataBudget(getenv, now); err == nil {
		t.Fatal("a bad budget was read")
	}
	if err := os.WriteFile(cfg, []byte("data_max_bytes: 100\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(o.data, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := bootstrap.DataBudget(getenv, now.Add(time.Hour)); err == nil {
		t.Fatal("a data directory open to others was measured")
	}
}
