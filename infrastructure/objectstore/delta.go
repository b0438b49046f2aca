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
// dictionary and checked against its own hash and size. visit, if not nil, is called with every
// base on the way down. Any failure on the chain is a failure to read h, and the error names h.
func (s *Store) readChain(h tree.Hash, l location, visit func(tree.Hash)) ([]byte, int, error) {
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
	for cl.kind.delta() {
		if len(chain) == maxDeltaChain {
			return nil, 0, damaged(h, l, "delta chain longer than %d (a cycle?)", maxDeltaChain)
		}
		if cl.raw > maxDeltaObject || cl.comp > maxDeltaObject {
			return nil, 0, chainErr(h, l, cur, damaged(cur, cl, "delta of %d bytes is too large", cl.raw))
		}
		k := link{h: cur, l: cl, buf: getBuf(0)}
		chain = append(chain, k)
		data, err := s.readStored(cur, cl, k.buf)
		if err != nil {
			return nil, 0, chainErr(h, l, cur, err)
		}
		base, _, frame, err := parseDeltaPrefix(data)
		if err != nil {
			return nil, 0, chainErr(h, l, cur, damaged(cur, cl, "%v", err))
		}
		chain[len(chain)-1].frame = frame
		if visit != nil {
			visit(base)
		}
		bl, ok := s.lookup(base)
		switch {
		case !ok:
			return nil, 0, chainErr(h, l, cur, chainBroken(cur, cl, "delta base %s is missing", base))
		case bl.raw > maxDeltaObject || bl.comp > 2*maxDeltaObject:
			return nil, 0, chainErr(h, l, cur, chainBroken(cur, cl, "delta base %s is too large (%d bytes)", base, bl.raw))
		}
		cur, cl = base, bl
	}
	data, err := s.readBase(cur, cl, len(chain) > 0 && chain[len(chain)-1].l.kind == BundledBlobObject)
	if err != nil {
		return nil, 0, chainErr(h, l, cur, err)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		k := &chain[i]
		out, err := unpackLink(k.l, k.frame, data)
		if err != nil {
			return nil, 0, chainErr(h, l, k.h, damagedBy(k.h, k.l, err, "decompress delta"))
		}
		if int64(len(out)) != k.l.raw || sha256.Sum256(out) != k.h {
			if k.l.kind == BundledBlobObject { // its base, the bundle, is at the chain's end
				return nil, 0, chainErr(h, l, k.h, s.blame(k.h, k.l, cur, cl, data))
			}
			return nil, 0, chainErr(h, l, k.h, damaged(k.h, k.l, "content does not match its hash"))
		}
		data = out
	}
	return data, len(chain), nil
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
