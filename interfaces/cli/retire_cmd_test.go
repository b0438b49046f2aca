package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sharedSource makes a workspace with one checkpoint on a new file:// store and returns the
// store's URL, the workspace's directory and its ID.
func sharedSource(t *testing.T) (store, dir, id string) {
	t.Helper()
	base := t.TempDir()
	store = "file://" + filepath.Join(base, "store")
	dir = filepath.Join(base, "ws")
	if err := os.Mkdir(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	var v struct {
		ID string `json:"workspace_id"`
	}
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "init", "--store", store).stdout), &v); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.txt", "one\n")
	mustPlan(t, dir, "checkpoint", "create")
	return store, dir, v.ID
}

// A workspace whose descriptor names another machine may be in use there: plan cannot tell, so
// it asks; `y` retires it, and the text says what was done.
func TestRetireAsksForAnotherMachinesWorkspace(t *testing.T) {
	store, dir, id := sharedSource(t)
	desc := filepath.Join(strings.TrimPrefix(store, "file://"), "workspaces", id+".json")
	_ = os.Chmod(desc, 0o600)
	if err := os.WriteFile(desc, []byte(`{"workspace_id":"`+id+`","root":"/elsewhere","host":"another-machine","created_at":"2026-01-01T00:00:00Z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	o := invoke(Runner{Interactive: true, Stdin: strings.NewReader("n\n")}, "-C", dir, "workspaces", "retire", id, "--store", store)
	if o.code != ExitDeclined || !strings.Contains(o.stderr, "another-machine, another machine") {
		t.Fatalf("declined: %v", o)
	}
	o = invoke(Runner{Interactive: true, Stdin: strings.NewReader("y\n")}, "-C", dir, "workspaces", "retire", id, "--store", store)
	if o.code != ExitOK || !strings.Contains(o.stdout, "Retired workspace "+id+" (/elsewhere on another-machine)") {
		t.Fatalf("retired: %v", o)
	}
	o = invoke(Runner{}, "-C", dir, "--json", "workspaces", "retire", id, "--store", store)
	if o.code != ExitOK || !strings.Contains(o.stdout, `"directory": "unknown"`) || !strings.Contains(o.stdout, `"already_retired": true`) {
		t.Fatalf("again: %v", o)
	}
}

// A workspace without a descriptor (lost) is not known to be anywhere: retiring it asks.
func TestRetireAsksWhenTheStoreNamesNoDirectory(t *testing.T) {
	store, dir, id := sharedSource(t)
	if err := os.Remove(filepath.Join(strings.TrimPrefix(store, "file://"), "workspaces", id+".json")); err != nil {
		t.Fatal(err)
	}
	o := invoke(Runner{Interactive: true, Stdin: strings.NewReader("\n")}, "-C", dir, "workspaces", "retire", id, "--store", store)
	if o.code != ExitDeclined || !strings.Contains(o.stderr, "a directory the store does not name") {
		t.Fatalf("declined: %v", o)
	}
}

// A store that cannot be opened, or a database DSN plan cannot use, is refused before anything.
func TestRetireRefusesBadStoresAndDatabases(t *testing.T) {
	store, dir, id := sharedSource(t)
	if o := inWorkspace(dir, "workspaces", "retire", id, "--store", "http://x"); o.code != ExitInvalid {
		t.Fatalf("a bad store URL: %v", o)
	}
	if o := inWorkspace(dir, "workspaces", "retire", id, "--store", store, "--db", "mysql://x"); o.code != ExitInvalid {
		t.Fatalf("a bad DSN: %v", o)
	}
	if o := inWorkspace(dir, "workspaces", "retire", id, "--store", store, "--db", "sqlite:///nowhere/at/all/plan.db"); o.code == ExitOK {
		t.Fatalf("a database that cannot be opened: %v", o)
	}
}
