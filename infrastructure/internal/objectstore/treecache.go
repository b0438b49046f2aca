package objectstore

import (
	"sync"

	"github.com/planhq/plan/domain/tree"
)

// treeCacheBytes bounds the tree encodings a Store keeps decoded (see treeCache).
const treeCacheBytes = 8 << 20

// cacheBlobMax is the largest blob the tree cache keeps: a file's small versions (a log appended
// to, a source file edited) are the bases of its next ones.
const cacheBlobMax = 64 << 10

// cacheable says whether the object at l is kept by the tree cache: a tree, or a blob of at most
// cacheBlobMax bytes.
func cacheable(l location) bool {
	return l.kind.object() == TreeObject || l.raw <= cacheBlobMax
}

// treeCache keeps the encodings of the trees this process last stored or decoded as delta bases
// (and the content of small blobs, see cacheable), so that a long-lived process (the watch
// service, a run's tracker) stores the next version of a directory's tree, or of a small file, as
// a delta against the last one without reading and decoding its chain again.
// An encoding is the content its hash names, whatever record holds it; the depth of the record is
// not, so an entry is only used while the index still locates the tree at the record it was
// cached for (a gc that rewrites it, or a refresh that prefers another copy, is a miss). Oldest
// entries go first past treeCacheBytes.
type treeCache struct {
	mu    sync.Mutex
	m     map[tree.Hash]cachedTree
	order []tree.Hash // the keys of m, oldest first
	bytes int
}

type cachedTree struct {
	enc    []byte
	depth  int
	pack   string
	offset int64
}

// put keeps enc, the content of tree h, whose record at l is at depth.
func (c *treeCache) put(h tree.Hash, enc []byte, depth int, l location) {
	if len(enc) > treeCacheBytes/8 || l.pack == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[tree.Hash]cachedTree)
	}
	if old, ok := c.m[h]; ok {
		c.bytes -= len(old.enc)
	} else {
		c.order = append(c.order, h)
	}
	c.m[h] = cachedTree{enc: enc, depth: depth, pack: l.pack.id, offset: l.offset}
	c.bytes += len(enc)
	for c.bytes > treeCacheBytes && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= len(c.m[old].enc)
		delete(c.m, old)
	}
}

// get returns the encoding of tree h and the depth of its record at l, when h was cached for
// that record.
func (c *treeCache) get(h tree.Hash, l location) ([]byte, int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[h]
	if !ok || l.pack == nil || e.pack != l.pack.id || e.offset != l.offset {
		return nil, 0, false
	}
	return e.enc, e.depth, true
}

// readTreeCached is ReadTree through the tree cache (see readChainFrom) while h is Present: the
// diff of two versions of a directory reads the chain they share once, and a tree this process
// stored or read is not read again.
func (s *Store) readTreeCached(h tree.Hash) (Tree, error) {
	return s.treeFrom(h, func(l location) ([]byte, error) {
		// The cache is used only while the index vouches for every link of the chain (Present),
		// so that a chain the store can no longer rebuild is reported as damage here too.
		b, _, _, err := s.readChainFrom(h, l, nil, s.Present(h))
		return b, err
	})
}
