package objectstore

import (
	"errors"
	"io/fs"

	"github.com/planhq/plan/domain/tree"
)

// Walk calls fn for every entry under root, depth-first in name order (a directory before its
// contents), with the entry's full slash path. If fn returns fs.SkipDir for a directory, its
// contents are not visited; fs.SkipAll stops the walk without error. The zero hash is the empty
// tree.
func (s *Store) Walk(root tree.Hash, fn func(path string, e TreeEntry) error) error {
	err := s.walk("", root, fn)
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

func (s *Store) walk(prefix string, h tree.Hash, fn func(string, TreeEntry) error) error {
	t, err := s.ReadTree(h)
	if err != nil {
		return err
	}
	for _, e := range t {
		p := join(prefix, e.Name)
		if err := fn(p, e); err != nil {
			if errors.Is(err, fs.SkipDir) {
				continue
			}
			return err
		}
		if e.Kind == tree.KindDir {
			if err := s.walk(p, e.Hash, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "/" + name
}

func flatEntry(path string, e TreeEntry) tree.Entry {
	size := e.Size
	if e.Kind == tree.KindSymlink {
		// A symlink's logical size is its target's length (what lstat reports), as the scanner says.
		size = int64(len(e.Target))
	}
	return tree.Entry{Path: path, Kind: e.Kind, Mode: e.Mode, Size: size, Hash: e.Hash, Target: e.Target}
}

// Flatten lists every entry under root (not root itself) with its full path, in tree.Compare order,
// directories included with their subtree hash.
func (s *Store) Flatten(root tree.Hash) ([]tree.Entry, error) {
	var out []tree.Entry
	err := s.Walk(root, func(p string, e TreeEntry) error {
		out = append(out, flatEntry(p, e))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DiffTrees returns tree.Diff(Flatten(from), Flatten(to)) without reading the subtrees the two
// sides share (equal hashes), which makes the diff of two checkpoints cost what changed.
func (s *Store) DiffTrees(from, to tree.Hash) ([]tree.Change, error) {
	var out []tree.Change
	if err := s.diff("", from, to, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) diff(prefix string, from, to tree.Hash, out *[]tree.Change) error {
	if from == to {
		return nil
	}
	ft, err := s.ReadTree(from)
	if err != nil {
		return err
	}
	tt, err := s.ReadTree(to)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(ft) || j < len(tt) {
		var c int
		switch {
		case i == len(ft):
			c = 1
		case j == len(tt):
			c = -1
		case ft[i].Name < tt[j].Name:
			c = -1
		case ft[i].Name > tt[j].Name:
			c = 1
		}
		switch {
		case c < 0:
			if err := s.emitAll(prefix, ft[i], tree.Deleted, out); err != nil {
				return err
			}
			i++
		case c > 0:
			if err := s.emitAll(prefix, tt[j], tree.Added, out); err != nil {
				return err
			}
			j++
		default:
			p := join(prefix, ft[i].Name)
			f, t := flatEntry(p, ft[i]), flatEntry(p, tt[j])
			switch {
			case f.Kind != t.Kind:
				*out = append(*out, tree.Change{Path: p, Type: tree.TypeChanged, From: &f, To: &t})
				if err := s.emitBelow(p, ft[i], tree.Deleted, out); err != nil {
					return err
				}
				if err := s.emitBelow(p, tt[j], tree.Added, out); err != nil {
					return err
				}
			case !f.Same(t):
				*out = append(*out, tree.Change{Path: p, Type: tree.Modified, From: &f, To: &t})
				fallthrough
			default:
				if f.Kind == tree.KindDir {
					if err := s.diff(p, f.Hash, t.Hash, out); err != nil {
						return err
					}
				}
			}
			i++
			j++
		}
	}
	return nil
}

// emitAll reports e and, for a directory, everything below it as added or deleted.
func (s *Store) emitAll(prefix string, e TreeEntry, typ tree.ChangeType, out *[]tree.Change) error {
	p := join(prefix, e.Name)
	*out = append(*out, change(p, e, typ))
	return s.emitBelow(p, e, typ, out)
}

func (s *Store) emitBelow(p string, e TreeEntry, typ tree.ChangeType, out *[]tree.Change) error {
	if e.Kind != tree.KindDir {
		return nil
	}
	return s.walk(p, e.Hash, func(q string, c TreeEntry) error {
		*out = append(*out, change(q, c, typ))
		return nil
	})
}

func change(p string, e TreeEntry, typ tree.ChangeType) tree.Change {
	fe := flatEntry(p, e)
	if typ == tree.Added {
		return tree.Change{Path: p, Type: typ, To: &fe}
	}
	return tree.Change{Path: p, Type: typ, From: &fe}
}

// Reachable returns every tree and blob reachable from roots. Subtrees already seen are not read
// again, so many checkpoints of one workspace cost about as much as their distinct trees.
func (s *Store) Reachable(roots []tree.Hash) (map[tree.Hash]struct{}, error) {
	seen := make(map[tree.Hash]struct{})
	for _, root := range roots {
		if root.IsZero() {
			continue
		}
		if _, ok := seen[root]; ok {
			continue
		}
		seen[root] = struct{}{}
		err := s.Walk(root, func(_ string, e TreeEntry) error {
			switch e.Kind {
			case tree.KindFile:
				seen[e.Hash] = struct{}{}
			case tree.KindDir:
				if _, ok := seen[e.Hash]; ok {
					return fs.SkipDir
				}
				seen[e.Hash] = struct{}{}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return seen, nil
}
