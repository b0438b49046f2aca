package objectstore

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/planhq/plan/domain/tree"
)

// errOS2IO stands for an I/O error of the store's medium (a disk or a network failing).
var errOS2IO = errors.New("injected I/O error")

// os2Backend is a local directory backend whose calls can be made to fail, or to do something
// first (as a concurrent process would), and whose clock can be moved. It keeps Dir's optional
// capabilities (AppendLine, ListNames).
type os2Backend struct {
	*Dir
	mu    sync.Mutex
	hook  func(op, name string) error // nil: every call goes through
	shift time.Duration
	clock func() (time.Time, error) // nil: the machine's clock, shifted
	// wrapOpen, when set, wraps the files Open returns.
	wrapOpen func(name string, f File) File
}

func (b *os2Backend) check(op, name string) error {
	b.mu.Lock()
	h := b.hook
	b.mu.Unlock()
	if h == nil {
		return nil
	}
	return h(op, name)
}

// on makes calls of op on names matching match fail with errOS2IO (nil: restore).
func (b *os2Backend) on(op string, match func(name string) bool) {
	b.setHook(func(o, name string) error {
		if o == op && match(name) {
			return errOS2IO
		}
		return nil
	})
}

func (b *os2Backend) setHook(h func(op, name string) error) {
	b.mu.Lock()
	b.hook = h
	b.mu.Unlock()
}

func (b *os2Backend) advance(d time.Duration) {
	b.mu.Lock()
	b.shift += d
	b.mu.Unlock()
}

func (b *os2Backend) List(dir string) ([]FileInfo, error) {
	if err := b.check("List", dir); err != nil {
		return nil, err
	}
	return b.Dir.List(dir)
}

func (b *os2Backend) ReadFile(name string) ([]byte, error) {
	if err := b.check("ReadFile", name); err != nil {
		return nil, err
	}
	return b.Dir.ReadFile(name)
}

func (b *os2Backend) Open(name string) (File, error) {
	if err := b.check("Open", name); err != nil {
		return nil, err
	}
	f, err := b.Dir.Open(name)
	b.mu.Lock()
	wrap := b.wrapOpen
	b.mu.Unlock()
	if err != nil || wrap == nil {
		return f, err
	}
	return wrap(name, f), nil
}

// os2FailingFile reads once; every later read fails (a medium failing under the reader).
type os2FailingFile struct {
	File
	reads atomic.Int32
}

func (f *os2FailingFile) ReadAt(p []byte, off int64) (int, error) {
	if f.reads.Add(1) > 1 {
		return 0, errOS2IO
	}
	return f.File.ReadAt(p, off)
}

func (b *os2Backend) Install(src, name string) error {
	if err := b.check("Install", name); err != nil {
		return err
	}
	return b.Dir.Install(src, name)
}

func (b *os2Backend) WriteFile(name string, data []byte, perm fs.FileMode) error {
	if err := b.check("WriteFile", name); err != nil {
		return err
	}
	return b.Dir.WriteFile(name, data, perm)
}

func (b *os2Backend) Create(name string, data []byte, perm fs.FileMode) error {
	if err := b.check("Create", name); err != nil {
		return err
	}
	return b.Dir.Create(name, data, perm)
}

func (b *os2Backend) Rename(from, to string) error {
	if err := b.check("Rename", to); err != nil {
		return err
	}
	return b.Dir.Rename(from, to)
}

func (b *os2Backend) Remove(name string) error {
	if err := b.check("Remove", name); err != nil {
		return err
	}
	return b.Dir.Remove(name)
}

func (b *os2Backend) Now() (time.Time, error) {
	if err := b.check("Now", ""); err != nil {
		return time.Time{}, err
	}
	b.mu.Lock()
	shift, clock := b.shift, b.clock
	b.mu.Unlock()
	if clock != nil {
		return clock()
	}
	return time.Now().Add(shift), nil
}

// os2Plain hides every optional capability of the backend it wraps (as a remote store has none).
type os2Plain struct{ Backend }

// os2New returns a fault-injecting backend over a fresh directory, and a store opened on it.
func os2New(t *testing.T, shared bool) (*os2Backend, *Store) {
	t.Helper()
	be := &os2Backend{Dir: NewDir(t.TempDir(), shared)}
	return be, os2Open(t, be)
}

// os2Open opens another store (another workspace, or the next process) on be.
func os2Open(t *testing.T, be Backend) *Store {
	t.Helper()
	s, err := OpenBackend(be, t.TempDir())
	if err != nil {
		t.Fatalf("open the store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// os2Put stores blobs and a tree naming them in one batch (one pack), as a checkpoint does, and
// returns the tree (the root a record would name) and the blobs' hashes.
func os2Put(t *testing.T, s *Store, blobs ...[]byte) (tree.Hash, []tree.Hash) {
	t.Helper()
	b := s.NewBatch()
	defer b.Abort()
	hs := make([]tree.Hash, len(blobs))
	var tr Tree
	for i, d := range blobs {
		hs[i], _ = put(t, b, d)
		tr = append(tr, TreeEntry{Name: fmt.Sprintf("f%03d", i), Kind: tree.KindFile, Mode: 0o644, Size: int64(len(d)), Hash: hs[i]})
	}
	root, _, err := b.PutTree(tr)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	return root, hs
}

// os2Live is a live set of the roots hs, every one readable.
func os2Live(hs ...tree.Hash) LiveFunc {
	return func() ([]tree.Hash, []tree.Hash, error) { return hs, nil, nil }
}

// os2Names lists the file names in dir of be's directory, sorted.
func os2Names(t *testing.T, be *os2Backend, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(be.Root(), dir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		if !de.IsDir() && !strings.HasPrefix(de.Name(), ".") {
			out = append(out, de.Name())
		}
	}
	slices.Sort(out)
	return out
}

// os2PackOf is the id of the pack the index reads h from.
func os2PackOf(t *testing.T, s *Store, h tree.Hash) string {
	t.Helper()
	info, ok := s.Info(h)
	if !ok {
		t.Fatalf("%s is not in the index", h)
	}
	return info.Pack
}

// os2HasPack says whether both files of pack id are still in be.
func os2HasPack(t *testing.T, be *os2Backend, id string) bool {
	t.Helper()
	names := os2Names(t, be, "packs")
	return slices.Contains(names, id+".pack") && slices.Contains(names, id+".idx")
}

// os2WriteMark writes a mark file by hand, as another (maybe newer, maybe broken) gc would.
func os2WriteMark(t *testing.T, be *os2Backend, at time.Time, body string) string {
	t.Helper()
	name := os2MarkName(at)
	p := filepath.Join(be.Root(), marksDir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o400); err != nil {
		t.Fatal(err)
	}
	return name
}

var os2MarkSeq atomic.Uint64

// os2MarkName is a valid mark name for time at, distinct from every other one.
func os2MarkName(at time.Time) string {
	return fmt.Sprintf("%013x-%016x.json", at.UnixMilli(), os2MarkSeq.Add(1))
}

// randFor is a deterministic random source for test data.
func randFor(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }
