package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/infrastructure/bootstrap"
)

// A directory the user may not read is named by every command that meets it: the checkpoint that
// left it out warns, status says so in text and JSON, and installing an agent's hooks in the
// project warns before the first tool call finds out. The checkpoint of the rest succeeds.
func TestUnreadablePathsAreNamed(t *testing.T) {
	env := map[string]string{"PLAN_DATA_DIR": filepath.Join(t.TempDir(), "data"), "PLAN_WATCH": "0", "HOME": t.TempDir()}
	run := func(args ...string) outcome {
		return invoke(Runner{Getenv: func(k string) string { return env[k] }}, args...)
	}
	dir := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "src/a.go", "package a\n")
	writeFile(t, dir, "pgdata/base", "rows\n")
	bootstrap.TestRefuseReads(t, "pgdata")
	if o := run("-C", dir, "init"); o.code != ExitOK {
		t.Fatalf("init: %v", o)
	}
	if o := run("-C", dir, "checkpoint", "create"); o.code != ExitOK || !strings.Contains(o.stderr, `could not read "pgdata"`) {
		t.Fatalf("checkpoint: %v", o)
	}
	if o := run("-C", dir, "status"); o.code != ExitOK || !strings.Contains(o.stdout, `unreadable: could not read "pgdata"`) {
		t.Fatalf("status: %v", o)
	}
	o := run("-C", dir, "--json", "status")
	var v struct {
		Workspace struct {
			Unreadable []string `json:"unreadable"`
		} `json:"workspace"`
	}
	if o.code != ExitOK || json.Unmarshal([]byte(o.stdout), &v) != nil || len(v.Workspace.Unreadable) != 1 || v.Workspace.Unreadable[0] != "pgdata" {
		t.Fatalf("status --json: %v", o)
	}
	if o := run("-C", dir, "agent", "install", "claude", "--project", "--bin", "/usr/local/bin/plan"); o.code != ExitOK || !strings.Contains(o.stderr, `could not read "pgdata"`) {
		t.Fatalf("agent install: %v", o)
	}
}
