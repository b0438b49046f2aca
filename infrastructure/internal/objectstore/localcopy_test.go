package objectstore

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/tests/testkit"
)

// ldCopies is a store seen through local copies of its packs and indexes, as the S3 adapter's
// cache keeps them: the first Open or ReadFile of one copies it from the store (the Dir) into
// local, and later ones read the copy.
type ldCopies struct {
	*Dir
	local  string
	drops  atomic.Int32
	remote atomic.Int32 // files copied from the store
}

func newLDCopies(t *testing.T, root string) *ldCopies {
	return &ldCopies{Dir: NewDir(root, false), local: t.TempDir()}
}

func (b *ldCopies) copied(name string) (string, error) {
	lp := filepath.Join(b.local, filepath.FromSlash(name))
	if _, err := os.Stat(lp); err == nil {
		return lp, nil
	}
	data, err := b.Dir.ReadFile(name)
	if err != nil {
		return "", err
	}
	b.remote.Add(1)
	if err := os.MkdirAll(filepath.Dir(lp), 0o700); err != nil {
		return "", err
	}
	return lp, os.WriteFile(lp, data, 0o600)
}

func (b *ldCopies) cached(name string) bool {
	return strings.HasPrefix(name, "packs/") || strings.HasPrefix(name, "records/")
}

func (b *ldCopies) Open(name string) (File, error) {
	if !b.cached(name) {
		return b.Dir.Open(name)
	}
	if _, err := b.copied(name); err != nil {
		return nil, err
	}
	return NewDir(b.local, false).Open(name)
}

func (b *ldCopies) ReadFile(name string) ([]byte, error) {
	if !b.cached(name) {
		return b.Dir.ReadFile(name)
	}
	lp, err := b.copied(name)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(lp)
}

func (b *ldCopies) DropLocal(name string) bool {
	b.drops.Add(1)
	return os.Remove(filepath.Join(b.local, filepath.FromSlash(name))) == nil
}

