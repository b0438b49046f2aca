package objectstore

import (
	"cmp"
	"errors"
	"io/fs"
	"runtime"
	"slices"
	"strings"

	"github.com/planhq/plan/domain/fault"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/timing"
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

// Subtree returns the entry at path under root and every entry under it, as Flatten lists them,
// reading only the trees down to path and below it: `plan cat` and `plan ls -R PATH` cost the
// depth of the path, not the size of the checkpoint. found is false when root holds nothing at path
// (a component missing, or one that is not a directory). path is a valid slash path
// (tree.ValidatePath).
func (s *Store) Subtree(root tree.Hash, path string) (entries []tree.Entry, found bool, err error) {
	return s.subtree(root, path, true)
}

// Children is Subtree without what lies deeper than path's direct content: the entry at path and,
// when it is a directory, the entries it holds itself (`plan ls PATH` reads that one directory's
// tree, not all below it). Path "" is the root: its entries alone.
func (s *Store) Children(root tree.Hash, path string) (entries []tree.Entry, found bool, err error) {
	if path == "" {
		return s.childrenOf("", root, nil)
	}
	return s.subtree(root, path, false)
}

func (s *Store) subtree(root tree.Hash, path string, deep bool) (entries []tree.Entry, found bool, err error) {
	h, prefix := root, ""
	rest := path
	for {
		name, more, deeper := strings.Cut(rest, "/")
		t, err := s.ReadTree(h)
		if err != nil {
			return nil, false, err
		}
		i, ok := slices.BinarySearchFunc(t, name, func(e TreeEntry, name string) int { return strings.Compare(e.Name, name) })
		if !ok {
			return nil, false, nil
		}
		e := t[i]
		p := join(prefix, name)
		if !deeper {
			out := []tree.Entry{flatEntry(p, e)}
			switch {
			case e.Kind != tree.KindDir:
			case !deep:
				return s.childrenOf(p, e.Hash, out)
			default:
				err := s.walk(p, e.Hash, func(p string, e TreeEntry) error {
					out = append(out, flatEntry(p, e))
					return nil
				})
				if err != nil {
					return nil, false, err
				}
			}
			return out, true, nil
		}
		if e.Kind != tree.KindDir {
			return nil, false, nil
		}
		h, prefix, rest = e.Hash, p, more
	}
}

// childrenOf appends the entries of directory tree h, at path p, to out.
func (s *Store) childrenOf(p string, h tree.Hash, out []tree.Entry) ([]tree.Entry, bool, error) {
	t, err := s.ReadTree(h)
	if err != nil {
		return nil, false, err
	}
	for _, e := range t {
		out = append(out, flatEntry(join(p, e.Name), e))
	}
	return out, true, nil
}

// DiffTrees returns tree.Diff(Flatten(from), Flatten(to)) without reading the subtrees the two
// sides share (equal hashes), which makes the diff of two checkpoints cost what changed.
func (s *Store) DiffTrees(from, to tree.Hash) ([]tree.Change, error) {
	defer timing.Span("diff")()
	d := &differ{s: s, slots: make(chan struct{}, diffWorkers)}
	return d.diff("", from, to)
}

// diffWorkers bounds the goroutines a DiffTrees reads subtrees with, besides its own: reading a
// tree (a chain of patches, from a pack) waits on the store as much as it computes, and a
// rollback's diff reads the changed directories of both trees.
var diffWorkers = max(2, runtime.GOMAXPROCS(0))

// differ is one DiffTrees: the subtrees of changed directories are compared in goroutines while
// slots are free (in the caller's otherwise), each into its own part, put back in order.
type differ struct {
	s     *Store
	slots chan struct{}
}

// diffPart is one piece of a directory's changes, in order: what the directory's own entries
// say, or a subdirectory's changes (sub), computed in a goroutine when done is set (it closes
// when they are).
type diffPart struct {
	out  []tree.Change
	err  error
	sub  bool
	done chan struct{}
}

// diffParts are a directory's changes as they are made, in order.
type diffParts []*diffPart

// out is where the directory's own next changes go.
func (ps *diffParts) out() *[]tree.Change {
	if n := len(*ps); n == 0 || (*ps)[n-1].sub {
		*ps = append(*ps, &diffPart{})
	}
	return &(*ps)[len(*ps)-1].out
}

// sub compares subdirectory p (from, to) in a goroutine when d has a slot free, else here.
func (ps *diffParts) sub(d *differ, p string, from, to tree.Hash) {
	child := &diffPart{sub: true}
	*ps = append(*ps, child)
	select {
	case d.slots <- struct{}{}:
		child.done = make(chan struct{})
		go func() {
			defer func() { <-d.slots; close(child.done) }()
			child.out, child.err = d.diff(p, from, to)
		}()
	default:
		child.out, child.err = d.diff(p, from, to)
	}
}

// join waits for every goroutine (none outlives the diff, error or not) and returns the changes
// in order, or the first error: err, the directory's own, before those of the parts.
func (ps diffParts) join(err error) ([]tree.Change, error) {
	n := 0
	for _, part := range ps {
		if part.done != nil {
			<-part.done
		}
		err = cmp.Or(err, part.err)
		n += len(part.out)
	}
	if err != nil {
		return nil, err
	}
	out := make([]tree.Change, 0, n)
	for _, part := range ps {
		out = append(out, part.out...)
	}
	return out, nil
}

func (d *differ) diff(prefix string, from, to tree.Hash) ([]tree.Change, error) {
	if from == to {
		return nil, nil
	}
	var parts diffParts
	return parts.join(d.compare(prefix, from, to, &parts))
}

// compare puts the changes between trees from and to, at prefix, into parts: entries one side
// lacks, or whose kind or content differ, at once; the subdirectories that differ through sub.
func (d *differ) compare(prefix string, from, to tree.Hash, parts *diffParts) error {
	s := d.s
	ft, err := s.readTreeCached(from)
	if err != nil {
		return err
	}
	tt, err := s.readTreeCached(to)
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
			if err := s.emitAll(prefix, ft[i], tree.Deleted, parts.out()); err != nil {
				return err
			}
			i++
		case c > 0:
			if err := s.emitAll(prefix, tt[j], tree.Added, parts.out()); err != nil {
				return err
			}
			j++
		default:
			p := join(prefix, ft[i].Name)
			f, t := flatEntry(p, ft[i]), flatEntry(p, tt[j])
			switch {
			case f.Kind != t.Kind:
				out := parts.out()
				*out = append(*out, tree.Change{Path: p, Type: tree.TypeChanged, From: &f, To: &t})
				if err := s.emitBelow(p, ft[i], tree.Deleted, out); err != nil {
					return err
				}
				if err := s.emitBelow(p, tt[j], tree.Added, out); err != nil {
					return err
				}
			case !f.Same(t):
				out := parts.out()
				*out = append(*out, tree.Change{Path: p, Type: tree.Modified, From: &f, To: &t})
				fallthrough
			default:
				if f.Kind == tree.KindDir && f.Hash != t.Hash {
					parts.sub(d, p, f.Hash, t.Hash)
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

// Reachable returns every tree and blob reachable from roots, and every object a reachable tree
// stored as a delta is rebuilt from (its base chain), which GC must keep too. Subtrees already seen
// are not read again, so many checkpoints of one workspace cost about as much as their distinct
// trees.
func (s *Store) Reachable(roots []tree.Hash) (map[tree.Hash]struct{}, error) {
	return s.ReachableWith(roots, nil)
}

// ReachableWith is Reachable of roots and of maybe, whose trees may be missing: the roots of a
// shared store's pending records, whose transactions may have failed (their objects collected)
// or may be about to commit. What can be read under them counts; what cannot is skipped.
func (s *Store) ReachableWith(roots, maybe []tree.Hash) (map[tree.Hash]struct{}, error) {
	return s.reachable(roots, maybe, true)
}

// Referenced returns every tree and blob the trees of roots name, without the objects they are
// rebuilt from: what a collection keeps, and re-encodes where a delta's base is not among them
// (see GC). A tree that cannot be read is an error, as for Reachable.
func (s *Store) Referenced(roots []tree.Hash) (map[tree.Hash]struct{}, error) {
	return s.reachable(roots, nil, false)
}

// reachable is ReachableWith, with the delta bases on the way when chains is set.
func (s *Store) reachable(roots, maybe []tree.Hash, chains bool) (map[tree.Hash]struct{}, error) {
	r := reach{s: s, seen: make(map[tree.Hash]struct{}), walked: make(map[tree.Hash]struct{}), chains: chains}
	if chains {
		r.visit = func(h tree.Hash) { r.seen[h] = struct{}{} }
	}
	for _, root := range roots {
		if err := r.tree(root); err != nil {
			return nil, err
		}
	}
	for _, root := range maybe {
		if err := r.tree(root); err != nil && !errors.Is(err, fault.ErrIntegrity) {
			return nil, err
		}
	}
	return r.seen, nil
}

// reach is one Reachable run. walked holds the trees whose entries were visited; seen, the result,
// also holds blobs and delta bases, which may be trees not (yet) walked.
type reach struct {
	s      *Store
	seen   map[tree.Hash]struct{}
	walked map[tree.Hash]struct{}
	visit  func(tree.Hash)
	chains bool // add the delta bases of what is reached (Reachable), or only what trees name
}

func (r *reach) tree(h tree.Hash) error {
	if h.IsZero() {
		return nil
	}
	if _, ok := r.walked[h]; ok {
		return nil
	}
	r.walked[h] = struct{}{}
	r.seen[h] = struct{}{}
	t, err := r.s.readTree(h, r.visit)
	if err != nil {
		return err
	}
	for _, e := range t {
		switch e.Kind {
		case tree.KindFile:
			if err := r.blob(e.Hash); err != nil {
				return err
			}
		case tree.KindDir:
			if err := r.tree(e.Hash); err != nil {
				return err
			}
		}
	}
	return nil
}

// blob adds a file's content. Content equal to a tree's encoding is that tree's object, which may
// be stored as a delta: its chain is then added too, reading only record headers.
func (r *reach) blob(h tree.Hash) error {
	for {
		if _, ok := r.seen[h]; ok {
			return nil // and so is its chain: everything added to seen comes with its chain
		}
		r.seen[h] = struct{}{}
		l, ok := r.s.lookup(h)
		if !ok || !l.kind.delta() || !r.chains {
			return nil // a missing blob is not Reachable's to report
		}
		base, err := r.s.deltaBase(h, l)
		if err != nil {
			return err
		}
		h = base
	}
}
