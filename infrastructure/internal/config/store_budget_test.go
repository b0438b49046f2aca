package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
)

// store is a URL, or a mapping that also holds the disk budget (store.max_bytes,
// store.workspace_max_bytes, as the contract names them); Save writes back the form that holds
// what the file has, and Load reads it again unchanged.
func TestStoreWithItsBudget(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	for content, want := range map[string]File{
		"store: s3://b/p\n": {Store: "s3://b/p"},
		"store:\n  url: s3://b/p\n  max_bytes: 10GiB\n  workspace_max_bytes: 1GiB\n": {
			Store: "s3://b/p", Budget: &Budget{MaxBytes: "10GiB", WorkspaceMaxBytes: "1GiB"}},
		"workspace_id: x\nstore:\n  max_bytes: 5MB\n": {WorkspaceID: "x", Budget: &Budget{MaxBytes: "5MB"}},
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Load(path)
		if err != nil || got.Store != want.Store || got.WorkspaceID != want.WorkspaceID || (got.Budget == nil) != (want.Budget == nil) ||
			(got.Budget != nil && *got.Budget != *want.Budget) {
			t.Fatalf("%q: %+v %v, want %+v", content, got, err, want)
		}
		if err := Save(path, got); err != nil {
			t.Fatal(err)
		}
		again, err := Load(path)
		if err != nil || again.Store != got.Store || (again.Budget == nil) != (got.Budget == nil) || (again.Budget != nil && *again.Budget != *got.Budget) {
			b, _ := os.ReadFile(path)
			t.Fatalf("%q saved as\n%s\nreads %+v, %v", content, b, again, err)
		}
	}
	// A budget added to a file that has no store yet goes after the workspace's ID.
	if err := Save(path, File{WorkspaceID: "w", DB: "sqlite:///x.db", Budget: &Budget{MaxBytes: "1GiB"}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "workspace_id: w\nstore:\n  max_bytes: 1GiB\ndb:") {
		t.Fatalf("saved:\n%s", b)
	}
	for content, want := range map[string]string{
		"store:\n  url: s3://b\n  color: blue\n": "field color not found in store",
		"store:\n  max_bytes: [1, 2]\n":          "store.max_bytes: want a value, not a list",
		"store:\n  max_bytes: {a: 1}\n":          "store.max_bytes: want a value, not a mapping",
		"budget:\n  max_bytes: 1GiB\n":           "field budget not found",
		"store: [\n":                             "did not find",
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want invalid input saying %q", content, err, want)
		}
	}
}
