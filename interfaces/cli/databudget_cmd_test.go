package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With a data directory budget in the per-user configuration, every command warns once the data
// directory nears it, naming what deleted workspaces keep, and stats shows it; nothing is deleted.
// A per-user configuration that cannot be read fails the commands that need the data directory.
func TestTheDataDirectoryBudgetWarns(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"PLAN_DATA_DIR": filepath.Join(t.TempDir(), "data"), "PLAN_WATCH": "0", "HOME": home}
	run := func(args ...string) outcome {
		return invoke(Runner{Getenv: func(k string) string { return env[k] }}, args...)
	}
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.txt", "alpha\n")
	if o := run("-C", dir, "init"); o.code != ExitOK || strings.Contains(o.stderr, "data_max_bytes") {
		t.Fatalf("init without a budget: %v", o)
	}
	writeFile(t, home, ".config/plan/config.yaml", "data_max_bytes: 1KiB\n")
	o := run("-C", dir, "checkpoint", "create")
	if o.code != ExitOK || !strings.Contains(o.stderr, "over its budget of 1.0 KiB (data_max_bytes in "+filepath.Join(home, ".config/plan/config.yaml")) {
		t.Fatalf("checkpoint over the data budget: %v", o)
	}
	if o := run("-C", dir, "stats"); o.code != ExitOK || !strings.Contains(o.stdout, "budget 1.0 KiB") {
		t.Fatalf("stats: %v", o)
	}
	o = run("-C", dir, "--json", "stats")
	var v struct {
		DataDir struct {
			MaxBytes int64  `json:"max_bytes"`
			Config   string `json:"config"`
		} `json:"data_dir"`
	}
	if o.code != ExitOK || json.Unmarshal([]byte(o.stdout), &v) != nil || v.DataDir.MaxBytes != 1024 || v.DataDir.Config == "" {
		t.Fatalf("stats --json: %v", o)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, home, ".config/plan/config.yaml", "data_max_bytes: much\n")
	if o := run("-C", dir, "status"); !strings.Contains(o.stderr, "data_max_bytes") {
		t.Fatalf("status with a bad budget: %v", o)
	}
}
