package testkit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// EnvDataDir names plan's per-user data directory, where a workspace made without `--store
// workspace` keeps its history (database, store, journal, archive, logs).
const EnvDataDir = "PLAN_DATA_DIR"

var dataRoot string // guarded by mu; removed by Main

// DataDir is the data directory (PLAN_DATA_DIR) for what test t runs: one per top-level test (its
// subtests share it), in a directory of the test binary's own that Main removes. Every plan a test
// starts gets it, so nothing a test does reaches the user's data directory (~/.local/share/plan)
// nor another test's, and what a test finds there (`plan workspaces`) is its own.
func DataDir(t testing.TB) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if dataRoot == "" {
		d, err := os.MkdirTemp("", "plan-data-")
		if err != nil {
			t.Fatal(err)
		}
		dataRoot = d
	}
	top, _, _ := strings.Cut(t.Name(), "/")
	d := filepath.Join(dataRoot, top)
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// Getenv is os.Getenv with PLAN_DATA_DIR set to DataDir(t): the environment for a test's
// in-process open of a workspace (plan.Open, bootstrap.Open: their Config.Getenv).
func Getenv(t testing.TB) func(string) string {
	t.Helper()
	data := DataDir(t)
	return func(k string) string {
		if k == EnvDataDir {
			return data
		}
		return os.Getenv(k)
	}
}

// WithDataDir is env (a process's environment, os.Environ() say) with PLAN_DATA_DIR set to
// DataDir(t): an environment's own PLAN_DATA_DIR (the user's, or make's) is replaced.
func WithDataDir(t testing.TB, env []string) []string {
	t.Helper()
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, EnvDataDir+"=") {
			out = append(out, kv)
		}
	}
	return append(out, EnvDataDir+"="+DataDir(t))
}
