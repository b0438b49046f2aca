package workspace

import (
	"fmt"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/tree"
)

// A file modified since the last snapshot is stored as a delta of what it held then (the stat
// cache's hash for its path), and a new file whole; both restore byte for byte.
func TestSnapshotStoresAModifiedFileAsADelta(t *testing.T) {
	w := newTestWS(t)
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "line %d: func value%d() int { return %d }\n", i, i, i*i)
	}
	v1 := b.String()
	w.write("src/a.go", v1, 0o644)
	w.write("src/b.go", "package b\n", 0o644)
	first := w.snapshot()
	v2 := strings.Replace(v1, "line 1000:", "line one thousand:", 1) + "// appended\n"
	w.write("src/a.go", v2, 0o644)
	w.write("src/new.go", v1+"// a copy, renamed\n", 0o644)
	second := w.snapshot()
	if first.Root == second.Root {
		t.Fatal("the second snapshot saw no change")
	}
	want := map[string]bool{"src/a.go": true, "src/new.go": false}
	for _, e := range w.flatten(second.Root) {
		delta, ok := want[e.Path]
		if !ok {
			continue
		}
		info, found := w.store.Info(e.Hash)
		if !found || info.Delta != delta || info.Kind.String() != "blob" {
			t.Fatalf("%s: %+v (want a blob, delta %v)", e.Path, info, delta)
		}
		if delta && info.StoredSize > 200 {
			t.Fatalf("%s: a one-line change took %d bytes", e.Path, info.StoredSize)
		}
	}
	w.requireTree(w.flatten(second.Root), "after the snapshot")
	w.clear()
	if _, err := w.r.Apply(t.Context(), tree.ZeroHash, second.Root, nil); err != nil {
		t.Fatal(err)
	}
	w.requireTree(w.flatten(second.Root), "restored")
}
