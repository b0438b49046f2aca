package objectstore

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
)

// os1RewriteIdx rewrites the idx of the pack at packPath, letting edit change its entries.
func os1RewriteIdx(t *testing.T, packPath string, edit func(e *idxEntry)) {
	t.Helper()
	ip := strings.TrimSuffix(packPath, ".pack") + ".idx"
	b, err := os.ReadFile(ip)
	if err != nil {
		t.Fatal(err)
	}
	entries, version, err := decodeIdx(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		edit(&entries[i])
	}
	os.Chmod(ip, 0o600)
	if err := os.WriteFile(ip, encodeIdx(entries, version), 0o400); err != nil {
		t.Fatal(err)
	}
}

// A pack that cannot be opened for a reason other than being gone (here a symlink loop where a
// delta's base pack should be) is an I/O error, reported as such and naming the object read: it
// is not recorded as damage, the object stays Present, a gc's live set stops rather than skip
// it, and once the pack is back everything reads.
func TestUnopenableBasePackIsNotDamage(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(341, 341))
	t0 := dirTree(r, 35)
	t1 := editOne(r, t0)
	b := s.NewBatch()
	h0, _, err := b.PutTree(t0)
	if err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	b = s.NewBatch()
	h1, _ := putDelta(t, b, t1, h0)
	commit(t, b)
	if !isDelta(s, h1) {
		t.Fatal("setup: not a delta")
	}
	p0 := s.index.at(h0).pack.path
	s.Close()
	s, err = Open(dir) // nothing open yet
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	away := p0 + ".away"
	if err := os.Rename(p0, away); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(p0), p0); err != nil {
		t.Fatal(err)
	}

	_, err = s.ReadTree(h1)
	if err == nil || errors.Is(err, fault.ErrIntegrity) || !errors.Is(err, syscall.ELOOP) || !strings.Contains(err.Error(), h1.String()) {
		t.Fatalf("ReadTree of a delta whose base pack cannot be opened: %v; want the I/O error, naming %s", err, h1)
	}
	for _, h := range []tree.Hash{h0, h1} {
		if _, err := s.ReachableWith(nil, []tree.Hash{h}); err == nil || errors.Is(err, fault.ErrIntegrity) {
			t.Fatalf("live set with an unreadable pending root: %v; want the I/O error", err)
		}
	}
	if !s.Present(h1) || len(s.damaged) != 0 {
		t.Fatalf("an I/O error was recorded as damage: present %v, damaged %v", s.Present(h1), s.damaged)
	}
	if _, err := os.Stat(filepath.Join(dir, damagedFile)); err == nil {
		t.Fatal("an I/O error was written to the damage list")
	}
	os.Remove(p0)
	if err := os.Rename(away, p0); err != nil {
		t.Fatal(err)
	}
	mustReadTree(t, s, h1, t1)
}

// A file stored as a delta whose record is gone (its pack missing) or cut short before the base
// it names: the live set cannot be computed, so no gc runs on it (one that skipped the delta would
// collect its base), and the error is damage naming the object. The base itself is intact.
func TestReachableThroughABrokenBlobDelta(t *testing.T) {
	for name, mutate := range map[string]func(t *testing.T, l location){
		"pack missing": func(t *testing.T, l location) {
			if err := os.Remove(l.pack.path); err != nil {
				t.Fatal(err)
			}
		},
		"cut before the base": func(t *testing.T, l location) {
			b, err := os.ReadFile(l.pack.path)
			if err != nil {
				t.Fatal(err)
			}
			_, hl, err := parseRecordHeader(b[l.offset:])
			if err != nil {
				t.Fatal(err)
			}
			os.Chmod(l.pack.path, 0o600)
			if err := os.Truncate(l.pack.path, l.offset+int64(hl)+10); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(342, 342))
			v0 := text(342, 20_000)
			v1 := edit(r, v0)
			b := s.NewBatch()
			h0, _ := put(t, b, v0)
			commit(t, b)
			b = s.NewBatch()
			h1, _ := putFrom(t, b, v1, h0)
			commit(t, b)
			b = s.NewBatch()
			root, _, err := b.PutTree(Tree{{Name: "f", Kind: tree.KindFile, Mode: 0o644, Size: int64(len(v1)), Hash: h1}})
			if err != nil {
				t.Fatal(err)
			}
			commit(t, b)
			if !isDelta(s, h1) {
				t.Fatal("setup: not a delta")
			}
			l := s.index.at(h1)
			s.Close()
			mutate(t, l)
			s, err = Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.Reachable([]tree.Hash{root})
			faulttest.Require(t, err, fault.ErrIntegrity, "Reachable")
			if !strings.Contains(err.Error(), h1.String()) {
				t.Fatalf("the error does not name the delta: %v", err)
			}
			mustRead(t, s, h0, v0)
		})
	}
}

// os1SetLargeRaw makes the fixture's large blob claim raw bytes, in its record header and its idx
// alike, as damage that keeps the two consistent would.
func os1SetLargeRaw(t *testing.T, f fixture, raw int64) {
	t.Helper()
	b, err := os.ReadFile(f.largePack)
	if err != nil {
		t.Fatal(err)
	}
	at := packHeaderLen + 1 + 32
	_, m := binary.Uvarint(b[at:])
	nb := binary.AppendUvarint(nil, uint64(raw))
	if len(nb) != m {
		t.Fatalf("raw size %d does not fit the header's %d bytes", raw, m)
	}
	copy(b[at:], nb)
	os.Chmod(f.largePack, 0o600)
	if err := os.WriteFile(f.largePack, b, 0o400); err != nil {
		t.Fatal(err)
	}
	os1RewriteIdx(t, f.largePack, func(e *idxEntry) {
		if e.hash == f.large {
			e.raw = raw
		}
	})
}

// A large blob whose stream decodes to more, or fewer, bytes than its record says is damage, found
// by the read and by CheckObject alike: no byte past the recorded size is handed out, the copy is
// no longer Present (a checkpoint stores it afresh), and the other objects are untouched.
func TestLargeBlobOfTheWrongLength(t *testing.T) {
	for name, delta := range map[string]int64{"longer than recorded": -1000, "shorter than recorded": 1000} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			os1SetLargeRaw(t, f, int64(len(f.largeD))+delta)
			s := f.open(t)
			got, err := readBlob(s, f.large)
			faulttest.Require(t, err, fault.ErrIntegrity, "read")
			if int64(len(got)) > int64(len(f.largeD))+delta {
				t.Fatalf("read handed out %d bytes, past the recorded size", len(got))
			}
			faulttest.Require(t, s.CheckObject(f.large, true), fault.ErrIntegrity, "CheckObject")
			if s.Present(f.large) {
				t.Fatal("a damaged large blob is still Present")
			}
			mustRead(t, s, f.small, f.smallD)
		})
	}
}

// An idx that claims a tree larger than any listing is damage: ReadTree refuses it before reading
// (a damaged size must not make a read allocate hundreds of megabytes), and the copy is no longer
// Present.
func TestTreeClaimingAHugeSize(t *testing.T) {
	f := newFixture(t)
	os1RewriteIdx(t, f.smallPack, func(e *idxEntry) {
		if e.hash == f.tr {
			e.raw = maxTreeSize + 1
		}
	})
	s := f.open(t)
	_, err := s.ReadTree(f.tr)
	faulttest.Require(t, err, fault.ErrIntegrity, "ReadTree")
	if !strings.Contains(err.Error(), "too large for a tree") {
		t.Fatalf("ReadTree = %v", err)
	}
	if s.Present(f.tr) {
		t.Fatal("the tree is still Present")
	}
	mustRead(t, s, f.small, f.smallD)
}
