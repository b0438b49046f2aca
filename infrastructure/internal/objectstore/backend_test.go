package objectstore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// errOS1Injected is the failure os1Faults injects.
var errOS1Injected = errors.New("injected backend failure")

// os1Faults is a local directory backend that fails the operations its fail function refuses
// (op is "list", "read", "open", "install", "write", "create", "rename", "remove", "sync" or
// "close", name the backend name). It embeds *Dir, so it keeps Dir's optional capabilities.
type os1Faults struct {
	*Dir
	mu   sync.Mutex
	fail func(op, name string) error
}

func newOS1Faults(root string, shared bool) *os1Faults {
	return &os1Faults{Dir: NewDir(root, shared)}
}

func (f *os1Faults) set(fail func(op, name string) error) {
	f.mu.Lock()
	f.fail = fail
	f.mu.Unlock()
}

func (f *os1Faults) check(op, name string) error {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail == nil {
		return nil
	}
	return fail(op, name)
}

// os1FailOn fails op on name (every name when name is "").
func os1FailOn(op, name string, err error) func(string, string) error {
	return func(o, n string) error {
		if o == op && (name == "" || n == name) {
			return err
		}
		return nil
	}
}

func (f *os1Faults) List(dir string) ([]FileInfo, error) {
	if err := f.check("list", dir); err != nil {
		return nil, err
	}
	return f.Dir.List(dir)
}

func (f *os1Faults) ReadFile(name string) ([]byte, error) {
	if err := f.check("read", name); err != nil {
		return nil, err
	}
	return f.Dir.ReadFile(name)
}

func (f *os1Faults) Open(name string) (File, error) {
	if err := f.check("open", name); err != nil {
		return nil, err
	}
	file, err := f.Dir.Open(name)
	if err != nil {
		return nil, err
	}
	return &os1File{File: file, close: func() error { return f.check("close", name) }}, nil
}

func (f *os1Faults) Install(src, name string) error {
	if err := f.check("install", name); err != nil {
		return err
	}
	return f.Dir.Install(src, name)
}

func (f *os1Faults) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if err := f.check("write", name); err != nil {
		return err
	}
	return f.Dir.WriteFile(name, data, perm)
}

func (f *os1Faults) Create(name string, data []byte, perm fs.FileMode) error {
	if err := f.check("create", name); err != nil {
		return err
	}
	return f.Dir.Create(name, data, perm)
}

func (f *os1Faults) Rename(from, to string) error {
	if err := f.check("rename", to); err != nil {
		return err
	}
	return f.Dir.Rename(from, to)
}

func (f *os1Faults) Remove(name string) error {
	if err := f.check("remove", name); err != nil {
		return err
	}
	return f.Dir.Remove(name)
}

func (f *os1Faults) Sync(dir string) error {
	if err := f.check("sync", dir); err != nil {
		return err
	}
	return f.Dir.Sync(dir)
}

// os1File is a backend file whose Close may be made to fail (after really closing it).
type os1File struct {
	File
	close func() error
}

func (f *os1File) Close() error {
	err := f.File.Close()
	if cerr := f.close(); cerr != nil {
		return cerr
	}
	return err
}

