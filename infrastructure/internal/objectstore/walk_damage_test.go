package objectstore

import (
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
	"github.com/planhq/plan/domain/tree"
)

// Every way of reading a tree below a root reports a subtree that is missing from the store as an
// integrity error instead of returning the part it could read: a listing with a directory silently
// left out would make a restore delete that directory's files, or GC collect them.
func TestMissingSubtreeFailsEveryWalk(t *testing.T) {
	s := TestStore(t)
	gone := tree.Sum([]byte("a subtree that was never stored"))
	b := s.NewBatch()
	fileD := text(41, 200)
	fileH, _ := put(t, b, fileD)
	inner, _, err := b.PutTree(Tree{{Name: "f", Kind: tree.KindFile, Mode: 0o644, Size: 200, Hash: fileH}})
	if err != nil {
		t.Fatal(err)
	}
	putTree := func(tr Tree) tree.Hash {
		t.Helper()
		h, _, err := b.PutTree(tr)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	file := TreeEntry{Name: "x", Kind: tree.KindFile, Mode: 0o644, Size: 200, Hash: fileH}
	okDir := TreeEntry{Name: "x", Kind: tree.KindDir, Mode: 0o755, Hash: inner}
	badDir := TreeEntry{Name: "x", Kind: tree.KindDir, Mode: 0o755, Hash: gone}
	empty := putTree(Tree{{Name: "a", Kind: tree.KindFile, Mode: 0o644, Size: 200, Hash: fileH}})
	withFile := putTree(Tree{{Name: "a", Kind: tree.KindFile, Mode: 0o644, Size: 200, Hash: fileH}, file})
	withOK := putTree(Tree{{Name: "a", Kind: tree.KindFile, Mode: 0o644, Size: 200, Hash: fileH}, okDir})
	withBad := putTree(Tree{{Name: "a", Kind: tree.KindFile, Mode: 0o644, Size: 200, Hash: fileH}, badDir})
	commit(t, b)

	faulttest.Require(t, s.Walk(withBad, func(string, TreeEntry) error { return nil }), fault.ErrIntegrity, "Walk")
	_, err = s.Flatten(withBad)
	faulttest.Require(t, err, fault.ErrIntegrity, "Flatten")
	_, err = s.Reachable([]tree.Hash{withOK, withBad})
	faulttest.Require(t, err, fault.ErrIntegrity, "Reachable")
	for name, pair := range map[string][2]tree.Hash{
		"added":             {empty, withBad},
		"deleted":           {withBad, empty},
		"file became a dir": {withFile, withBad},
		"dir became a file": {withBad, withFile},
		"dir changed":       {withOK, withBad},
		"dir changed back":  {withBad, withOK},
	} {
		_, err := s.DiffTrees(pair[0], pair[1])
		faulttest.Require(t, err, fault.ErrIntegrity, "DiffTrees, "+name)
	}
	// The healthy pairs diff fine, and a kind change lists what is below the directory.
	changes, err := s.DiffTrees(withFile, withOK)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range changes {
		paths = append(paths, c.Path+":"+string(c.Type))
	}
	if len(changes) != 2 || changes[0].Path != "x" || changes[0].Type != tree.TypeChanged || changes[1].Path != "x/f" || changes[1].Type != tree.Added {
		t.Fatalf("file to dir: %v", paths)
	}
}
