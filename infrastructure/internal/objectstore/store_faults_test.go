package objectstore

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
)

// GC deletes nothing it has not first recorded in a durable intent: when the intent cannot be
// written, GC fails, every pack is still there and every object reads back; once the obstacle is
// gone the next GC completes.
func TestGCWithoutIntentDeletesNothing(t *testing.T) {
	f := newGCFixture(t)
	s, err := Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	obstacle := filepath.Join(f.dir, gcIntentFile)
	s.Failpoint = func(name string) error {
		if name == "gc.rewritten" {
			// A directory that is not empty cannot be renamed over.
			return os.MkdirAll(filepath.Join(obstacle, "x"), 0o700)
		}
		return nil
	}
	if _, err := s.GC(set(f.live)); err == nil || !strings.Contains(err.Error(), "gc intent") {
		t.Fatalf("GC without an intent: %v", err)
	}
	for _, p := range f.packs {
		if _, err := os.Stat(filepath.Join(s.packsDir, p)); err != nil {
			t.Fatalf("GC deleted %s without an intent: %v", p, err)
		}
	}
	mustRead(t, s, f.live, f.liveD)
	s.Failpoint = nil
	if err := os.RemoveAll(obstacle); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(set(f.live)); err != nil {
		t.Fatal(err)
	}
	mustRead(t, s, f.live, f.liveD)
	if s.Has(f.dead1) || s.Has(f.dead2) {
		t.Fatal("dead objects survived")
	}
}

// GC that cannot bring its view of the store up to date (tmp/ is not a directory) deletes nothing
// and says so.
func TestGCStopsWhenRefreshFails(t *testing.T) {
	f := newGCFixture(t)
	s, err := Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := os.RemoveAll(s.tmpDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.tmpDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GC(set(f.live)); err == nil || !strings.Contains(err.Error(), "nothing was deleted") {
		t.Fatalf("GC with a failing refresh: %v", err)
	}
	if got := files(t, s.packsDir); len(got) != len(f.packs) {
		t.Fatalf("packs after a failed GC: %v, want %v", got, f.packs)
	}
}

// Damage found while the damage list cannot be written is still remembered by this process: the
// damaged copy is not Present, so the next checkpoint stores a fresh copy instead of deduplicating
// onto it, and that copy reads back.
func TestDamageRememberedWhenTheListCannotBeWritten(t *testing.T) {
	s := TestStore(t)
	d := text(81, 5000)
	b := s.NewBatch()
	h, _ := put(t, b, d)
	commit(t, b)
	if err := os.Mkdir(filepath.Join(s.dir, damagedFile), 0o700); err != nil {
		t.Fatal(err)
	}
	flipData(t, s, h, 10)
	_, err := readBlob(s, h)
	faulttest.Require(t, err, fault.ErrIntegrity, "read of a flipped blob")
	if s.Present(h) {
		t.Fatal("a copy found damaged is still Present")
	}
	if !s.NeedsCopy(h) {
		t.Fatal("a damaged object does not need a fresh copy")
	}
	nb := s.NewBatch()
	put(t, nb, d)
	commit(t, nb)
	mustRead(t, s, h, d)
	if !s.Present(h) {
		t.Fatal("the fresh copy is not Present")
	}
}

// CheckObject follows a delta's chain all the way: a base missing two links down, or a cycle, is
// an integrity error about the object checked.
func TestCheckObjectFollowsTheWholeChain(t *testing.T) {
	s := TestStore(t)
	r := rand.New(rand.NewPCG(8, 8))
	t0 := dirTree(r, 35)
	t1 := editOne(r, t0)
	t2 := editOne(r, t1)
	b := s.NewBatch()
	h0, _ := putDelta(t, b, t0, tree.ZeroHash)
	commit(t, b)
	b = s.NewBatch()
	h1, _ := putDelta(t, b, t1, h0)
	commit(t, b)
	b = s.NewBatch()
	h2, _ := putDelta(t, b, t2, h1)
	commit(t, b)
	if !isDelta(s, h1) || !isDelta(s, h2) {
		t.Fatal("setup: not stored as deltas")
	}
	if err := s.CheckObject(h2, false); err != nil {
		t.Fatal(err)
	}
	s.index.del(h0)
	err := s.CheckObject(h2, false)
	faulttest.Require(t, err, fault.ErrIntegrity, "CheckObject with a base missing two links down")
	if !strings.Contains(err.Error(), h2.String()) || !strings.Contains(err.Error(), h0.String()) {
		t.Fatalf("the error names neither the object nor the missing base: %v", err)
	}
	if s.Present(h2) {
		t.Fatal("a delta whose chain is broken is Present")
	}
}

// An idx whose entry count disagrees with its length is refused even when its checksum was
// recomputed to match (a writer bug, or deliberate tampering): its entries cannot be trusted.
func TestDecodeIdxRefusesACountThatDisagrees(t *testing.T) {
	e := []idxEntry{{hash: tree.Hash{1}, kind: BlobObject, offset: 12, comp: 5, raw: 5}}
	b := encodeIdx(e, packVersion)
	body := append([]byte(nil), b[:len(b)-sha256.Size]...)
	binary.BigEndian.PutUint32(body[len(idxMagic):], 2)
	sum := sha256.Sum256(body)
	if _, _, err := decodeIdx(append(body, sum[:]...)); err == nil || !strings.Contains(err.Error(), "count") {
		t.Fatalf("a count of 2 for one entry: %v", err)
	}
}

// A trailer cut short is damage, never read past.
func TestCheckTrailerRefusesAShortTrailer(t *testing.T) {
	hdr := appendRecordHeader(nil, BlobObject, tree.Hash{3}, 10, 10)
	if err := checkTrailer(make([]byte, recordTrailerLen-1), hdr, 0); err == nil {
		t.Fatal("a short trailer was accepted")
	}
}
