package registry

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/fault"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDirFollowsTheEnvironment(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
		err  error
	}{
		{map[string]string{EnvDataDir: "/data/x/", "XDG_DATA_HOME": "/xdg", "HOME": "/h"}, "/data/x", nil},
		{map[string]string{"XDG_DATA_HOME": "/xdg", "HOME": "/h"}, "/xdg/plan", nil},
		{map[string]string{"XDG_DATA_HOME": "relative", "HOME": "/h"}, filepath.Join("/h", platformDataHome, "plan"), nil},
		{map[string]string{"HOME": "/h"}, filepath.Join("/h", platformDataHome, "plan"), nil},
		{map[string]string{EnvDataDir: "rel"}, "", fault.ErrInvalid},
		{map[string]string{"HOME": "rel"}, "", fault.ErrInvalid},
	} {
		got, err := Dir(env(c.env))
		if got != c.want || !errors.Is(err, c.err) && (c.err != nil || err != nil) {
			t.Errorf("Dir(%v) = %q, %v; want %q, %v", c.env, got, err, c.want, c.err)
		}
	}
	// No HOME in the environment given: the process's home directory.
	if home, err := os.UserHomeDir(); err == nil {
		if got, err := Dir(env(nil)); err != nil || got != filepath.Join(home, platformDataHome, "plan") {
			t.Errorf("Dir without HOME = %q, %v", got, err)
		}
	}
}

func TestOpenMakesAPrivateDirectoryAndRefusesOthers(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "a", "plan")
	if _, err := Open(dir, false); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of a missing directory without create: %v", err)
	}
	r, err := Open(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, r.workspaces()} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v, %v; want 0700", d, fi.Mode(), err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, false); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "chmod go-rwx") {
		t.Fatalf("a data directory open to others: %v", err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(file, false); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("a data directory that is a file: %v", err)
	}
	if _, err := Open(filepath.Join(file, "below"), true); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), EnvDataDir) {
		t.Fatalf("a data directory that cannot be made: %v", err)
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		if err := os.Mkdir(other, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(other, false); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "another user") {
			t.Fatalf("a data directory another user owns: %v", err)
		}
	}
}

func TestEntriesRoundTripAndAreListed(t *testing.T) {
	r, err := Open(filepath.Join(t.TempDir(), "plan"), true)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	now := time.Now().UTC().Truncate(time.Second)
	e := Entry{WorkspaceID: "0123456789abcdef01234567", Host: "h", CreatedAt: now, AttachedAt: now}
	if err := e.Bind(root); err != nil {
		t.Fatal(err)
	}
	if err := r.Make(e); err != nil {
		t.Fatal(err)
	}
	if err := r.Make(e); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("a second workspace claiming one ID: %v", err)
	}
	got, err := r.Load(e.WorkspaceID)
	if err != nil || got.Root != root || got.State != r.StateDir(e.WorkspaceID) || !got.Same(root) || got.Same(t.TempDir()) {
		t.Fatalf("Load = %+v, %v", got, err)
	}
	if fi, err := os.Stat(filepath.Join(got.State, EntryName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the entry's mode: %v, %v", fi, err)
	}
	// A second workspace, a damaged entry, a directory being removed and a stray file.
	e2 := e
	e2.WorkspaceID, e2.Root = "fedcba9876543210fedcba98", "/elsewhere"
	if err := r.Make(e2); err != nil {
		t.Fatal(err)
	}
	e3 := e2
	e3.WorkspaceID = "eeeeeeeeeeeeeeeeeeeeeeee" // the same root: listed first, by ID
	if err := r.Make(e3); err != nil {
		t.Fatal(err)
	}
	bad := r.StateDir("aaaaaaaaaaaaaaaaaaaaaaaa")
	if err := os.Mkdir(bad, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, EntryName), []byte(`{"workspace_id":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(r.StateDir("bbbbbbbbbbbbbbbbbbbbbbbb"), 0o700); err != nil { // being made: no entry yet
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(r.workspaces(), ".removing-x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.workspaces(), "stray"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	all, damaged, err := r.List()
	if err != nil || len(all) != 3 || all[0].WorkspaceID != e3.WorkspaceID || all[1].Root != "/elsewhere" || len(damaged) != 1 || !errors.Is(damaged[0].Err, fault.ErrIntegrity) {
		t.Fatalf("List = %+v, %+v, %v", all, damaged, err)
	}
	at, damaged, err := r.At(root)
	if err != nil || len(at) != 1 || at[0].WorkspaceID != e.WorkspaceID || len(damaged) != 1 {
		t.Fatalf("At = %+v, %+v, %v", at, damaged, err)
	}
	// An entry naming another workspace, or open to others, is refused.
	if err := os.WriteFile(filepath.Join(bad, EntryName), []byte(`{"workspace_id":"x","root":"/r"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load("aaaaaaaaaaaaaaaaaaaaaaaa"); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("an entry of another workspace: %v", err)
	}
	if err := os.Chmod(filepath.Join(bad, EntryName), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load("aaaaaaaaaaaaaaaaaaaaaaaa"); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("an entry others may write: %v", err)
	}
	if err := os.Remove(filepath.Join(bad, EntryName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(bad, EntryName), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load("aaaaaaaaaaaaaaaaaaaaaaaa"); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("an entry that is a directory: %v", err)
	}
	if _, err := r.Load("bbbbbbbbbbbbbbbbbbbbbbbb"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing entry: %v", err)
	}
	if err := e.Bind(filepath.Join(root, "missing")); err == nil {
		t.Fatal("Bind to a missing directory")
	}
	if !Mine(root) || Mine(filepath.Join(root, "missing")) {
		t.Fatal("Mine")
	}
	if err := Private(filepath.Join(root, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Private of a missing directory: %v", err)
	}
}

func TestListOfAMissingOrUnreadableRegistry(t *testing.T) {
	r := &Registry{Root: filepath.Join(t.TempDir(), "none")}
	if all, bad, err := r.List(); err != nil || all != nil || bad != nil {
		t.Fatalf("List of a missing registry: %v %v %v", all, bad, err)
	}
	if err := os.MkdirAll(r.Root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.workspaces(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.List(); err == nil {
		t.Fatal("List of a registry whose workspaces/ is a file")
	}
	if _, _, err := r.At("/x"); err == nil {
		t.Fatal("At of a registry whose workspaces/ is a file")
	}
	if err := r.Save(Entry{WorkspaceID: "0123456789abcdef01234567", Root: "/x"}); err == nil {
		t.Fatal("Save where no state directory can be")
	}
	if err := r.Make(Entry{WorkspaceID: "0123456789abcdef01234567", Root: "/x"}); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("Make where no state directory can be: %v", err)
	}
}
