package objectstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// lazyFixture is a store in dir holding a small tree, closed; root is its tree.
func lazyFixture(t *testing.T) (dir string, root tree.Hash, content []byte) {
	t.Helper()
	dir = t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	content = []byte("deep content\n")
	entries := []tree.Entry{
		{Path: "a", Kind: tree.KindDir, Mode: 0o755},
		{Path: "a/b", Kind: tree.KindDir, Mode: 0o755},
		{Path: "a/b/f.txt", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(content)), Hash: tree.Sum(content)},
		{Path: "a/g.txt", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(content)), Hash: tree.Sum(content)},
		{Path: "top.txt", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(content)), Hash: tree.Sum(content)},
	}
	root, err = s.StoreEntries(entries, map[tree.Hash][]byte{tree.Sum(content): content})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, root, content
}

func openLazy(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := OpenBackendLazy(NewDir(dir, false), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// corruptIdx flips a byte of every idx in dir.
func corruptIdx(t *testing.T, dir string) {
	t.Helper()
	idxs, _ := filepath.Glob(filepath.Join(dir, "packs", "*.idx"))
	if len(idxs) == 0 {
		t.Fatal("no idx")
	}
	for _, p := range idxs {
		testkit.FlipMiddleByte(t, p)
	}
}

// A lazily opened store reads no idx until an object is asked for, then reads them all as Open
// does; the answer is the same.
func TestLazyStoreLoadsOnFirstUse(t *testing.T) {
	dir, root, content := lazyFixture(t)
	s := openLazy(t, dir)
	if !s.unloaded.Load() || len(s.packs) != 0 {
		t.Fatal("the lazy open read the index")
	}
	if !s.Has(tree.Sum(content)) || s.unloaded.Load() {
		t.Fatal("Has did not load the index")
	}
	got, err := s.Flatten(root)
	if err != nil || len(got) != 5 {
		t.Fatalf("flatten: %v, %v", got, err)
	}
	for _, use := range []func(s *Store) bool{
		func(s *Store) bool { return s.Present(root) },
		func(s *Store) bool { _, ok := s.Info(root); return ok },
		func(s *Store) bool { return s.Stats().Objects > 0 },
		func(s *Store) bool { return len(s.Untrusted()) == 0 && len(s.Problems()) == 0 },
		func(s *Store) bool {
			r, err := s.OpenBlob(tree.Sum(content))
			ok := err == nil
			_ = r.Close()
			return ok
		},
		func(s *Store) bool { _, err := s.ScanPacks(); return err == nil },
		func(s *Store) bool { return s.NewBatch() != nil && !s.unloaded.Load() },
		func(s *Store) bool { return s.Refresh() == nil && !s.unloaded.Load() },
	} {
		if !use(openLazy(t, dir)) {
			t.Fatal("a first use of a lazy store did not see what Open sees")
		}
	}
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
}

// A damaged idx is reported by the first use that returns errors (an idx is checked whole at its
// first use, see idxTable), never taken for an empty store by a writer (nothing is Present, a
// batch commits nothing), and every use after it reports it until the idx is repaired.
func TestLazyStoreReportsADamagedIdx(t *testing.T) {
	dir, root, content := lazyFixture(t)
	corruptIdx(t, dir)
	s := openLazy(t, dir)
	if s.Present(tree.Sum(content)) || s.Has(root) {
		t.Fatal("a damaged index vouched for an object")
	}
	if _, err := s.ReadTree(root); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("read: %v", err)
	}
	if err := s.Load(); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("load, once the damage was found: %v", err)
	}
	b := s.NewBatch()
	if _, err := b.PutBlob(bytes.NewReader([]byte("new")), tree.Sum([]byte("new")), 3); err == nil {
		if err := b.Commit(); !errors.Is(err, fault.ErrIntegrity) {
			t.Fatalf("a batch committed into a store with a damaged idx: %v", err)
		}
	}
	if _, err := s.ScanPacks(); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("scan: %v", err)
	}
	if p := s.Problems(); len(p) != 1 || !strings.Contains(p[0], "corrupt") {
		t.Fatalf("problems: %v", p)
	}
	if err := s.Refresh(); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("refresh: %v", err)
	}
	if _, _, err := s.Subtree(root, "a/b/f.txt"); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("subtree: %v", err)
	}
}

