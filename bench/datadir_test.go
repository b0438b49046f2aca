package main

import (
	"os"
	"path/filepath"
	"testing"
)

// A workspace's history is where its .plan/config.yaml's state_dir says, else in .plan/ itself.
func TestHistoryDir(t *testing.T) {
	ws := t.TempDir()
	if got := historyDir(ws); got != filepath.Join(ws, ".plan") {
		t.Fatalf("no .plan: %s", got)
	}
	if err := os.MkdirAll(filepath.Join(ws, ".plan"), 0o750); err != nil {
		t.Fatal(err)
	}
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(ws, ".plan", "config.yaml"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("# comment\nworkspace_id: 01a\n")
	if got := historyDir(ws); got != filepath.Join(ws, ".plan") {
		t.Fatalf("--store workspace: %s", got)
	}
	write("workspace_id: 01a\nstate_dir: /data/workspaces/01a\n")
	if got := historyDir(ws); got != "/data/workspaces/01a" {
		t.Fatalf("outside: %s", got)
	}
	write("state_dir: relative/x\n")
	if got := historyDir(ws); got != filepath.Join(ws, ".plan") {
		t.Fatalf("a relative state_dir: %s", got)
	}
}

// Resetting a workspace removes its history in the bench's data directory, so init starts anew,
// and refuses to remove one anywhere else.
func TestRemoveWorkspaceState(t *testing.T) {
	base := t.TempDir()
	data, err := makeDataDir(filepath.Join(base, "run"))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(data); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data directory %v %v", fi, err)
	}
	ws, home := filepath.Join(base, "run", "ws"), filepath.Join(data, "workspaces", "01a")
	for _, d := range []string{filepath.Join(ws, ".plan"), home} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, ".plan", "config.yaml"), []byte("state_dir: "+home+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := removeWorkspaceState(filepath.Join(base, "elsewhere"), ws); err == nil {
		t.Fatal("removed a history outside the bench directory")
	}
	if err := removeWorkspaceState(base, ws); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(ws, ".plan"), home} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s is left (%v)", d, err)
		}
	}
	b := &bench{}
	if r := b.runnerWithData(data); len(r.env) != 1 || r.env[0] != "PLAN_DATA_DIR="+data {
		t.Errorf("runner env %q", r.env)
	}
}
