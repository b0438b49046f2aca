package objectstore

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"

	"github.com/planhq/plan/domain/tree"
)

// Kind says what an object holds. The values are part of the pack format; never renumber.
type Kind uint8

// The object kinds. TreeDeltaObject, BlobDeltaObject and BundledBlobObject are record kinds only:
// such a record holds a tree encoding or a file's content as a delta against another object, or a
// file's place in a bundle (docs/format.md#packs), and Info reports the object as a TreeObject or a
// BlobObject.
const (
	BlobObject        Kind = 1
	TreeObject        Kind = 2
	TreeDeltaObject   Kind = 3
	BlobDeltaObject   Kind = 4
	BundledBlobObject Kind = 5
)

func (k Kind) String() string {
	switch k {
	case BlobObject:
		return "blob"
	case TreeObject:
		return "tree"
	case TreeDeltaObject:
		return "tree-delta"
	case BlobDeltaObject:
		return "blob-delta"
	case BundledBlobObject:
		return "blob-bundled"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

func (k Kind) valid() bool { return k >= BlobObject && k <= BundledBlobObject }

// delta says whether a record of kind k is read from a base object: a delta against it, or a
// bundled blob, a slice of its bundle. Both are followed, kept and checked as the same chains.
func (k Kind) delta() bool {
	return k == TreeDeltaObject || k == BlobDeltaObject || k == BundledBlobObject
}

// object is the kind of what a record of kind k holds once rebuilt: a tree or a blob.
func (k Kind) object() Kind {
	switch k {
	case TreeDeltaObject:
		return TreeObject
	case BlobDeltaObject, BundledBlobObject:
		return BlobObject
	}
	return k
}

// deltaOf is the record kind of a delta of an object of kind k.
func deltaOf(k Kind) Kind {
	if k == TreeObject {
		return TreeDeltaObject
	}
	return BlobDeltaObject
}

// u64 converts a size or offset for encoding. They are never negative here; clamping instead of
// wrapping keeps a bug from writing a huge value.
func u64(v int64) uint64 {
	if v < 0 {
		return 0
	}
	return uint64(v)
}

// i64 converts a decoded size or offset, refusing what does not fit.
func i64(v uint64) (int64, bool) {
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

const (
	packMagic = "PLANPACK"
	// packVersion is the format written: version 2 records, of any kind including blob deltas,
	// deltas held as patches (see patch.go, since version 4) and bundled blobs (bundledSince),
	// indexed by an idx of the same version, which also names every delta's base. Version 4 packs
	// (patches, no bundled blobs, a version 3 idx), version 3 packs (every delta a zstd frame),
	// version 2 packs (tree deltas at most, idx without bases) and version 1 packs (no record
	// trailers either) are still read, the latter verified by their content hashes. A patch is told
	// from a zstd frame by its magic, in a pack of any version.
	packVersion   = 5
	bundledSince  = 5
	packHeaderLen = len(packMagic) + 4
	idxMagic      = "PLANIDX5"
	idxMagicV3    = "PLANIDX3"
	idxMagicV2    = "PLANIDX2"
	idxMagicV1    = "PLANIDX1"
	idxHeaderLen  = len(idxMagic) + 4
	// recordTrailerLen is a version 2 record's trailer: the CRC-32C of its header bytes, then of its
	// data bytes, so that any changed stored byte is seen, including zstd frame bytes that would
	// still decode to the same content.
	recordTrailerLen = 8
	idxEntryLen      = 32 + 1 + 8 + 8 + 8
	// maxRecordHeader is the longest record header: kind, hash and two ten-byte uvarints.
	maxRecordHeader = 1 + 32 + 2*binary.MaxVarintLen64
	// paddedVarintLen is the width of a compSize patched in after streaming.
	paddedVarintLen = binary.MaxVarintLen64
)

// idxEntry locates one object inside one pack. offset is where its record header starts. base is
// the delta base of a delta record: a version 3 idx lists it, so that neither Present nor GC need
// read the record; it is zero when unknown (an idx of an older version, or a damaged record).
type idxEntry struct {
	hash   tree.Hash
	kind   Kind
	offset int64
	comp   int64
	raw    int64
	base   tree.Hash
}

func packHeader() []byte {
	return binary.BigEndian.AppendUint32([]byte(packMagic), packVersion)
}

// checkPackHeader returns the pack format version b announces.
func checkPackHeader(b []byte) (uint32, error) {
	if len(b) < packHeaderLen || string(b[:len(packMagic)]) != packMagic {
		return 0, errors.New("bad pack magic")
	}
	v := binary.BigEndian.Uint32(b[len(packMagic):])
	if v < 1 || v > packVersion {
		return 0, fmt.Errorf("unsupported pack version %d", v)
	}
	return v, nil
}

// trailerLen is the length of a record's trailer in a pack of version v.
func trailerLen(v uint32) int64 {
	if v >= 2 {
		return recordTrailerLen
	}
	return 0
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// appendTrailer appends a version 2 record trailer for a header and the CRC of its data.
func appendTrailer(b, header []byte, dataCRC uint32) []byte {
	b = binary.BigEndian.AppendUint32(b, crc(header))
	return binary.BigEndian.AppendUint32(b, dataCRC)
}

// checkTrailer compares a record's trailer with its header bytes and the CRC of its data.
func checkTrailer(trailer, header []byte, dataCRC uint32) error {
	if len(trailer) < recordTrailerLen {
		return errors.New("record trailer truncated (pack cut short)")
	}
	if binary.BigEndian.Uint32(trailer) != crc(header) {
		return errors.New("record header does not match its checksum")
	}
	if binary.BigEndian.Uint32(trailer[4:]) != dataCRC {
		return errors.New("stored bytes do not match their checksum")
	}
	return nil
}

// crcWriter passes writes through, keeping the CRC-32C of what went by.
type crcWriter struct {
	w   io.Writer
	sum uint32
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.sum = crc32.Update(c.sum, castagnoli, p[:n])
	return n, err
}

func appendRecordHeader(b []byte, kind Kind, h tree.Hash, raw, comp int64) []byte {
	b = append(b, byte(kind))
	b = append(b, h[:]...)
	b = binary.AppendUvarint(b, u64(raw))
	return binary.AppendUvarint(b, u64(comp))
}

// A delta record's data (TreeDeltaObject, BlobDeltaObject) starts with the hash of its base and its
// depth (1 when the base is stored whole), followed by a zstd frame that decodes, with the base's
// content as raw dictionary, to the object's content.
const (
	deltaPrefixLen = 32 + 1
	// maxDeltaDepth is the longest chain a writer builds: an object whose base is already this deep
	// is stored whole, so a read decodes at most maxDeltaDepth frames on top of one whole object.
	maxDeltaDepth = 8
	// maxDeltaChain is how many deltas a reader follows before calling the chain damaged (a cycle).
	// It is above maxDeltaDepth because two batches racing to store one object in different forms
	// can, in theory, join chains the writers measured separately.
	maxDeltaChain = 4 * maxDeltaDepth
	// maxDeltaObject bounds the size of an object stored as a delta and of the base it refers to,
	// which is what a read of a delta holds in memory per link. It is largeBlob: a larger blob is
	// streamed into its pack whole, in bounded memory.
	maxDeltaObject = largeBlob
)

// appendDeltaPrefix appends base and depth; a depth outside 0..255 (never written) is clamped
// rather than wrapped.
func appendDeltaPrefix(b []byte, base tree.Hash, depth int) []byte {
	b = append(b, base[:]...)
	return append(b, uint8(min(max(depth, 0), math.MaxUint8)))
}

// parseDeltaPrefix splits a delta record's data into base, depth and frame.
func parseDeltaPrefix(b []byte) (tree.Hash, int, []byte, error) {
	var base tree.Hash
	if len(b) < deltaPrefixLen {
		return base, 0, nil, errors.New("delta record too short")
	}
	copy(base[:], b)
	depth := int(b[32])
	if depth < 1 || depth > maxDeltaDepth {
		return base, 0, nil, fmt.Errorf("delta depth %d out of range", depth)
	}
	if base.IsZero() {
		return base, 0, nil, errors.New("delta without a base")
	}
	return base, depth, b[deltaPrefixLen:], nil
}

// A bundled blob's record (BundledBlobObject) holds, after the delta prefix naming its bundle, only
// where its content starts in the bundle's: a uvarint offset. Its length is the record's rawSize.

// appendBundleRef appends the offset of a bundled blob's content in its bundle.
func appendBundleRef(b []byte, off int) []byte { return binary.AppendUvarint(b, u64(int64(off))) }

// bundleSlice returns the raw bytes of a bundled blob from its bundle's content, given what its
// record holds after the prefix; the bounds are checked against the bundle actually there.
func bundleSlice(ref []byte, raw int64, bundle []byte) ([]byte, error) {
	off, n := binary.Uvarint(ref)
	if n <= 0 || n != len(ref) {
		return nil, errors.New("bad offset in a bundled blob's record")
	}
	if off > uint64(len(bundle)) || raw < 0 || uint64(raw) > uint64(len(bundle))-off {
		return nil, fmt.Errorf("bundled blob at %d+%d lies outside its bundle of %d bytes", off, raw, len(bundle))
	}
	return bundle[off : off+uint64(raw)], nil
}

// putPaddedUvarint writes v as a uvarint of exactly paddedVarintLen bytes (continuation bits set on
// the first nine), which binary.Uvarint reads back as v; it lets a size be patched in place.
func putPaddedUvarint(b []byte, v uint64) {
	for i := 0; i < paddedVarintLen-1; i++ {
		b[i] = byte(v) | 0x80
		v >>= 7
	}
	b[paddedVarintLen-1] = byte(v)
}

// parseRecordHeader reads a record header from b and returns it (offset unset) with its length.
func parseRecordHeader(b []byte) (idxEntry, int, error) {
	var e idxEntry
	if len(b) < 1+32 {
		return e, 0, errors.New("truncated record header")
	}
	e.kind = Kind(b[0])
	copy(e.hash[:], b[1:33])
	n := 33
	raw, m := binary.Uvarint(b[n:])
	if m <= 0 {
		return e, 0, errors.New("bad raw size in record header")
	}
	n += m
	comp, m := binary.Uvarint(b[n:])
	if m <= 0 {
		return e, 0, errors.New("bad compressed size in record header")
	}
	n += m
	var ok1, ok2 bool
	e.raw, ok1 = i64(raw)
	e.comp, ok2 = i64(comp)
	if !e.kind.valid() || !ok1 || !ok2 {
		return e, 0, errors.New("bad record header")
	}
	return e, n, nil
}

// idxMagicOf is the magic of the idx of a pack of format version v.
func idxMagicOf(v uint32) string {
	switch v {
	case 1:
		return idxMagicV1
	case 2:
		return idxMagicV2
	case 3, 4:
		return idxMagicV3
	}
	return idxMagic
}

// encodeIdx returns the idx file for entries, which must be sorted by hash without duplicates, of a
// pack of format version. A version 3 idx follows the entries with the base of each delta entry, in
// entry order (zero when unknown).
func encodeIdx(entries []idxEntry, version uint32) []byte {
	deltas := 0
	if version >= 3 {
		for i := range entries {
			if entries[i].kind.delta() {
				deltas++
			}
		}
	}
	b := make([]byte, 0, idxHeaderLen+len(entries)*idxEntryLen+deltas*len(tree.Hash{})+sha256.Size)
	b = append(b, idxMagicOf(version)...)
	// A pack cannot hold 2^32 records: each takes at least 35 bytes of a 64 MiB pack.
	b = binary.BigEndian.AppendUint32(b, uint32(min(len(entries), math.MaxUint32)))
	for i := range entries {
		e := &entries[i]
		b = append(b, e.hash[:]...)
		b = append(b, byte(e.kind))
		b = binary.BigEndian.AppendUint64(b, u64(e.offset))
		b = binary.BigEndian.AppendUint64(b, u64(e.comp))
		b = binary.BigEndian.AppendUint64(b, u64(e.raw))
	}
	if version >= 3 {
		for i := range entries {
			if entries[i].kind.delta() {
				b = append(b, entries[i].base[:]...)
			}
		}
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

// decodeIdx parses and checks an idx file and returns the format version of its pack; any
// problem means the file is damaged.
func decodeIdx(b []byte) ([]idxEntry, uint32, error) {
	n, err := idxCount(b)
	if err != nil {
		return nil, 0, err
	}
	entries := make([]idxEntry, 0, n)
	version, err := walkIdx(b, func(e *idxEntry) { entries = append(entries, *e) })
	if err != nil {
		return nil, 0, err
	}
	return entries, version, nil
}

// idxVersion is the pack format version an idx file's magic names (0 for none: walkIdx refuses it).
func idxVersion(b []byte) uint32 {
	if len(b) < len(idxMagic) {
		return 0
	}
	switch string(b[:len(idxMagic)]) {
	case idxMagicV1:
		return 1
	case idxMagicV2:
		return 2
	case idxMagicV3:
		return 3
	case idxMagic:
		return packVersion
	}
	return 0
}

// idxCount is the number of entries an idx file announces (checked by walkIdx against its length).
func idxCount(b []byte) (int, error) {
	if len(b) < idxHeaderLen+sha256.Size {
		return 0, errors.New("idx too short")
	}
	return int(binary.BigEndian.Uint32(b[len(idxMagic):])), nil
}

// idxLayout is where an idx file's parts lie: its entries and the delta bases after them.
type idxLayout struct {
	count       int
	version     uint32
	ents, bases []byte
}

// idxLayoutOf checks what slicing an idx file relies on (length, magic, the count against the
// length, whole delta bases) and returns its parts; walkIdx checks the rest.
func idxLayoutOf(b []byte) (idxLayout, error) {
	count, err := idxCount(b)
	if err != nil {
		return idxLayout{}, err
	}
	version := idxVersion(b)
	if version == 0 {
		return idxLayout{}, errors.New("bad idx magic")
	}
	body := b[:len(b)-sha256.Size]
	rest := len(body) - idxHeaderLen
	if count > rest/idxEntryLen || (version < 3 && rest != count*idxEntryLen) {
		return idxLayout{}, fmt.Errorf("idx length does not match its count %d", count)
	}
	bases := body[idxHeaderLen+count*idxEntryLen:]
	if len(bases)%len(tree.Hash{}) != 0 {
		return idxLayout{}, fmt.Errorf("idx has %d bytes of delta bases, not a whole number", len(bases))
	}
	return idxLayout{count: count, version: version, ents: body[idxHeaderLen : idxHeaderLen+count*idxEntryLen], bases: bases}, nil
}

// walkIdx checks an idx file whole (magic, checksum, lengths, ranges and order) and calls fn (if
// not nil) with each entry, in order; it returns the format version of the pack. fn may see entries of a file
// that is then refused: the caller discards what it built from them when walkIdx fails.
func walkIdx(b []byte, fn func(e *idxEntry)) (uint32, error) {
	return walkIdxSummed(b, false, fn)
}

// walkIdxSummed is walkIdx for bytes whose trailing checksum the caller has verified already
// (summed): it is not computed twice.
func walkIdxSummed(b []byte, summed bool, fn func(e *idxEntry)) (uint32, error) {
	l, err := idxLayoutOf(b)
	if err != nil {
		return 0, err
	}
	if !summed && !idxSumOK(b) {
		return 0, errors.New("idx checksum mismatch")
	}
	count, version, p, bases := l.count, l.version, l.ents, l.bases
	var e, prev idxEntry
	for i := range count {
		copy(e.hash[:], p[:32])
		e.kind = Kind(p[32])
		off := binary.BigEndian.Uint64(p[33:])
		comp := binary.BigEndian.Uint64(p[41:])
		raw := binary.BigEndian.Uint64(p[49:])
		p = p[idxEntryLen:]
		var ok1, ok2, ok3 bool
		e.offset, ok1 = i64(off)
		e.comp, ok2 = i64(comp)
		e.raw, ok3 = i64(raw)
		// Halved bounds keep offset+comp from overflowing in readers. Blob deltas came with
		// version 3, bundled blobs with version 4.
		if !e.kind.valid() || (version < 3 && e.kind == BlobDeltaObject) ||
			(version < bundledSince && e.kind == BundledBlobObject) || !ok1 || !ok2 || !ok3 ||
			e.offset < int64(packHeaderLen) || e.offset > math.MaxInt64/2 || e.comp > math.MaxInt64/2 {
			return 0, fmt.Errorf("idx entry %d is out of range", i)
		}
		if i > 0 && bytes.Compare(prev.hash[:], e.hash[:]) >= 0 {
			return 0, fmt.Errorf("idx entry %d is out of order", i)
		}
		e.base = tree.Hash{}
		if version >= 3 && e.kind.delta() {
			if len(bases) == 0 {
				return 0, fmt.Errorf("idx entry %d is a delta without a base", i)
			}
			copy(e.base[:], bases)
			bases = bases[len(e.base):]
		}
		if fn != nil {
			fn(&e)
		}
		prev.hash = e.hash
	}
	if len(bases) != 0 {
		return 0, fmt.Errorf("idx lists %d delta base(s) more than it has deltas", len(bases)/len(tree.Hash{}))
	}
	return version, nil
}

// sortEntries orders entries by hash and drops repeats (a pack may, harmlessly, hold an object twice).
func sortEntries(entries []idxEntry) []idxEntry {
	slices.SortStableFunc(entries, func(a, b idxEntry) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	return slices.CompactFunc(entries, func(a, b idxEntry) bool { return a.hash == b.hash })
}

// scanPack rebuilds a pack's entries from its records alone and returns its format version. It
// reads sizes and skips the compressed bytes; hashes are checked later, on every read.
func scanPack(r io.Reader, size int64) ([]idxEntry, uint32, error) {
	entries, version, err := scanRecords(r, size)
	if err != nil {
		return nil, 0, err
	}
	return sortEntries(entries), version, nil
}

// scanRecords lists every record of a pack in file order, duplicates included, and returns the
// pack's format version.
func scanRecords(r io.Reader, size int64) ([]idxEntry, uint32, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	hdr := make([]byte, packHeaderLen)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, 0, fmt.Errorf("read pack header: %w", err)
	}
	version, err := checkPackHeader(hdr)
	if err != nil {
		return nil, 0, err
	}
	tl := trailerLen(version)
	var entries []idxEntry
	pos := int64(packHeaderLen)
	for pos < size {
		var e idxEntry
		e.offset = pos
		var head [33]byte
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return nil, 0, fmt.Errorf("record at %d: %w", pos, err)
		}
		e.kind = Kind(head[0])
		copy(e.hash[:], head[1:])
		cr := &countingByteReader{r: br}
		raw, err1 := binary.ReadUvarint(cr)
		comp, err2 := binary.ReadUvarint(cr)
		if err := errors.Join(err1, err2); err != nil {
			return nil, 0, fmt.Errorf("record at %d: sizes: %w", pos, err)
		}
		pos += int64(len(head)) + cr.n
		var ok1, ok2 bool
		e.raw, ok1 = i64(raw)
		e.comp, ok2 = i64(comp)
		if !e.kind.valid() || (version < bundledSince && e.kind == BundledBlobObject) || !ok1 || !ok2 || e.comp > size-pos-tl {
			return nil, 0, fmt.Errorf("record at %d: bad header", e.offset)
		}
		skip := e.comp + tl
		if e.kind.delta() && e.comp >= deltaPrefixLen {
			// The base goes into the idx; a prefix that does not parse leaves it unknown, and
			// reading the record reports the damage.
			var prefix [deltaPrefixLen]byte
			if _, err := io.ReadFull(br, prefix[:]); err != nil {
				return nil, 0, fmt.Errorf("record at %d: %w", e.offset, err)
			}
			if base, _, _, err := parseDeltaPrefix(prefix[:]); err == nil {
				e.base = base
			}
			skip -= deltaPrefixLen
		}
		if _, err := br.Discard(int(skip)); err != nil {
			return nil, 0, fmt.Errorf("record at %d: %w", e.offset, err)
		}
		pos += e.comp + tl
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return nil, 0, errors.New("pack holds no records")
	}
	return entries, version, nil
}

type countingByteReader struct {
	r io.ByteReader
	n int64
}

func (c *countingByteReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}
