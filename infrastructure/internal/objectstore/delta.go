package objectstore

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// readChain returns the verified content of h and the number of deltas decoded to get it (0 for an
// object stored whole). A delta is rebuilt from its base, itself read the same way: the chain is
// followed down to an object stored whole, then each link is decoded with the content below it as
// dictionary (or, a patch, applied to it: see patch.go) and checked against its own hash and size. visit, if not nil, is called with every
// base on the way down. Any failure on the chain is a failure to read h, and the error names h.
func (s *Store) readChain(h tree.Hash, l location, visit func(tree.Hash)) ([]byte, int, error) {
	b, depth, _, err := s.readChainFrom(h, l, visit, false)
	return b, depth, err
}

// cacheHit names the link of a chain whose content the tree cache gave: its record, and those
// below it, were not read.
type cacheHit struct {
	h tree.Hash
	l location
}

// readChainFrom is readChain that, with cached set (and visit nil), uses the tree cache: a tree (or
// small blob) met on the way down that the cache holds for the record the index locates it at ends
// the descent (its content was verified when it was cached), and every one decoded on the way is
// cached. Only
// readers of content use it (delta bases, diffs); verify and gc read every record of a chain. The
// content returned may then be the cache's own: it must not be modified. hit, when not nil, is the
// link the cache ended the descent at.
func (s *Store) readChainFrom(h tree.Hash, l location, visit func(tree.Hash), cached bool) (_ []byte, _ int, hit *cacheHit, _ error) {
	type link struct {
		h     tree.Hash
		l     location
		buf   *[]byte
		frame []byte
	}
	var chain []link
	defer func() {
		for _, k := range chain {
			putBuf(k.buf)
		}
	}()
	cur, cl := h, l
	cached = cached && visit == nil
	var data []byte
	depth0 := 0
	for {
		if cached && cacheable(cl) {
			var ok bool
			if data, depth0, ok = s.trees.get(cur, cl); ok {
				hit = &cacheHit{h: cur, l: cl}
				break
			}
		}
		if !cl.kind.delta() {
			break
		}
		if len(chain) == maxDeltaChain {
			return nil, 0, nil, damaged(h, l, "delta chain longer than %d (a cycle?)", maxDeltaChain)
		}
		if cl.raw > maxDeltaObject || cl.comp > maxDeltaObject {
			return nil, 0, nil, chainErr(h, l, cur, damaged(cur, cl, "delta of %d bytes is too large", cl.raw))
		}
		k := link{h: cur, l: cl, buf: getBuf(0)}
		chain = append(chain, k)
		rec, err := s.readStored(cur, cl, k.buf)
		if err != nil {
			return nil, 0, nil, chainErr(h, l, cur, err)
		}
		base, _, frame, err := parseDeltaPrefix(rec)
		if err != nil {
			return nil, 0, nil, chainErr(h, l, cur, damaged(cur, cl, "%v", err))
		}
		chain[len(chain)-1].frame = frame
		if visit != nil {
			visit(base)
		}
		bl, ok := s.lookup(base)
		switch {
		case !ok:
			return nil, 0, nil, chainErr(h, l, cur, chainBroken(cur, cl, "delta base %s is missing", base))
		case bl.raw > maxDeltaObject || bl.comp > 2*maxDeltaObject:
			return nil, 0, nil, chainErr(h, l, cur, chainBroken(cur, cl, "delta base %s is too large (%d bytes)", base, bl.raw))
		}
		cur, cl = base, bl
	}
	if hit == nil {
		// A bundled blob's base is its bundle: read through the bundles' cache, not the trees'.
		bundled := len(chain) > 0 && chain[len(chain)-1].l.kind == BundledBlobObject
		var err error
		if data, err = s.readBase(cur, cl, bundled); err != nil {
			return nil, 0, nil, chainErr(h, l, cur, err)
		}
		if cached && !bundled && cacheable(cl) {
			s.trees.put(cur, data, 0, cl)
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		k := &chain[i]
		var out []byte
		var err error
		if k.l.kind != BundledBlobObject && isPatch(k.frame) {
			out, err = applyPatch(k.frame, data, k.l.raw, make([]byte, 0, k.l.raw))
		} else {
			out, err = unpackLink(k.l, k.frame, data)
		}
		if err != nil {
			return nil, 0, nil, chainErr(h, l, k.h, damagedBy(k.h, k.l, err, "decompress delta"))
		}
		if int64(len(out)) != k.l.raw || sha256.Sum256(out) != k.h {
			if k.l.kind == BundledBlobObject { // its base, the bundle, is at the chain's end
				return nil, 0, nil, chainErr(h, l, k.h, s.blame(k.h, k.l, cur, cl, data))
			}
			return nil, 0, nil, chainErr(h, l, k.h, damaged(k.h, k.l, "content does not match its hash"))
		}
		data = out
		if cached && cacheable(k.l) {
			s.trees.put(k.h, out, depth0+len(chain)-i, k.l)
		}
	}
	return data, depth0 + len(chain), hit, nil
}

// recordsIntact checks that the records the content of h (at l) is read from still hold what was
// stored: each record of its chain against its checksums, without decoding. Content a process
// keeps in memory (the tree cache) was verified when it was read or written; a new delta made
// against it will be read from these records.
func (s *Store) recordsIntact(h tree.Hash, l location) error {
	cur, cl := h, l
	for range maxDeltaChain + 1 {
		if trailerLen(cl.pack.version) == 0 {
			_, err := s.readWhole(h, l) // no checksums to compare with: decoded and hashed
			return err
		}
		base, err := s.storedIntact(cur, cl)
		if err != nil {
			return chainErr(h, l, cur, err)
		}
		if !cl.kind.delta() {
			return nil
		}
		bl, ok := s.lookup(base)
		if !ok {
			return chainErr(h, l, cur, chainBroken(cur, cl, "delta base %s is missing", base))
		}
		cur, cl = base, bl
	}
	return damaged(h, l, "delta chain longer than %d (a cycle?)", maxDeltaChain)
}

// smallRecord is the size up to which storedIntact reads a record in one go.
const smallRecord = 64 << 10

// storedIntact checks the record of h at l (a version 2 record, with a trailer) against its
// checksums and returns the base it names, for a delta record.
func (s *Store) storedIntact(h tree.Hash, l location) (tree.Hash, error) {
	var base tree.Hash
	f, release, err := s.openPack(l.pack)
	if err != nil {
		return base, fmt.Errorf("object %s: %w", h, err)
	}
	defer release()
	if l.comp > smallRecord {
		if err := checkStored(h, l, f); err != nil {
			return base, err
		}
		if !l.kind.delta() {
			return base, nil
		}
		return s.deltaBase(h, l)
	}
	buf := getBuf(maxRecordHeader + int(l.comp) + recordTrailerLen)
	defer putBuf(buf)
	dataAt, n, err := readHeader(f, h, l, *buf)
	if err != nil {
		return base, err
	}
	start := int(dataAt - l.offset)
	end := start + int(l.comp)
	if n < end+recordTrailerLen {
		return base, damaged(h, l, "record truncated (pack cut short)")
	}
	data := (*buf)[start:end]
	if err := checkTrailer((*buf)[end:end+recordTrailerLen], (*buf)[:start], crc(data)); err != nil {
		return base, damaged(h, l, "%v", err)
	}
	if l.kind.delta() {
		if base, _, _, err = parseDeltaPrefix(data); err != nil {
			return base, damaged(h, l, "%v", err)
		}
	}
	return base, nil
}

// chainErr makes err, met at object at on the delta chain of h, an error about h. It keeps err's
// kind: damage is damage of h too, while an I/O error stays one so a caller may retry. The copy
// err names as damaged stays the one noteDamage marks: h's own record is intact.
func chainErr(h tree.Hash, l location, at tree.Hash, err error) error {
	if at == h {
		return err
	}
	if errors.Is(err, fault.ErrIntegrity) {
		return fault.Wrap(fault.ErrIntegrity, err, "object %s in pack %s: delta chain", h, l.pack.id)
	}
	return fmt.Errorf("object %s: delta chain: %w", h, err)
}

// deltaBase reads the base named by h's delta record (at l) without decoding anything.
func (s *Store) deltaBase(h tree.Hash, l location) (tree.Hash, error) {
	f, release, err := s.openPack(l.pack)
	if err != nil {
		return tree.Hash{}, fmt.Errorf("object %s: %w", h, err)
	}
	defer release()
	var hb [maxRecordHeader + deltaPrefixLen]byte
	dataAt, n, err := readHeader(f, h, l, hb[:])
	if err != nil {
		return tree.Hash{}, err
	}
	start := int(dataAt - l.offset)
	if l.comp < deltaPrefixLen || n < start+deltaPrefixLen {
		return tree.Hash{}, damaged(h, l, "delta record truncated")
	}
	base, _, _, err := parseDeltaPrefix(hb[start : start+deltaPrefixLen])
	if err != nil {
		return tree.Hash{}, damaged(h, l, "%v", err)
	}
	return base, nil
}