// What a symlink in the store resolves to is what counts: one to a file is that file, one to a
// directory or to nothing is no file at all (a dangling pack link is a missing pack, reported as
// such, not an error that stops every command).
func TestDirListFollowsSymlinks(t *testing.T) {
	root := t.TempDir()
	x := filepath.Join(root, "x")
	if err := os.MkdirAll(filepath.Join(x, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(x, "real"), []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"link": "real", "todir": "sub", "gone": "nowhere"} {
		if err := os.Symlink(target, filepath.Join(x, link)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := NewDir(root, false).List("x")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fi := range got {
		names = append(names, fi.Name)
		if (fi.Name == "real" || fi.Name == "link") && (fi.Size != 5 || fi.Dir) {
			t.Fatalf("%s listed as %+v, want the 5-byte file it is (or resolves to)", fi.Name, fi)
		}
		if fi.Name == "sub" && !fi.Dir {
			t.Fatalf("sub listed as %+v, want a directory", fi)
		}
	}
	slices.Sort(names)
	if want := []string{"link", "real", "sub"}; !slices.Equal(names, want) {
		t.Fatalf("List = %v, want %v (a link to a directory or to nothing is no file)", names, want)
	}
}

// A pack that is a dangling symlink (its disk not mounted, say) is a missing pack: the store opens,
// its objects are not Present, so a checkpoint stores them afresh, and doctor names the pack.
func TestDanglingPackLinkIsAMissingPack(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	lost, _ := put(t, b, text(301, 2000))
	commit(t, b)
	b = s.NewBatch()
	keptData := text(302, 2000)
	kept, _ := put(t, b, keptData)
	commit(t, b)
	p := s.index.at(lost).pack
	s.Close()
	if err := os.Remove(p.path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(t.TempDir(), "unmounted.pack"), p.path); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatalf("Open with a dangling pack link: %v", err)
	}
	defer s.Close()
	if s.Present(lost) {
		t.Fatal("an object of a dangling pack is Present")
	}
	mustRead(t, s, kept, keptData)
	problems := strings.Join(s.Problems(), "\n")
	if !strings.Contains(problems, "pack "+p.id+" is missing") {
		t.Fatalf("Problems = %q, want the missing pack named", problems)
	}
}

// In a shared directory the parents of a name are made on demand; when something that is not a
// directory stands in the way, the write or rename fails and touches nothing.
func TestSharedDirParentsBlocked(t *testing.T) {
	root := t.TempDir()
	d := NewDir(root, true)
	blocker := filepath.Join(root, "records")
	if err := os.WriteFile(blocker, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteFile("records/ws/1", []byte("x"), 0o600); err == nil {
		t.Fatal("WriteFile under a file succeeded")
	}
	if err := os.WriteFile(filepath.Join(root, "a"), []byte("payload"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Rename("a", "records/ws/2"); err == nil {
		t.Fatal("Rename under a file succeeded")
	}
	if b, err := os.ReadFile(filepath.Join(root, "a")); err != nil || string(b) != "payload" {
		t.Fatalf("the file a failed rename was moving: %q, %v", b, err)
	}
	if b, err := os.ReadFile(blocker); err != nil || string(b) != "not a directory" {
		t.Fatalf("the file in the way: %q, %v", b, err)
	}
}

// A records directory that cannot be read (here a file where it should be) is an error, never
// an empty listing: an empty listing would read as "no history".
func TestListNamesOfAFileIsAnError(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "records"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"records", "records/ws"} { // the directory, or one above it, is a file
		names, err := NewDir(root, false).ListNames(dir)
		if err == nil || !strings.Contains(err.Error(), "list") {
			t.Fatalf("ListNames(%q) = %v, %v; want an error", dir, names, err)
		}
	}
	if names, err := NewDir(root, false).ListNames("absent"); err != nil || len(names) != 0 {
		t.Fatalf("ListNames of a missing directory = %v, %v; want empty", names, err)
	}
}

// Close reports a pack file that fails to close, and the store is closed all the same.
func TestCloseReportsAPackThatFailsToClose(t *testing.T) {
	dir := t.TempDir()
	fb := newOS1Faults(dir, false)
	s, err := OpenBackend(fb, dir)
	if err != nil {
		t.Fatal(err)
	}
	b := s.NewBatch()
	data := text(303, 3000)
	h, _ := put(t, b, data)
	commit(t, b)
	mustRead(t, s, h, data) // the pack is now open and cached
	fb.set(os1FailOn("close", "", errOS1Injected))
	err = s.Close()
	if !errors.Is(err, errOS1Injected) || !strings.Contains(err.Error(), "close object store") {
		t.Fatalf("Close = %v, want the injected failure", err)
	}
	if _, err := readBlob(s, h); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("read after Close: %v", err)
	}
	fb.set(nil)
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	mustRead(t, s2, h, data)
}
