package objectstore

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// StoreEntries stores the tree that a flat entry list describes (as Flatten returns it) and returns
// its root hash, durable when it returns. blobs holds the content of files that are new (a merge's
// result); every other file entry MUST name a blob that is already Present, so the tree never
// references data the store does not hold. Directory entries' hashes are ignored and recomputed
// from what lies under them; a directory the list implies but does not name is refused.
func (s *Store) StoreEntries(entries []tree.Entry, blobs map[tree.Hash][]byte) (tree.Hash, error) {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b tree.Entry) int { return tree.Compare(a.Path, b.Path) })
	b := s.NewBatch()
	defer b.Abort()
	for i, e := range sorted {
		if err := tree.ValidatePath(e.Path); err != nil {
			return tree.ZeroHash, err
		}
		if i > 0 && sorted[i-1].Path == e.Path {
			return tree.ZeroHash, fault.Invalid("path %q listed twice", e.Path)
		}
		if e.Kind != tree.KindFile {
			continue
		}
		if data, ok := blobs[e.Hash]; ok {
			if _, err := b.PutBlob(bytes.NewReader(data), e.Hash, int64(len(data))); err != nil {
				return tree.ZeroHash, fmt.Errorf("store %q: %w", e.Path, err)
			}
			continue
		}
		if !b.Has(e.Hash) {
			return tree.ZeroHash, fault.Integrity("%q names object %s, which the store does not hold", e.Path, e.Hash)
		}
	}
	// At the root every path is under the prefix, so composeDir consumes every entry (or fails).
	root, _, err := s.composeDir(b, "", sorted)
	if err != nil {
		return tree.ZeroHash, err
	}
	if err := b.Commit(); err != nil {
		return tree.ZeroHash, err
	}
	return root, nil
}

// composeDir stores the directory prefix from the leading entries under it and returns its hash and
// the entries that follow.
func (s *Store) composeDir(b *Batch, prefix string, entries []tree.Entry) (tree.Hash, []tree.Entry, error) {
	var t Tree
	for len(entries) > 0 {
		e := entries[0]
		name := e.Path
		if prefix != "" {
			if !strings.HasPrefix(e.Path, prefix+"/") {
				break
			}
			name = e.Path[len(prefix)+1:]
		}
		if strings.Contains(name, "/") {
			return tree.ZeroHash, nil, fault.Invalid("%q lies under no listed directory", e.Path)
		}
		entries = entries[1:]
		te := TreeEntry{Name: name, Kind: e.Kind, Mode: e.Mode}
		switch e.Kind {
		case tree.KindFile:
			te.Size, te.Hash = e.Size, e.Hash
		case tree.KindSymlink:
			te.Target = e.Target
		case tree.KindDir:
			h, rest, err := s.composeDir(b, e.Path, entries)
			if err != nil {
				return tree.ZeroHash, nil, err
			}
			te.Hash, entries = h, rest
		}
		t = append(t, te)
	}
	h, _, err := b.PutTree(t)
	if err != nil {
		return tree.ZeroHash, nil, err
	}
	return h, entries, nil
}

// Adopt checks that every object under root is Present, so that a new checkpoint may reference
// root, and returns the number of its files and symlinks and their logical size. In a shared store
// it relies on every one of them (Confirm, before the record commits, checks them again, copying
// what a gc condemned meanwhile). A missing or damaged object is fault.ErrIntegrity.
func (s *Store) Adopt(root tree.Hash) (files, size int64, err error) {
	objects := map[tree.Hash]struct{}{root: {}}
	err = s.Walk(root, func(path string, e TreeEntry) error {
		switch e.Kind {
		case tree.KindDir:
			objects[e.Hash] = struct{}{}
		case tree.KindSymlink:
			files++
			size += int64(len(e.Target))
		default:
			files++
			size += e.Size
			objects[e.Hash] = struct{}{}
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	for h := range objects {
		if !s.Present(h) {
			return 0, 0, fault.Integrity("object %s under tree %s is missing or damaged", h, root)
		}
	}
	s.Rely(objects)
	return files, size, nil
}
