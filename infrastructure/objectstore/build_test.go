package objectstore

import (
	"errors"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// A tree built from a checkpoint's own flat listing is that checkpoint's tree, hash for hash; a
// changed listing gives a tree whose flat listing is exactly it.
func TestBuildTreeRoundTrip(t *testing.T) {
	s := TestStore(t)
	b := s.NewBatch()
	a, _ := put(t, b, []byte("alpha"))
	c, _ := put(t, b, []byte("gamma"))
	empty, _, err := b.PutTree(Tree{})
	if err != nil {
		t.Fatal(err)
	}
	sub, _, err := b.PutTree(Tree{{Name: "c.txt", Kind: tree.KindFile, Mode: 0o600, Size: 5, Hash: c}, {Name: "link", Kind: tree.KindSymlink, Mode: 0o777, Target: "../a.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	root, _, err := b.PutTree(Tree{{Name: "a.txt", Kind: tree.KindFile, Mode: 0o644, Size: 5, Hash: a}, {Name: "d", Kind: tree.KindDir, Mode: 0o750, Hash: sub}, {Name: "empty", Kind: tree.KindDir, Mode: 0o700, Hash: empty}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	flat, err := s.Flatten(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.BuildTree(flat)
	if err != nil || got != root {
		t.Fatalf("rebuilt %s, %v; want %s", got, err, root)
	}
	// Drop d/link, change a mode: the flat listing of the result is exactly the input.
	changed := []tree.Entry{flat[0], flat[1], flat[2], flat[4]}
	changed[0].Mode = 0o755
	h, err := s.BuildTree(changed)
	if err != nil {
		t.Fatal(err)
	}
	back, err := s.Flatten(h)
	if err != nil || len(back) != len(changed) {
		t.Fatalf("%v, %v", back, err)
	}
	for i := range back {
		if !back[i].Same(changed[i]) {
			t.Errorf("entry %d: %+v, want %+v", i, back[i], changed[i])
		}
	}
	// An entry before its directory, or a path no tree can hold, is refused.
	if _, err := s.BuildTree([]tree.Entry{{Path: "x/y", Kind: tree.KindFile, Hash: a, Size: 5}}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("orphan entry: %v", err)
	}
	if _, err := s.BuildTree([]tree.Entry{{Path: "../y", Kind: tree.KindFile, Hash: a, Size: 5}}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("escaping path: %v", err)
	}
	// The empty list is the empty tree.
	if h, err := s.BuildTree(nil); err != nil || h.IsZero() {
		t.Errorf("empty: %s, %v", h, err)
	}
}