// ldOpen opens the fixture's store through local copies.
func ldOpen(t *testing.T, f fixture) (*Store, *ldCopies) {
	t.Helper()
	be := newLDCopies(t, f.dir)
	s, err := OpenBackend(be, f.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, be
}

// ldFlip inverts the byte at frac of h's stored data in the file p (a copy of h's pack).
func ldFlip(t *testing.T, s *Store, h tree.Hash, p string, frac float64) {
	t.Helper()
	l := s.index.at(h)
	fh, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var hb [maxRecordHeader]byte
	if _, err := fh.ReadAt(hb[:], l.offset); err != nil {
		t.Fatal(err)
	}
	_, hl, _ := parseRecordHeader(hb[:])
	off := l.offset + int64(hl) + int64(frac*float64(l.comp))
	var b [1]byte
	if _, err := fh.ReadAt(b[:], off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x55
	if _, err := fh.WriteAt(b[:], off); err != nil {
		t.Fatal(err)
	}
}

func ldLocalPack(be *ldCopies, s *Store, h tree.Hash) string {
	return filepath.Join(be.local, "packs", s.index.at(h).pack.id+".pack")
}

func ldNoDamage(t *testing.T, s *Store) {
	t.Helper()
	if len(s.damaged) > 0 {
		t.Fatalf("damage of a local copy was marked as the store's: %v", s.damaged)
	}
	if _, err := os.Stat(filepath.Join(s.dir, damagedFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the damage list was written: %v", err)
	}
}

// Damage in a local copy is dropped and the store read again: small objects (read whole), a tree
// and a large blob (streamed: the read goes on from the store's bytes, from where it was) all read
// right, and nothing is marked damaged.
func TestLocalCopyDamageIsReadAgainFromTheStore(t *testing.T) {
	for _, frac := range []float64{0.02, 0.5, 0.99} {
		f := newFixture(t)
		s, be := ldOpen(t, f)
		for _, h := range []tree.Hash{f.small, f.large} { // make the local copies
			if err := s.CheckObject(h, false); err != nil {
				t.Fatal(err)
			}
		}
		ldFlip(t, s, f.small, ldLocalPack(be, s, f.small), frac)
		ldFlip(t, s, f.large, ldLocalPack(be, s, f.large), frac)
		for _, h := range []tree.Hash{f.small, f.large} {
			want := f.smallD
			if h == f.large {
				want = f.largeD
			}
			got, err := readBlob(s, h)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("frac %v: read through a damaged local copy: %d bytes, %v", frac, len(got), err)
			}
		}
		if _, err := s.ReadTree(f.tr); err != nil {
			t.Fatal(err)
		}
		ldNoDamage(t, s)
		if be.drops.Load() == 0 {
			t.Fatal("no local copy was dropped")
		}
	}
}

// Damage in the store itself is damage, once the store's own bytes were read: it is marked.
func TestLocalCopyDamageOfTheStoreIsMarked(t *testing.T) {
	f := newFixture(t)
	s, _ := ldOpen(t, f)
	ldFlip(t, s, f.small, f.smallPack, 0.5)
	ldFlip(t, s, f.large, f.largePack, 0.5)
	for _, h := range []tree.Hash{f.small, f.large} {
		_, err := readBlob(s, h)
		faulttest.Require(t, err, fault.ErrIntegrity, "read damaged in the store")
		if _, ok := s.damaged[damageKey{s.index.at(h).pack.id, h}]; !ok {
			t.Fatalf("damage of the store was not marked: %v", s.damaged)
		}
	}
}

// A local copy damaged after a large blob's first bytes were handed out, such that they differ
// from the store's: the read fails (integrity) and marks nothing, since the store's copy is intact.
func TestLocalCopyDamageAfterBytesWereHandedOut(t *testing.T) {
	f := newFixture(t)
	s, be := ldOpen(t, f)
	rc, err := s.OpenBlob(f.large)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	sr := rc.(*streamReader)
	buf := make([]byte, 4096)
	if _, err := io.ReadFull(sr, buf); err != nil {
		t.Fatal(err)
	}
	// What was handed out is now not what the store holds: as if the copy had been damaged there.
	_, _ = sr.sum.Write([]byte("x"))
	ldFlip(t, s, f.large, ldLocalPack(be, s, f.large), 0.9)
	_, err = io.ReadAll(sr)
	if !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), "local copy") {
		t.Fatalf("read on: %v", err)
	}
	ldNoDamage(t, s)
}

// verify --read-data reads the store's own bytes: a local copy intact while the store's pack is
// damaged is no verdict on the store. ScanPacks finds the damage, and CheckObject does too.
func TestReadStoreBytesBypassesLocalCopies(t *testing.T) {
	f := newFixture(t)
	s, be := ldOpen(t, f)
	if !s.ChecksLocalCopies() {
		t.Fatal("a backend with local copies is not said to have them")
	}
	for _, h := range []tree.Hash{f.small, f.large} {
		if err := s.CheckObject(h, true); err != nil {
			t.Fatal(err)
		}
	}
	ldFlip(t, s, f.small, f.smallPack, 0.5)
	if err := s.CheckObject(f.small, true); err != nil {
		t.Fatalf("the local copy was damaged too: %v", err)
	}
	s.ReadStoreBytes()
	faulttest.Require(t, s.CheckObject(f.small, true), fault.ErrIntegrity, "CheckObject of the store's bytes")
	ps, err := s.ScanPacks()
	if err != nil || len(ps) == 0 {
		t.Fatalf("ScanPacks of a damaged store: %v %v", ps, err)
	}
	if be.remote.Load() < 3 {
		t.Fatalf("the store was read %d times", be.remote.Load())
	}
}

// ScanPacks of an intact store whose local copies are damaged reports nothing and marks nothing;
// a mark on a copy it reads intact (left by a cut read, say) is cleared.
func TestScanPacksClearsMarksOfIntactCopies(t *testing.T) {
	f := newFixture(t)
	s, be := ldOpen(t, f)
	if err := s.CheckObject(f.small, false); err != nil {
		t.Fatal(err)
	}
	ldFlip(t, s, f.small, ldLocalPack(be, s, f.small), 0.5)
	s.markDamaged(f.large, s.index.at(f.large))
	ps, err := s.ScanPacks()
	if err != nil || len(ps) > 0 {
		t.Fatalf("ScanPacks: %v %v", ps, err)
	}
	ldNoDamage(t, s)
	if !s.Present(f.large) {
		t.Fatal("an intact copy stays marked damaged")
	}
}

