package bootstrap_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/planhq/plan/infrastructure/bootstrap"
)

// Without a getenv, the process's environment is read: the data directory PLAN_DATA_DIR names
// (TestMain sets one), and Former and DataBudget look there.
func TestTheProcessEnvironmentIsTheDefault(t *testing.T) {
	want := filepath.Clean(os.Getenv("PLAN_DATA_DIR"))
	if got, err := bootstrap.DataDir(nil); err != nil || got != want {
		t.Fatalf("DataDir(nil) = %q, %v; want %q", got, err, want)
	}
	if root, ok := bootstrap.Former(t.TempDir(), nil); ok {
		t.Fatalf("Former of a directory no workspace was in: %q", root)
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	if u, err := bootstrap.DataBudget(nil, time.Now()); err != nil || u.MaxBytes != 0 {
		t.Fatalf("DataBudget(nil) without a per-user configuration: %+v, %v", u, err)
	}
}
