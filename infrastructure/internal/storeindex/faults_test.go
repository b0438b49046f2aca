package storeindex_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/storeindex"
)

var errInjected = errors.New("injected")

// faulty fails the operations fail names (op and file or directory), and passes the rest on.
type faulty struct {
	objectstore.Backend
	fail func(op, name string) bool
}

func (f *faulty) check(op, name string) error {
	if f.fail(op, name) {
		return errInjected
	}
	return nil
}

func (f *faulty) List(dir string) ([]objectstore.FileInfo, error) {
	if err := f.check("list", dir); err != nil {
		return nil, err
	}
	return f.Backend.List(dir)
}

func (f *faulty) ReadFile(name string) ([]byte, error) {
	if err := f.check("read", name); err != nil {
		return nil, err
	}
	return f.Backend.ReadFile(name)
}

func (f *faulty) Create(name string, data []byte, perm os.FileMode) error {
	if err := f.check("create", name); err != nil {
		return err
	}
	return f.Backend.Create(name, data, perm)
}

func (f *faulty) Remove(name string) error {
	if err := f.check("remove", name); err != nil {
		return err
	}
	return f.Backend.Remove(name)
}

func (f *faulty) Now() (time.Time, error) {
	if err := f.check("now", ""); err != nil {
		return time.Time{}, err
	}
	return f.Backend.Now()
}

// Every read Read makes that fails fails it: nothing is taken for absent.
func TestReadFailures(t *testing.T) {
	s := fileStore(t)
	a := s.workspace(t, "a")
	checkpoint(t, a, "a2")
	id := a.WorkspaceID()
	be := s.backend(t)
	if _, _, err := storeindex.Retire(be, id, "h", time.Now()); err != nil {
		t.Fatal(err)
	}
	// A pending record, as a transaction committing leaves it.
	recs := objectstore.NewRecords(be, objectstore.WorkspaceRecords(id))
	names, err := recs.Committed()
	if err != nil {
		t.Fatal(err)
	}
	body, err := recs.Read(names[len(names)-1])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recs.Prepare(99, body); err != nil {
		t.Fatal(err)
	}
	listings := 0
	for name, fail := range map[string]func(op, name string) bool{
		"the first records listing": func(op, n string) bool {
			return op == "list" && n == "records" && func() bool { listings++; return listings == 1 }()
		},
		"the second records listing": func(op, n string) bool {
			return op == "list" && n == "records" && func() bool { listings++; return listings == 2 }()
		},
		"the workspaces listing": func(op, n string) bool { return op == "list" && n == "workspaces" },
		"the descriptor": func(op, n string) bool {
			return op == "read" && strings.HasSuffix(n, ".json") && strings.HasPrefix(n, "workspaces/")
		},
		"the retirement":        func(op, n string) bool { return op == "read" && strings.HasSuffix(n, ".retired") },
		"the high-water mark":   func(op, n string) bool { return op == "read" && strings.HasSuffix(n, ".head") },
		"the committed records": func(op, n string) bool { return op == "list" && n == "records/"+id },
		"a committed record":    func(op, n string) bool { return op == "read" && strings.HasPrefix(n, "records/"+id+"/0") },
		"the pending records": func(op, n string) bool {
			return op == "list" && n == "records/"+id+"/pending" && func() bool { listings++; return listings == 4 }()
		},
		"a pending record": func(op, n string) bool { return op == "read" && strings.Contains(n, "/pending/") },
	} {
		t.Run(name, func(t *testing.T) {
			listings = 0
			if _, err := storeindex.Read(&faulty{Backend: be, fail: fail}); err == nil {
				t.Fatalf("Read succeeded with %s failing", name)
			}
		})
	}
}

