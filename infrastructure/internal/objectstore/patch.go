package objectstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/planhq/plan/domain/tree"
)

// A patch is the data of a delta record (after its prefix) that rebuilds an object's content from
// its base's by copying byte ranges of the base and inserting literal bytes. Only pack format
// version 4 and later hold patches; a reader tells one from a zstd frame by its magic, which no
// zstd frame (magic 28 B5 2F FD) starts with.
//
// Every tree delta is a patch: a directory's listing changes entry by entry, and both encodings
// are sorted entry lists, so the writer finds the entries the two share by a merge of their names,
// in time linear in the listing, with no compression at all (a zstd frame with the base as
// dictionary costs a dictionary's match table and a compressor's passes for each tree). A blob
// delta is a patch when the content differs from its base in one run of at most patchLiteral
// bytes (an append to a log, a line edited): the common prefix and suffix are copied, the run
// inserted, which a zstd frame could not store in much fewer bytes.
//
// Layout: patchMagic, then operations to the end of the data, each a uvarint v: v>>1 is a length
// (never 0); v&1 == 0 copies that many bytes of the base from the offset that follows (a uvarint),
// v&1 == 1 inserts that many bytes that follow. The result must be exactly the record's raw size
// and hash to the record's hash (checked by readChain like any delta).
const patchMagic = "PTP\x01"

// patchLiteral is the longest run of new bytes a blob patch inserts; past it the blob's delta is a
// zstd frame, which compresses what it inserts.
const patchLiteral = 256

// isPatch reports whether the data of a delta record, after its prefix, is a patch.
func isPatch(frame []byte) bool { return bytes.HasPrefix(frame, []byte(patchMagic)) }

// encSpan is one entry of a tree encoding: its name and where its bytes are.
type encSpan struct {
	name       []byte
	start, end int
}

// treeSpans splits a tree encoding into its header's length and its entries' spans. ok is false
// when b is not well-formed enough to be split (the patch is then not made).
func treeSpans(b []byte, spans []encSpan) (int, []encSpan, bool) {
	if !bytes.HasPrefix(b, []byte(treeMagic)) {
		return 0, nil, false
	}
	at := len(treeMagic)
	count, n := binary.Uvarint(b[at:])
	if n <= 0 || count > uint64(len(b)) {
		return 0, nil, false
	}
	at += n
	header := at
	spans = spans[:0]
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(b[at:])
		if n <= 0 {
			return 0, false
		}
		at += n
		return v, true
	}
	for range count {
		start := at
		if at >= len(b) {
			return 0, nil, false
		}
		kind := b[at]
		at++
		if _, ok := uv(); !ok { // mode
			return 0, nil, false
		}
		nl, ok := uv()
		if !ok || nl > u64(int64(len(b)-at)) {
			return 0, nil, false
		}
		name := b[at : at+int(nl)] // #nosec G115 -- nl is at most len(b)-at, checked above
		at += int(nl)              // #nosec G115 -- as above
		var tail uint64
		switch tree.Kind(kind) {
		case tree.KindFile: // size, hash
			if _, ok := uv(); !ok {
				return 0, nil, false
			}
			tail = uint64(len(tree.Hash{}))
		case tree.KindDir: // hash
			tail = uint64(len(tree.Hash{}))
		case tree.KindSymlink: // target
			if tail, ok = uv(); !ok {
				return 0, nil, false
			}
		default:
			return 0, nil, false
		}
		if tail > u64(int64(len(b)-at)) {
			return 0, nil, false
		}
		at += int(tail)
		spans = append(spans, encSpan{name: name, start: start, end: at})
	}
	if at != len(b) {
		return 0, nil, false
	}
	return header, spans, true
}

// patchWriter appends operations to a patch, merging adjacent ones of the same sort.
type patchWriter struct {
	out []byte
	enc []byte
	// the pending operation: a copy of base[off:off+n], or (lit) the literal enc[off:off+n].
	lit    bool
	off, n int
}

func (w *patchWriter) copyBase(off, n int) {
	if w.n > 0 && !w.lit && w.off+w.n == off {
		w.n += n
		return
	}
	w.flush()
	w.lit, w.off, w.n = false, off, n
}

