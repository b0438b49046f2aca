package workspace

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// The stat cache names the view of the store its files and trees were confirmed present in; a walk
// in that same view takes them as present without a lookup each, and in any other view (a pack
// gone, a copy found damaged, by this process or another) looks every one up again, storing what
// is not there.

// scanFor walks w as a snapshot does, without finishing it.
func scanFor(t *testing.T, w *testWS) (*scan, *node) {
	t.Helper()
	sc, root, err := w.sc.run(t.Context(), nil, true, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sc, root
}

func TestStatCacheViewStamp(t *testing.T) {
	w := newTestWS(t)
	for i := range 20 {
		w.write(filepath.Join("d", string(rune('a'+i))), string(rune('a'+i))+" content", 0o644)
	}
	w.write("top", "top content", 0o644)
	first := w.snapshot()
	if loadStatCache(w.l.StatCache()).stamp.IsZero() {
		t.Fatal("a walk's stat cache names no view")
	}
	sc, root := scanFor(t, w)
	if !sc.viewed {
		t.Fatal("a walk in the view its stat cache names looked every file up again")
	}
	if _, err := sc.finish(root, true); err != nil {
		t.Fatal(err)
	}

	// Another process finds a copy damaged: the view changed, every file is looked up, and the
	// damaged one stored again.
	other, err := objectstore.Open(w.l.Objects())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.MarkDamagedForTest(tree.Sum([]byte("top content"))); err != nil {
		t.Fatal(err)
	}
	if err := w.store.Refresh(); err != nil {
		t.Fatal(err)
	}
	sc, root = scanFor(t, w)
	if sc.viewed {
		t.Fatal("a walk took the stat cache's word in a view where a copy was found damaged")
	}
	snap, err := sc.finish(root, true)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Root != first.Root || snap.StoredBytes == 0 {
		t.Fatalf("the damaged copy was not stored again (%d bytes stored)", snap.StoredBytes)
	}
	for _, e := range w.flatten(snap.Root) {
		if e.Kind == tree.KindFile {
			r, err := w.store.OpenBlob(e.Hash)
			if err == nil {
				_, err = io.Copy(io.Discard, r)
				_ = r.Close()
			}
			if err != nil {
				t.Fatalf("%s: %v", e.Path, err)
			}
		}
	}

	// Every pack gone behind the scanner's back: looked up, stored again, readable.
	w.snapshot()
	packs, _ := filepath.Glob(filepath.Join(w.l.Objects(), "packs", "*"))
	for _, p := range packs {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.store.Refresh(); err != nil {
		t.Fatal(err)
	}
	snap = w.snapshot()
	if snap.StoredBytes == 0 {
		t.Fatal("nothing was stored again after the store lost every pack")
	}
	if d := len(w.flatten(snap.Root)); d != 22 {
		t.Fatalf("%d entries after the loss", d)
	}
}

// A view that lost something while the walk ran (damage found meanwhile) vouches for nothing: the
// cache the walk writes names no view, so the next walk looks everything up.
func TestStatCacheNamesNoViewThatLostSomethingMeanwhile(t *testing.T) {
	w := newTestWS(t)
	w.write("a", "alpha", 0o644)
	w.write("b", "beta", 0o644)
	w.snapshot()
	w.write("b", "beta, changed", 0o644) // the cache is written again
	sc, root := scanFor(t, w)
	if err := w.store.MarkDamagedForTest(tree.Sum([]byte("alpha"))); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.finish(root, true); err != nil {
		t.Fatal(err)
	}
	if s := loadStatCache(w.l.StatCache()).stamp; !s.IsZero() {
		t.Fatal("a cache written after the view lost a copy names a view")
	}
	if sc, _ := scanFor(t, w); sc.viewed {
		t.Fatal("a cache naming no view was taken at its word")
	}
}
