package objectstore

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// BuildTree stores the directory listings of a flat entry list (tree.Compare order, every
// directory listed before what it holds, as Flatten returns them) and returns the root's hash once
// they are durable. File and symlink entries must name content the store holds; a directory
// entry's Hash is ignored (it is recomputed from its entries). Listings the store already holds
// cost nothing. The per-path restore builds its target tree this way.
func (s *Store) BuildTree(entries []tree.Entry) (tree.Hash, error) {
	children := map[string][]int{}
	dirs := map[string]bool{"": true}
	for i, e := range entries {
		if err := tree.ValidatePath(e.Path); err != nil {
			return tree.ZeroHash, err
		}
		parent := path.Dir(e.Path)
		if parent == "." {
			parent = ""
		}
		if !dirs[parent] {
			return tree.ZeroHash, fault.Invalid("entry %s comes before its directory %s", e.Path, parent)
		}
		if e.Kind == tree.KindDir {
			dirs[e.Path] = true
		}
		children[parent] = append(children[parent], i)
	}
	b := s.NewBatch()
	defer b.Abort()
	var build func(dir string) (tree.Hash, error)
	build = func(dir string) (tree.Hash, error) {
		idx := children[dir]
		t := make(Tree, 0, len(idx))
		for _, i := range idx {
			e := entries[i]
			te := TreeEntry{Name: path.Base(e.Path), Kind: e.Kind, Mode: e.Mode}
			switch e.Kind {
			case tree.KindDir:
				h, err := build(e.Path)
				if err != nil {
					return tree.ZeroHash, err
				}
				te.Hash = h
			case tree.KindFile:
				te.Size, te.Hash = e.Size, e.Hash
			case tree.KindSymlink:
				te.Target = e.Target
			}
			t = append(t, te)
		}
		slices.SortFunc(t, func(a, b TreeEntry) int { return strings.Compare(a.Name, b.Name) })
		h, _, err := b.PutTree(t)
		if err != nil {
			return tree.ZeroHash, fmt.Errorf("store the listing of %q: %w", dir, err)
		}
		return h, nil
	}
	root, err := build("")
	if err != nil {
		return tree.ZeroHash, err
	}
	if err := b.Commit(); err != nil {
		return tree.ZeroHash, err
	}
	return root, nil
}
