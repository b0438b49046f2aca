package objectstore

import (
	"crypto/sha256"
	"slices"
	"sync"

	"github.com/planhq/plan/domain/tree"
)

// A bundle holds the contents of many small blobs, one after the other, as one ordinary blob stored
// whole in one zstd frame; each of those blobs is then a bundled blob record (BundledBlobObject)
// naming the bundle as its base (at depth 1) and where its content starts in the bundle's. Only
// `gc --aggressive` writes bundles (repack.go): checkpoints store one record per object, as fast
// as before. A blob stays individually addressable and verified (its own hash is checked on every
// read), and a read decodes at most one bundle: bundleTarget bytes. Everything that follows delta
// chains (Present, Reachable, GC, Confirm, verify) follows a bundled blob to its bundle as to a
// delta's base.

const (
	// bundleMember is the largest blob a repack bundles: a larger one compresses well alone.
	bundleMember = 16 << 10
	// bundleTarget is the most content a bundle holds, and so what a read of one bundled blob
	// decodes at most (about 60 µs).
	bundleTarget = 64 << 10
	// bundleCacheBytes bounds the bundle contents a store keeps for the reads of their blobs: a
	// rollback reads a changed file's version twice (the base of its safety checkpoint's delta,
	// then the content it restores), and a directory's files share bundles.
	bundleCacheBytes = 128 * bundleTarget
)

// readBase reads the whole object a delta chain starts from, verified, except a bundle read for
// one of its blobs: that blob's own hash is checked, and is what a read must prove, so the bundle's
// is only computed when the blob's fails (see blame). A bundle is taken from, and kept in, the
// store's cache of bundles, unless the store's own bytes are being read (verify --read-data).
func (s *Store) readBase(h tree.Hash, l location, bundle bool) ([]byte, error) {
	if !bundle {
		return s.readPlain(h, l)
	}
	cache := !s.storeBytes.Load()
	if cache {
		if b, ok := s.bundles.get(h); ok {
			return b, nil
		}
	}
	out, err := s.readPlainHashed(h, l, false)
	if err == nil && cache {
		s.bundles.put(h, out)
	}
	return out, err
}

// blame is the damage a blob (h at l) read from its bundle (bh at bl, content bundle) did not
// match its hash: the bundle's, when its content does not match its own hash (it is then dropped
// from the cache), else the blob's record's.
func (s *Store) blame(h tree.Hash, l location, bh tree.Hash, bl location, bundle []byte) error {
	if sha256.Sum256(bundle) != bh {
		s.bundles.drop(bh)
		return damaged(bh, bl, "content does not match its hash")
	}
	return damaged(h, l, "content does not match its hash")
}

// unpackLink rebuilds the content of a link of a delta chain (the record at l, whose data after the
// delta prefix is rest) from its base's content. A bundled blob is a copy of its slice of the
// bundle (never the bundle's own bytes, which the cache shares).
func unpackLink(l location, rest, base []byte) ([]byte, error) {
	if l.kind == BundledBlobObject {
		part, err := bundleSlice(rest, l.raw, base)
		if err != nil {
			return nil, err
		}
		return append(make([]byte, 0, len(part)), part...), nil
	}
	return decodeWithDict(rest, base, make([]byte, 0, l.raw+decodeSlack))
}

// bundleCache keeps the verified contents of the bundles read last, named by their hash.
type bundleCache struct {
	mu    sync.Mutex
	order []tree.Hash
	data  map[tree.Hash][]byte
	size  int
}

func (c *bundleCache) drop(h tree.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.data[h]; ok {
		c.size -= len(b)
		delete(c.data, h)
		c.order = slices.DeleteFunc(c.order, func(o tree.Hash) bool { return o == h })
	}
}

func (c *bundleCache) get(h tree.Hash) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.data[h]
	return b, ok
}

// put keeps b (never changed afterwards: every reader copies its slice out), dropping the oldest
// bundles past bundleCacheBytes.
func (c *bundleCache) put(h tree.Hash, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.data == nil {
		c.data = map[tree.Hash][]byte{}
	}
	if _, ok := c.data[h]; ok || len(b) > bundleCacheBytes {
		return
	}
	for c.size+len(b) > bundleCacheBytes && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.size -= len(c.data[old])
		delete(c.data, old)
	}
	c.order = append(c.order, h)
	c.data[h] = b
	c.size += len(b)
}