func (w *patchWriter) literal(off, n int) {
	if w.n > 0 && w.lit && w.off+w.n == off {
		w.n += n
		return
	}
	w.flush()
	w.lit, w.off, w.n = true, off, n
}

func (w *patchWriter) flush() {
	if w.n == 0 {
		return
	}
	if w.lit {
		w.out = binary.AppendUvarint(w.out, u64(int64(w.n))<<1|1)
		w.out = append(w.out, w.enc[w.off:w.off+w.n]...)
	} else {
		w.out = binary.AppendUvarint(w.out, u64(int64(w.n))<<1)
		w.out = binary.AppendUvarint(w.out, u64(int64(w.off)))
	}
	w.n = 0
}

// appendTreePatch appends to dst the patch that rebuilds enc from base, both tree encodings.
// ok is false when either cannot be split into entries.
func appendTreePatch(dst, base, enc []byte) ([]byte, bool) {
	bh, bs, ok := treeSpans(base, nil)
	if !ok {
		return dst, false
	}
	eh, es, ok := treeSpans(enc, nil)
	if !ok {
		return dst, false
	}
	w := patchWriter{out: append(dst, patchMagic...), enc: enc}
	if bytes.Equal(base[:bh], enc[:eh]) {
		w.copyBase(0, bh)
	} else {
		w.literal(0, eh)
	}
	i := 0
	for _, e := range es {
		for i < len(bs) && bytes.Compare(bs[i].name, e.name) < 0 {
			i++
		}
		if i < len(bs) && bytes.Equal(base[bs[i].start:bs[i].end], enc[e.start:e.end]) {
			w.copyBase(bs[i].start, bs[i].end-bs[i].start)
			i++
			continue
		}
		w.literal(e.start, e.end-e.start)
	}
	w.flush()
	return w.out, true
}

// appendBlobPatch appends to dst the patch that rebuilds raw from base when they differ in one run
// of at most patchLiteral bytes; ok is false otherwise.
func appendBlobPatch(dst, base, raw []byte) ([]byte, bool) {
	n := min(len(base), len(raw))
	pre := 0
	for pre < n && base[pre] == raw[pre] {
		pre++
	}
	suf := 0
	for suf < n-pre && base[len(base)-1-suf] == raw[len(raw)-1-suf] {
		suf++
	}
	if len(raw)-pre-suf > patchLiteral {
		return dst, false
	}
	w := patchWriter{out: append(dst, patchMagic...), enc: raw}
	if pre > 0 {
		w.copyBase(0, pre)
	}
	if mid := len(raw) - pre - suf; mid > 0 {
		w.literal(pre, mid)
	}
	if suf > 0 {
		w.copyBase(len(base)-suf, suf)
	}
	w.flush()
	return w.out, true
}

// applyPatch appends to dst (whose capacity is not relied on) the content patch rebuilds from
// base: at most limit bytes, or an error (the record is then damaged).
func applyPatch(patch, base []byte, limit int64, dst []byte) ([]byte, error) {
	if !isPatch(patch) {
		return dst, errors.New("not a patch")
	}
	p := patch[len(patchMagic):]
	out := dst
	for len(p) > 0 {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return dst, errors.New("patch: truncated or overlong operation")
		}
		p = p[n:]
		size := v >> 1
		if size == 0 || size > u64(limit-int64(len(out)-len(dst))) {
			return dst, fmt.Errorf("patch: an operation of %d bytes past the object's size", size)
		}
		if v&1 == 1 {
			if size > uint64(len(p)) {
				return dst, errors.New("patch: literal runs past the end")
			}
			out = append(out, p[:size]...)
			p = p[size:]
			continue
		}
		off, n := binary.Uvarint(p)
		if n <= 0 {
			return dst, errors.New("patch: truncated or overlong offset")
		}
		p = p[n:]
		if off > uint64(len(base)) || size > uint64(len(base))-off {
			return dst, fmt.Errorf("patch: a copy of %d bytes at %d past the base's %d", size, off, len(base))
		}
		out = append(out, base[off:off+size]...)
	}
	return out, nil
}
