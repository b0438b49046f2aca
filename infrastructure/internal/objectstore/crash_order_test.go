package objectstore

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

var errCrash = errors.New("crash injected")

// failAt makes the store fail at the named failpoint, as a crash there would stop it.
func failAt(s *Store, name string) {
	s.Failpoint = func(n string) error {
		if n == name {
			return errCrash
		}
		return nil
	}
}

// A commit cut between installing the pack and installing its idx (a crash there) returns an error
// and shows nothing; the pack is self-describing, so the next process indexes it and nothing that
// was written is lost. The same holds when the idx rename itself fails.
func TestCommitCutBetweenPackAndIdx(t *testing.T) {
	for name, fail := range map[string]func(s *Store){
		"crash after the pack rename": func(s *Store) { failAt(s, "store.pack-installed") },
		"idx rename fails": func(s *Store) {
			s.Failpoint = func(n string) error {
				if n == "store.pack-installed" {
					// The idx vanishes from tmp/ before its rename (a cleaner running meanwhile).
					des, _ := os.ReadDir(s.tmpDir)
					for _, de := range des {
						if strings.HasSuffix(de.Name(), ".idx") {
							_ = os.Remove(filepath.Join(s.tmpDir, de.Name()))
						}
					}
				}
				return nil
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			fail(s)
			b := s.NewBatch()
			d := text(21, 5000)
			h, _ := put(t, b, d)
			if err := b.Commit(); err == nil {
				t.Fatal("a cut commit succeeded")
			}
			if s.Has(h) {
				t.Fatal("an object of a cut commit is visible")
			}
			if err := b.Commit(); err == nil {
				t.Fatal("a failed batch committed on a second try")
			}
			b.Abort()
			s.Close()

			s2, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			mustRead(t, s2, h, d)
			if err := s2.Refresh(); err != nil {
				t.Fatal(err)
			}
			if idx := files(t, s2.packsDir); !slices.ContainsFunc(idx, func(n string) bool { return strings.HasSuffix(n, ".idx") }) {
				t.Fatalf("the lock holder did not write the missing idx: %v", idx)
			}
			mustRead(t, s2, h, d)
			if !s2.Present(h) {
				t.Fatal("a re-indexed object is not Present")
			}
		})
	}
}

// gcFixture is a store with one pack GC rewrites (a small live blob next to a big dead one) and
// one it drops (dead only).
type gcFixture struct {
	dir          string
	live         tree.Hash
	liveD        []byte
	dead1, dead2 tree.Hash
	packs        []string
}

func newGCFixture(t *testing.T) gcFixture {
	t.Helper()
	f := gcFixture{dir: t.TempDir(), liveD: testkit.Noise(31, 10_000)}
	s, err := Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.NewBatch()
	f.live, _ = put(t, b, f.liveD)
	f.dead1, _ = put(t, b, testkit.Noise(32, 200_000))
	commit(t, b)
	b = s.NewBatch()
	f.dead2, _ = put(t, b, testkit.Noise(33, 5000))
	commit(t, b)
	f.packs = files(t, s.packsDir)
	return f
}

// GC stopped after its rewrite is committed but before anything is deleted: the live object is in
// two packs, which reads fine, every old pack is still there, and the next GC completes the job.
func TestGCStoppedAfterRewriteDeletesNothing(t *testing.T) {
	f := newGCFixture(t)
	s, err := Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	failAt(s, "gc.rewritten")
	if _, err := s.GC(set(f.live)); !errors.Is(err, errCrash) {
		t.Fatalf("GC with a crash after the rewrite: %v", err)
	}
	for _, p := range f.packs {
		if _, err := os.Stat(filepath.Join(s.packsDir, p)); err != nil {
			t.Fatalf("a pack was deleted by a GC that stopped before deleting: %v", err)
		}
	}
	mustRead(t, s, f.live, f.liveD)
	s.Failpoint = nil
	res, err := s.GC(set(f.live))
	if err != nil || res.PacksDeleted+res.PacksRewritten == 0 {
		t.Fatalf("the next GC: %+v, %v", res, err)
	}
	mustRead(t, s, f.live, f.liveD)
	if s.Has(f.dead1) || s.Has(f.dead2) {
		t.Fatal("dead objects survived the completed GC")
	}
}

// GC killed once its intent is durable (before any unlink, or after the first): no reader loads a
// pack the intent names, and the next lock holder finishes the deletion; the live object, already
// rewritten, reads back byte for byte.
func TestGCKilledDuringDeletionIsFinished(t *testing.T) {
	for _, point := range []string{"gc.intent", "gc.deleted-one"} {
		t.Run(point, func(t *testing.T) {
			f := newGCFixture(t)
			s, err := Open(f.dir)
			if err != nil {
				t.Fatal(err)
			}
			failAt(s, point)
			if _, err := s.GC(set(f.live)); !errors.Is(err, errCrash) {
				t.Fatalf("GC killed at %s: %v", point, err)
			}
			s.Close()
			if _, err := os.Stat(filepath.Join(f.dir, gcIntentFile)); err != nil {
				t.Fatalf("no gc intent after a killed deletion: %v", err)
			}

			s2, err := Open(f.dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			if s2.Has(f.dead1) || s2.Has(f.dead2) {
				t.Fatal("a pack named by the gc intent was loaded")
			}
			mustRead(t, s2, f.live, f.liveD)
			if !strings.Contains(strings.Join(s2.Problems(), "\n"), "interrupted gc") {
				t.Fatalf("the interrupted gc is not reported: %v", s2.Problems())
			}
			if err := s2.Refresh(); err != nil {
				t.Fatal(err)
			}
			for _, p := range f.packs {
				if _, err := os.Stat(filepath.Join(s2.packsDir, p)); err == nil {
					t.Fatalf("old pack file %s outlived the finished gc", p)
				}
			}
			if _, err := os.Stat(filepath.Join(f.dir, gcIntentFile)); err == nil {
				t.Fatal("the gc intent outlived the gc")
			}
			mustRead(t, s2, f.live, f.liveD)
			if len(s2.Problems()) != 0 {
				t.Fatalf("problems after the gc was finished: %v", s2.Problems())
			}
		})
	}
}

// A live record whose bytes changed in a pack GC rewrites is refused by its trailer before it is
// copied: the copy would otherwise get a fresh, valid checksum, and the damage would be blessed.
func TestGCRefusesToCopyDamagedRecord(t *testing.T) {
	f := newGCFixture(t)
	s, err := Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	flip(t, s, f.live, 0.5)
	_, err = s.GC(set(f.live))
	faulttest.Require(t, err, fault.ErrIntegrity, "GC copying a damaged record")
	for _, p := range f.packs {
		if _, err := os.Stat(filepath.Join(s.packsDir, p)); err != nil {
			t.Fatalf("GC deleted a pack after failing: %v", err)
		}
	}
	if got := files(t, s.packsDir); len(got) != len(f.packs) {
		t.Fatalf("a failed GC left new packs: %v (had %v)", got, f.packs)
	}
	_, err = readBlob(s, f.live)
	faulttest.Require(t, err, fault.ErrIntegrity, "read of the damaged record after GC")
}