// A store without local copies has nothing to drop.
func TestRefetchWithoutLocalCopies(t *testing.T) {
	f := newFixture(t)
	s := f.open(t)
	if s.ChecksLocalCopies() || s.refetch(s.index.at(f.small).pack) {
		t.Fatal("a local store has local copies")
	}
}

// ldCutFile is a pack file of a store that stops answering after reads bytes: a download cut.
type ldCutFile struct {
	File
	left atomic.Int64
	err  error // nil: unavailable
}

func (f *ldCutFile) ReadAt(p []byte, off int64) (int, error) {
	if f.left.Add(-int64(len(p))) < 0 {
		if f.err != nil {
			return 0, f.err
		}
		return 0, fault.Unavailable("the store does not answer: connection reset")
	}
	return f.File.ReadAt(p, off)
}

// A read cut on its way is unavailable, not damage: every read path says so and marks nothing.
// A read the store refuses (denied) marks nothing either.
func TestCutReadIsUnavailableAndMarksNothing(t *testing.T) {
	for _, after := range []int64{-1, 0, maxRecordHeader, 1 << 20} {
		f := newFixture(t)
		be := &os2Backend{Dir: NewDir(f.dir, false)}
		kind := fault.ErrUnavailable
		be.wrapOpen = func(_ string, file File) File {
			c := &ldCutFile{File: file}
			c.left.Store(max(after, 0))
			if after < 0 {
				c.err, kind = fault.Denied("access denied"), fault.ErrDenied
			}
			return c
		}
		s, err := OpenBackend(be, f.dir)
		if err != nil {
			t.Fatal(err)
		}
		unavailable := func(what string, err error) {
			t.Helper()
			if fault.Kind(err) != kind {
				t.Fatalf("after %d: %s: %v, want %v", after, what, err, kind)
			}
		}
		_, err = readBlob(s, f.large)
		unavailable("read large", err)
		unavailable("check large", s.CheckObject(f.large, true))
		if after < 1<<20 {
			_, err = readBlob(s, f.small)
			unavailable("read small", err)
			unavailable("check small", s.CheckObject(f.small, true))
			_, err = s.ReadTree(f.tr)
			unavailable("read tree", err)
		}
		_, err = s.ScanPacks()
		unavailable("scan", err)
		if len(s.damaged) > 0 {
			t.Fatalf("a cut read marked %v", s.damaged)
		}
		s.Close()
	}
}

// A delta whose base is damaged is itself intact: reading it marks the base, not the delta, and
// both are untrusted until the base is stored afresh.
func TestChainDamageMarksTheDamagedLink(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	base := text(3, 50000)
	hb, _ := put(t, b, base)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	next := append(bytes.Clone(base), "an edit"...)
	b = s.NewBatch()
	hd, _ := putFrom(t, b, next, hb)
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if !s.index.at(hd).kind.delta() {
		t.Skip("not stored as a delta")
	}
	flip(t, s, hb, 0.5)
	_, err := readBlob(s, hd)
	faulttest.Require(t, err, fault.ErrIntegrity, "read the delta")
	if _, ok := s.damaged[damageKey{s.index.at(hb).pack.id, hb}]; !ok {
		t.Fatal("the damaged base is not marked")
	}
	if _, ok := s.damaged[damageKey{s.index.at(hd).pack.id, hd}]; ok {
		t.Fatal("the intact delta was marked damaged")
	}
	if u := s.Untrusted(); len(u) != 2 {
		t.Fatalf("untrusted %v, want the base and the delta", u)
	}
}