// Retiring and writing a summary fail cleanly when the store does.
func TestWriteFailures(t *testing.T) {
	s := fileStore(t)
	a := s.workspace(t, "a")
	id := a.WorkspaceID()
	be := s.backend(t)
	for name, fail := range map[string]func(op, name string) bool{
		"the high-water mark":   func(op, n string) bool { return op == "read" && strings.HasSuffix(n, ".head") },
		"the committed records": func(op, n string) bool { return op == "list" && n == "records/"+id },
		"the marker":            func(op, n string) bool { return op == "create" && strings.HasSuffix(n, ".retired") },
		"the retirement":        func(op, n string) bool { return op == "read" && strings.HasSuffix(n, ".retired") },
	} {
		t.Run("retire/"+name, func(t *testing.T) {
			if _, _, err := storeindex.Retire(&faulty{Backend: be, fail: fail}, id, "h", time.Now()); !errors.Is(err, errInjected) {
				t.Fatalf("retire with %s failing: %v", name, err)
			}
		})
	}
	t.Run("retire/the descriptor of a workspace without records", func(t *testing.T) {
		fail := func(op, n string) bool { return op == "read" && n == "workspaces/0123456789abcdef01234567.json" }
		if _, _, err := storeindex.Retire(&faulty{Backend: be, fail: fail}, "0123456789abcdef01234567", "h", time.Now()); !errors.Is(err, errInjected) {
			t.Fatalf("retire: %v", err)
		}
	})
	v := read(t, be)
	if _, err := storeindex.WriteSummary(be, v); err != nil {
		t.Fatal(err)
	}
	for name, fail := range map[string]func(op, name string) bool{
		"the clock":            func(op, _ string) bool { return op == "now" },
		"the listing":          func(op, n string) bool { return op == "list" && n == "gc" },
		"the new summary":      func(op, n string) bool { return op == "create" && strings.HasPrefix(n, "gc/summary-") },
		"removing the old one": func(op, n string) bool { return op == "remove" && strings.HasPrefix(n, "gc/summary-") },
	} {
		t.Run("summary/"+name, func(t *testing.T) {
			time.Sleep(2 * time.Millisecond) // a new name
			if _, err := storeindex.WriteSummary(&faulty{Backend: be, fail: fail}, v); !errors.Is(err, errInjected) {
				t.Fatalf("summary with %s failing: %v", name, err)
			}
		})
	}
	// A summary that cannot be read (or listed) is no summary: every workspace is read.
	for name, fail := range map[string]func(op, name string) bool{
		"listed": func(op, n string) bool { return op == "list" && n == "gc" },
		"read":   func(op, n string) bool { return op == "read" && strings.HasPrefix(n, "gc/summary-") },
	} {
		t.Run("unreadable summary/"+name, func(t *testing.T) {
			got, err := storeindex.Read(&faulty{Backend: be, fail: fail})
			if err != nil || got.Summary != "" || got.Read != 1 {
				t.Fatalf("a summary that could not be %s: %+v, %v", name, got, err)
			}
		})
	}
}

// A summary of another format is ignored; files in gc/ that are not summaries (gc marks) are not
// taken for one; an unparseable descriptor still names its workspace.
func TestSummaryNamesAndFormats(t *testing.T) {
	s := fileStore(t)
	a := s.workspace(t, "a")
	be := s.backend(t)
	root := be.(*objectstore.Dir).Root()
	id := a.WorkspaceID()
	for _, n := range []string{"0000000000001-0123456789abcdef.json", "summary-x.json", "summary-000000000000g-" + strings.Repeat("0", 64) + ".json"} {
		if err := os.WriteFile(filepath.Join(root, "gc", n), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	body := []byte(`{"format":2,"workspaces":{}}`)
	if err := be.Create("gc/summary-0000000000002-"+sha(body)+".json", body, 0o600); err != nil {
		t.Fatal(err)
	}
	desc := filepath.Join(root, "workspaces", id+".json")
	_ = os.Chmod(desc, 0o600)
	if err := os.WriteFile(desc, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	v := read(t, be)
	if v.Summary != "" || v.Read != 1 {
		t.Fatalf("a summary of another format was used: %q, %d read", v.Summary, v.Read)
	}
	if d := v.Workspaces[id].Descriptor; d == nil || d.WorkspaceID != id || !v.Workspaces[id].DescriptorDamaged {
		t.Fatalf("an unparseable descriptor: %+v", d)
	}
	// A retirement marker of another workspace's ID is damage too.
	other := filepath.Join(root, "workspaces", id+".retired")
	if err := os.WriteFile(other, []byte(`{"format":1,"workspace_id":"someone-else"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := storeindex.ReadRetirement(be, id); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a retirement naming another workspace: %v", err)
	}
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
