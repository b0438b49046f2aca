package bootstrap_test

import (
	"os"
	"testing"
)

// TestMain gives the package's tests a data directory of their own when PLAN_DATA_DIR names none
// (make's test targets set one per run): the workspaces they make never keep their history in the
// user's ~/.local/share/plan.
func TestMain(m *testing.M) {
	if os.Getenv("PLAN_DATA_DIR") != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "plan-data-")
	if err != nil {
		panic(err)
	}
	_ = os.Setenv("PLAN_DATA_DIR", dir)
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
