package objectstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
)

// GC refuses to collect around live objects in a pack cut short, counting every one and naming
// the first in hash order, and deletes nothing.
func TestOS2GCRefusesLiveObjectsInAPackCutShort(t *testing.T) {
	s := TestStore(t)
	root, hs := os2Put(t, s, text(60, 3000), text(61, 3000))
	os2Put(t, s, noise(62, 5000)) // dead, in a pack of its own
	pack := os2PackOf(t, s, hs[0])
	p := filepath.Join(s.packsDir, pack+".pack")
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 20); err != nil {
		t.Fatal(err)
	}
	before := files(t, s.packsDir)
	_, err := s.GC(set(root, hs[0], hs[1]))
	wantIntegrity(t, err, "GC with live objects in a pack cut short")
	first := slices.MinFunc([]tree.Hash{root, hs[0], hs[1]}, func(a, b tree.Hash) int { return bytes.Compare(a[:], b[:]) })
	if !strings.Contains(err.Error(), "3 live object(s)") || !strings.Contains(err.Error(), first.String()) || !strings.Contains(err.Error(), "nothing was deleted") {
		t.Fatalf("GC error: %v (want 3 objects counted and %s named)", err, first)
	}
	if got := files(t, s.packsDir); !slices.Equal(got, before) {
		t.Fatalf("packs after the refused GC: %v, want %v", got, before)
	}
}

// GC rewriting a sparse pack whose live record has a damaged header refuses to copy it: the pack
// stays as it is, with its dead object, and the error is an integrity error.
func TestOS2GCRewriteOfADamagedRecordHeader(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	liveD, deadD := text(63, 2000), noise(64, 60_000)
	live, _ := put(t, b, liveD)
	dead, _ := put(t, b, deadD)
	commit(t, b)
	flip(t, s, live, -1)
	before := files(t, s.packsDir)
	_, err := s.GC(set(live))
	wantIntegrity(t, err, "GC copying a record whose header is damaged")
	if !strings.Contains(err.Error(), "rewrite pack") {
		t.Fatalf("GC error: %v", err)
	}
	if got := files(t, s.packsDir); !slices.Equal(got, before) {
		t.Fatalf("packs after the failed GC: %v, want %v", got, before)
	}
	mustRead(t, s, dead, deadD)
}

// A private GC that cannot read the base of a dead delta in a pack that holds live objects stops
// before deleting anything: it cannot tell whether that pack must be rewritten. Once the error is
// gone, the pack is rewritten without the dead delta, and the dead chain goes. The record of the
// dead delta's base is never needed: a GC that cannot read it collects all the same.
func TestOS2GCStopsWhenADeltaBaseCannotBeRead(t *testing.T) {
	x := os2NewDeltaStore(t, false)
	x.be.on("Open", func(n string) bool { return n == packName(x.pLive) })
	_, err := x.s.GC(set(x.root, x.live))
	if !errors.Is(err, errOS2IO) || !strings.Contains(err.Error(), "nothing was deleted") {
		t.Fatalf("GC: %v (want the I/O error, and that nothing was deleted)", err)
	}
	if got := os2Names(t, x.be, "packs"); !slices.Equal(got, x.packsAtTheOpen) {
		t.Fatalf("packs: %v, want %v", got, x.packsAtTheOpen)
	}
	x.be.setHook(nil)
	res, err := x.s.GC(set(x.root, x.live))
	if err != nil || res.PacksDeleted != 2 || res.PacksRewritten != 1 {
		t.Fatalf("GC: %+v, %v (want the dead chain gone, its pack rewritten)", res, err)
	}
	if x.s.Has(x.h2) || x.s.Has(x.h1) || x.s.Has(x.h0) {
		t.Fatal("the dead chain stayed")
	}
	mustRead(t, x.s, x.live, x.liveD)

	y := os2NewDeltaStore(t, false)
	y.be.on("Open", func(n string) bool { return n == packName(y.p1) })
	if res, err := y.s.GC(set(y.root, y.live)); err != nil || res.PacksDeleted != 2 {
		t.Fatalf("GC with the dead base unreadable: %+v, %v", res, err)
	}
	y.be.setHook(nil)
	mustRead(t, y.s, y.live, y.liveD)
}