// Settle does the lock holder's chores (an interrupted gc finished, tmp/ cleared) without reading
// an index not read yet; on a loaded store it is Refresh.
func TestSettleLeavesTheIndexUnread(t *testing.T) {
	dir, _, content := lazyFixture(t)
	junk := filepath.Join(dir, "tmp", "deadbeef.pack")
	if err := os.WriteFile(junk, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	gone := strings.Repeat("ab", 16)
	for _, ext := range []string{".pack", ".idx"} {
		if err := os.WriteFile(filepath.Join(dir, "packs", gone+ext), []byte("condemned"), 0o400); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, gcIntentFile), []byte(gone+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	s := openLazy(t, dir)
	if err := s.Settle(); err != nil {
		t.Fatal(err)
	}
	if !s.unloaded.Load() {
		t.Fatal("settle read the index")
	}
	for _, p := range []string{junk, filepath.Join(dir, gcIntentFile), filepath.Join(dir, "packs", gone+".pack")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s is still there: %v", p, err)
		}
	}
	if !s.Present(tree.Sum(content)) {
		t.Fatal("not loaded on use after settle")
	}
	if err := s.Settle(); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(filepath.Join(dir, gcIntentFile), []byte("junk\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	if err := openLazy(t, dir).Settle(); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("a damaged gc intent: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, gcIntentFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o300); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.Chmod(filepath.Join(dir, "tmp"), 0o700) }()
	if os.Geteuid() != 0 {
		if err := openLazy(t, dir).Settle(); err == nil {
			t.Fatal("an unreadable tmp/ settled")
		}
	}
}

// Subtree reads one path of a tree: a file, a directory with what is under it, or nothing.
func TestSubtree(t *testing.T) {
	dir, root, content := lazyFixture(t)
	s := openLazy(t, dir)
	got, found, err := s.Subtree(root, "a/b/f.txt")
	if err != nil || !found || len(got) != 1 || got[0].Path != "a/b/f.txt" || got[0].Hash != tree.Sum(content) {
		t.Fatalf("file: %+v, %v, %v", got, found, err)
	}
	got, found, err = s.Subtree(root, "a")
	var paths []string
	for _, e := range got {
		paths = append(paths, e.Path)
	}
	if err != nil || !found || strings.Join(paths, " ") != "a a/b a/b/f.txt a/g.txt" {
		t.Fatalf("dir: %v, %v, %v", paths, found, err)
	}
	for _, missing := range []string{"nope", "a/nope", "top.txt/x", "a/b/f.txt/y"} {
		if got, found, err := s.Subtree(root, missing); err != nil || found || got != nil {
			t.Fatalf("%s: %+v, %v, %v", missing, got, found, err)
		}
	}
	if _, _, err := s.Subtree(tree.Sum([]byte("no such tree")), "a"); err == nil {
		t.Fatal("a missing root read as a tree")
	}
	// A subtree that cannot be read under the path is an error, not a shorter listing.
	full, _ := s.Flatten(root)
	var sub tree.Hash
	for _, e := range full {
		if e.Path == "a/b" {
			sub = e.Hash
		}
	}
	l, _ := s.lookup(sub)
	f, err := os.OpenFile(l.pack.path, os.O_RDWR, 0)
	if err != nil {
		if err := os.Chmod(l.pack.path, 0o600); err != nil {
			t.Fatal(err)
		}
		if f, err = os.OpenFile(l.pack.path, os.O_RDWR, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xee}, int(l.comp)), l.offset+1+32+2); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if _, _, err := openLazy(t, dir).Subtree(root, "a"); !errors.Is(err, fault.ErrIntegrity) {
		t.Fatalf("damaged subtree: %v", err)
	}
}

// A store that cannot be made is refused lazily as it is eagerly.
func TestOpenBackendLazyRefusesAnUnusableDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(file, "objects")
	if _, err := OpenBackendLazy(NewDir(dir, false), dir); err == nil {
		t.Fatal("opened a store under a file")
	}
}

// Readers that ask at once load the index once: those that waited find it loaded.
func TestLazyStoreLoadsOnce(t *testing.T) {
	dir, root, _ := lazyFixture(t)
	s := openLazy(t, dir)
	s.loadMu.Lock()
	done := make(chan error)
	go func() { done <- s.Load() }()
	time.Sleep(20 * time.Millisecond) // let it wait on the mutex
	pl, err := s.listPacks()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.load(pl, false); err != nil {
		t.Fatal(err)
	}
	loaded := s.index
	s.loadMu.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s.index != loaded || !s.Present(root) {
		t.Fatal("the waiting reader loaded the index again")
	}
}