// A local copy damaged while a large blob is read from it, past the bytes handed out: the read
// goes on from the store's own bytes, and the whole blob reads right.
func TestLocalCopyDamagedDuringAStreamedRead(t *testing.T) {
	f := newFixture(t)
	s, be := ldOpen(t, f)
	rc, err := s.OpenBlob(f.large)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	head := make([]byte, 4096)
	if _, err := io.ReadFull(rc, head); err != nil {
		t.Fatal(err)
	}
	ldFlip(t, s, f.large, ldLocalPack(be, s, f.large), 0.9)
	rest, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(append(head, rest...), f.largeD) {
		t.Fatalf("read on: %d bytes, %v", len(head)+len(rest), err)
	}
	ldNoDamage(t, s)
}

// The store's own copy fails too when a streamed read goes on from it: its pack gone, its record
// header damaged, or its data damaged before the point reached. The read fails, and damage of the
// store's copy is marked.
func TestLocalCopyResumeFromABadStore(t *testing.T) {
	for _, c := range []struct {
		name   string
		spoil  func(t *testing.T, s *Store, f fixture)
		marked bool
	}{
		{"pack gone", func(t *testing.T, _ *Store, f fixture) {
			if err := os.Remove(f.largePack); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"header damaged", func(t *testing.T, s *Store, f fixture) { flip(t, s, f.large, -1) }, true},
		{"frame damaged", func(t *testing.T, s *Store, f fixture) { flip(t, s, f.large, 0) }, true},
		{"data damaged early", func(t *testing.T, s *Store, f fixture) { flip(t, s, f.large, 0.001) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			s, be := ldOpen(t, f)
			rc, err := s.OpenBlob(f.large)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			head := make([]byte, 1<<20)
			if _, err := io.ReadFull(rc, head); err != nil {
				t.Fatal(err)
			}
			ldFlip(t, s, f.large, ldLocalPack(be, s, f.large), 0.9)
			c.spoil(t, s, f)
			_, err = io.ReadAll(rc)
			faulttest.Require(t, err, fault.ErrIntegrity, "read on from a bad store")
			if _, ok := s.damaged[damageKey{s.index.at(f.large).pack.id, f.large}]; ok != c.marked {
				t.Fatalf("marked %v, want %v (%v)", ok, c.marked, err)
			}
		})
	}
}

// A delta's base read from a damaged local copy of its record is read again from the store.
func TestStoredBaseFromALocalCopy(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := w.NewBatch()
	base := text(3, 50000)
	hb, _ := put(t, b, base)
	commit(t, b)
	b = w.NewBatch()
	hd, _ := putFrom(t, b, append(bytes.Clone(base), "an edit"...), hb)
	commit(t, b)
	w.Close()
	s, be := ldOpen(t, fixture{dir: dir})
	l := s.index.at(hd)
	if !l.kind.delta() {
		t.Skip("not stored as a delta")
	}
	if err := s.CheckObject(hd, false); err != nil { // make the local copy
		t.Fatal(err)
	}
	fh, err := os.OpenFile(filepath.Join(be.local, "packs", l.pack.id+".pack"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte{0xff, 0xff}, l.offset+1); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	got, err := s.storedBase(hd, l)
	if err != nil || got != hb {
		t.Fatalf("base %v, %v; want %v", got, err, hb)
	}
	ldNoDamage(t, s)
}

// refetch of a pack no longer loaded (a gc rewrote it meanwhile) drops its copy all the same.
func TestRefetchOfAPackNoLongerLoaded(t *testing.T) {
	f := newFixture(t)
	s, be := ldOpen(t, f)
	if err := s.CheckObject(f.small, false); err != nil {
		t.Fatal(err)
	}
	gone := &packFile{id: s.index.at(f.small).pack.id}
	delete(s.packs, gone.id)
	if !s.refetch(gone) || be.drops.Load() == 0 {
		t.Fatal("the copy of a pack no longer loaded was not dropped")
	}
}

// A delta whose base is damaged, stored afresh whole: its delta record is no problem of the store
// any more (its own bytes are intact; the base's damage is reported where it is).
func TestScanPacksSkipsASupersededChain(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	base := text(3, 50000)
	hb, _ := put(t, b, base)
	commit(t, b)
	next := append(bytes.Clone(base), "an edit"...)
	b = s.NewBatch()
	hd, _ := putFrom(t, b, next, hb)
	commit(t, b)
	deltaPack := s.index.at(hd).pack.id
	if !s.index.at(hd).kind.delta() {
		t.Skip("not stored as a delta")
	}
	flip(t, s, hb, 0.5)
	if _, err := readBlob(s, hd); err == nil {
		t.Fatal("the delta reads with its base damaged")
	}
	b = s.NewBatch()
	put(t, b, next)
	commit(t, b)
	ps, err := s.ScanPacks()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.Pack == deltaPack {
			t.Fatalf("the superseded delta is reported: %v", p)
		}
	}
	if len(ps) == 0 {
		t.Fatal("the damaged base is not reported")
	}
}

// A damaged record in a pack a heal condemned, its object stored afresh elsewhere: retired damage,
// waiting for the sweep, which verify does not report.
func TestScanPacksSkipsRetiredDamage(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenBackend(NewDir(dir, true), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := text(5, 20000)
	b := s.NewBatch()
	h, _ := put(t, b, data)
	commit(t, b)
	flip(t, s, h, 0.5)
	if _, err := readBlob(s, h); err == nil {
		t.Fatal("damage not seen")
	}
	b = s.NewBatch()
	put(t, b, data)
	commit(t, b)
	rep, err := s.RetireHealed()
	if err != nil || len(rep.Healed) != 1 {
		t.Fatalf("heal: %+v %v", rep, err)
	}
	if ps, err := s.ScanPacks(); err != nil || len(ps) > 0 {
		t.Fatalf("after the heal: %v %v", ps, err)
	}
}

// A store that stops answering during the scan fails it, whatever it was reading.
func TestScanPacksUnavailable(t *testing.T) {
	unavailable := fault.Unavailable("the store does not answer")
	for _, c := range []struct {
		op   string
		name func(string) bool
	}{
		{"Open", func(n string) bool { return strings.HasSuffix(n, ".pack") }},
		{"ReadFile", func(n string) bool { return strings.HasSuffix(n, ".idx") }},
	} {
		f := newFixture(t)
		be := &os2Backend{Dir: NewDir(f.dir, false)}
		s, err := OpenBackend(be, f.dir)
		if err != nil {
			t.Fatal(err)
		}
		be.setHook(func(op, name string) error {
			if op == c.op && c.name(name) {
				return unavailable
			}
			return nil
		})
		if _, err := s.ScanPacks(); !errors.Is(err, fault.ErrUnavailable) {
			t.Fatalf("%s fails: %v", c.op, err)
		}
		s.Close()
	}
	// Cut after the records were listed, while one is checked: the second read of its data.
	f := newFixture(t)
	be := &os2Backend{Dir: NewDir(f.dir, false)}
	s, err := OpenBackend(be, f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := s.index.at(f.small)
	be.wrapOpen = func(name string, file File) File {
		return &ldSecondTouch{File: file, at: l.offset + l.comp/2 + maxRecordHeader}
	}
	if _, err := s.ScanPacks(); !errors.Is(err, fault.ErrUnavailable) {
		t.Fatalf("a cut while records are checked: %v", err)
	}
}

// ldSecondTouch fails, as a store that stopped answering, the second read that covers offset at.
type ldSecondTouch struct {
	File
	at int64
	n  atomic.Int32
}

func (f *ldSecondTouch) ReadAt(p []byte, off int64) (int, error) {
	if off <= f.at && f.at < off+int64(len(p)) && f.n.Add(1) > 1 {
		return 0, fault.Unavailable("cut")
	}
	return f.File.ReadAt(p, off)
}

// A damage mark that cannot be cleared fails the scan.
func TestScanPacksCannotClearAMark(t *testing.T) {
	f := newFixture(t)
	be := &os2Backend{Dir: NewDir(f.dir, false)}
	s, err := OpenBackend(be, f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.markDamaged(f.small, s.index.at(f.small))
	be.on("Remove", func(n string) bool { return n == damagedFile })
	if _, err := s.ScanPacks(); !errors.Is(err, errOS2IO) {
		t.Fatalf("scan: %v", err)
	}
}

// ldReaderAt fails, as a store that stopped answering, from offset from on.
type ldReaderAt struct {
	r    io.ReaderAt
	from int64
}

func (r ldReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > r.from {
		return 0, fault.Unavailable("cut")
	}
	return r.r.ReadAt(p, off)
}

// checkStored of a record whose data, or trailer, cannot be read: unavailable, not damage.
func TestCheckStoredCut(t *testing.T) {
	f := newFixture(t)
	s := f.open(t)
	l := s.index.at(f.small)
	pf, err := os.Open(f.smallPack)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	var hb [maxRecordHeader]byte
	dataAt, _, err := readHeader(pf, f.small, l, hb[:])
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range []int64{dataAt + 10, dataAt + l.comp} {
		err := checkStored(f.small, l, ldReaderAt{pf, max(from, l.offset+maxRecordHeader)})
		if fault.Kind(err) != fault.ErrUnavailable {
			t.Fatalf("cut at %d: %v", from, err)
		}
	}
}

// A shared store's pack deleted by hand, its objects stored afresh and the pack retired by a heal:
// its idx waits for the sweep, and verify does not report the missing pack meanwhile.
func TestScanPacksSkipsARetiredMissingPack(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenBackend(NewDir(dir, true), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := text(6, 20000)
	b := s.NewBatch()
	h, _ := put(t, b, data)
	commit(t, b)
	if err := os.Remove(s.index.at(h).pack.path); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	if ps, err := s.ScanPacks(); err != nil || len(ps) != 1 {
		t.Fatalf("a missing pack: %v %v", ps, err)
	}
	b = s.NewBatch()
	put(t, b, data)
	commit(t, b)
	if rep, err := s.RetireHealed(); err != nil || len(rep.Healed) != 1 {
		t.Fatalf("heal: %+v %v", rep, err)
	}
	if ps, err := s.ScanPacks(); err != nil || len(ps) > 0 {
		t.Fatalf("after the heal: %v %v", ps, err)
	}
}

// A record whose local copy is damaged is read again from the store: it is not damaged.
func TestRecordsReadALocalCopyAgainFromTheStore(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "records", "pending"), 0o700); err != nil {
		t.Fatal(err)
	}
	be := newLDCopies(t, dir)
	r := NewRecords(be, "records")
	name, err := r.Prepare(1, []byte("a transaction\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(name); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(name); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(be.local, "records", name), []byte("damaged\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := r.Read(name); err != nil || string(b) != "a transaction\n" {
		t.Fatalf("read of a record whose local copy is damaged: %q %v", b, err)
	}
	if err := os.WriteFile(filepath.Join(be.local, "records", name), []byte("damaged\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if bad, err := r.Verify(); err != nil || len(bad) > 0 {
		t.Fatalf("verify of a record whose local copy is damaged: %v %v", bad, err)
	}
	// Damaged in the store too: damaged.
	if err := os.WriteFile(filepath.Join(dir, "records", name), []byte("damaged\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if bad, err := r.Verify(); err != nil || len(bad) != 1 {
		t.Fatalf("verify of a damaged record: %v %v", bad, err)
	}
}

// A local copy of an idx that fails its checksum is dropped, and the store's own idx read: the
// store opens, and every object reads.
func TestLocalCopyOfADamagedIdx(t *testing.T) {
	f := newFixture(t)
	s, be := ldOpen(t, f)
	id := s.index.at(f.small).pack.id
	s.Close()
	lp := filepath.Join(be.local, "packs", id+".idx")
	testkit.FlipMiddleByte(t, lp)
	s, err := OpenBackend(be, f.dir)
	if err != nil {
		t.Fatalf("open with a damaged local copy of an idx: %v", err)
	}
	defer s.Close()
	if got, err := readBlob(s, f.small); err != nil || !bytes.Equal(got, f.smallD) {
		t.Fatalf("read: %v", err)
	}
	if idxSumOK([]byte("short")) {
		t.Fatal("a file shorter than a checksum passes")
	}
}
