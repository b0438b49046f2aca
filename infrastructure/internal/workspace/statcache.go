package workspace

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/fsx"
)

// statKey is what the stat cache compares to decide a file is unchanged.
type statKey struct {
	Size  int64
	Mtime int64 // ns
	Ctime int64 // ns
	Ino   uint64
	Dev   uint64
	Mode  uint32 // st_mode, type bits included
}

// keyOfStat is the stat key of what fstatat returned (fields per platform: stat_*.go).
func keyOfStat(st *unix.Stat_t) statKey { return unixStatKey(st) }

// keyOf is the stat key of what os.File.Stat returned.
func keyOf(fi fs.FileInfo) (statKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return statKey{}, false
	}
	k := syscallStatKey(st)
	k.Size = fi.Size()
	return k, true
}

// racy reports whether an entry with key k, observed no earlier than at, could miss a write that
// keeps size and timestamps: that happens while mtime or ctime lie within one timestamp tick of at.
// File systems with whole-second timestamps get a two-second margin.
func racy(k statKey, at time.Time) bool {
	margin := int64(20 * time.Millisecond)
	if k.Mtime%int64(time.Second) == 0 && k.Ctime%int64(time.Second) == 0 {
		margin = int64(2 * time.Second)
	}
	newest := max(k.Mtime, k.Ctime)
	return newest+margin > at.UnixNano()
}

// The stat cache remembers, per directory, what the last snapshot recorded: every entry's name and
// kind, the stat key and content hash of each file, the target of each symlink, the mode and tree
// of each subdirectory, and the directory's own tree. A walk reads it in the order it lists
// directories, one record at a time, merging each record's sorted entries with the sorted live
// names: no per-file map, and nothing is decoded that the walk does not reach.
//
// Layout: "PLANSC3\n", the store view the entries were confirmed in [32] (zero: none, see
// confirmStamp), uvarint directory count, then per directory
//
//	uvarint len(rel) | rel | flags u8 (1: exact) | tree hash [32] | uvarint entries | u32 len(body) | body
//
// where body is the entries sorted by name, each
//
//	uvarint len(name) | name | kind u8 (| 0x80 when racy) | per kind:
//	  file     size, mtime, ctime, ino, dev u64 | st_mode u32 | content hash [32]
//	  symlink  size, mtime, ctime, ino, dev u64 | st_mode u32 | uvarint len(target) | target
//	  dir      tree mode u32 | tree hash [32]
//
// and last the SHA-256 of everything before it. Integers are little-endian.
//
// A record's tree hash is the tree the directory had at the last snapshot (the base its next tree
// is stored as a delta against). Exact says the record's entries are precisely that tree's
// listing, each subdirectory's entry naming its own record's tree: only then may a walk that finds
// every entry unchanged reuse the hash without encoding the tree again. A restore patches records
// in place and clears exact on every directory it touched and on their ancestors.
//
// The view stamp is the store's ConfirmStamp after the snapshot that wrote the cache, which had
// confirmed every file's content present (or stored it): a walk in a store whose view has that
// stamp still takes the unchanged files as present without looking each one up. Packs are never
// changed, only added or deleted, so the same stamp means the same objects; a restore's patch and
// a tracker's save write none.
const statCacheMagic = "PLANSC3\n"

// stampLen is the length of the view stamp after the magic.
const stampLen = sha256.Size

const (
	recordExact = 1 << 0
	entryRacy   = 0x80
	keyBytes    = 8*5 + 4
)

// cachedEntry is one decoded stat cache entry. name and target alias the cache's buffer.
type cachedEntry struct {
	name   string
	kind   tree.Kind
	racy   bool
	key    statKey   // files and symlinks
	mode   uint32    // directories: the tree entry's mode
	hash   tree.Hash // files: content; directories: tree
	target string    // symlinks
}

// dirRecord is one directory of a loaded stat cache; its entries are decoded on demand.
type dirRecord struct {
	hash  tree.Hash
	exact bool
	count int
	body  []byte
}

// statCache is a loaded stat cache: the file's bytes and an index of its directories.
type statCache struct {
	dirs  map[string]dirRecord
	size  int       // bytes of the file it was read from
	stamp tree.Hash // the store view its files were confirmed present in (zero: none)
}

func (c *statCache) dir(rel string) (dirRecord, bool) {
	if c == nil {
		return dirRecord{}, false
	}
	r, ok := c.dirs[rel]
	return r, ok
}

// entryIter decodes a record's entries in order. Names are checked to increase strictly, so a
// merge with the sorted live names never misses one; a malformed record ends the iteration with
// err set, and the walk then trusts nothing of it.
type entryIter struct {
	b    []byte
	left int
	prev string
	err  error
}

func (r dirRecord) iter() entryIter { return entryIter{b: r.body, left: r.count} }

// wellFormed reports whether every entry of the record decodes. A walk checks it before it
// merges the record with the live names: an entry decoded before the damage is found must not be
// trusted either.
func (r dirRecord) wellFormed() bool {
	it := r.iter()
	var e cachedEntry
	for it.next(&e) {
	}
	return it.err == nil
}

var errBadCache = errors.New("malformed stat cache")

// next decodes the next entry into e; false at the end or on damage (err says which).
func (it *entryIter) next(e *cachedEntry) bool {
	if it.left == 0 || it.err != nil {
		if it.err == nil && len(it.b) != 0 {
			it.err = errBadCache
		}
		return false
	}
	it.left--
	name, b, ok := cutBytes(it.b)
	if !ok || len(name) == 0 || len(b) < 1 || (it.prev != "" && name <= it.prev) {
		it.err = errBadCache
		return false
	}
	*e = cachedEntry{name: name, kind: tree.Kind(b[0] &^ entryRacy), racy: b[0]&entryRacy != 0}
	b = b[1:]
	switch e.kind {
	case tree.KindFile, tree.KindSymlink:
		if len(b) < keyBytes {
			it.err = errBadCache
			return false
		}
		e.key = decodeKey(b)
		b = b[keyBytes:]
		if e.kind == tree.KindFile {
			if len(b) < len(e.hash) {
				it.err = errBadCache
				return false
			}
			copy(e.hash[:], b)
			b = b[len(e.hash):]
			break
		}
		if e.target, b, ok = cutBytes(b); !ok || e.target == "" {
			it.err = errBadCache
			return false
		}
	case tree.KindDir:
		if len(b) < 4+len(e.hash) {
			it.err = errBadCache
			return false
		}
		e.mode = binary.LittleEndian.Uint32(b)
		copy(e.hash[:], b[4:])
		b = b[4+len(e.hash):]
	default:
		it.err = errBadCache
		return false
	}
	it.b, it.prev = b, name
	return true
}

// cutBytes reads a uvarint length and that many bytes, returned as a string aliasing b.
func cutBytes(b []byte) (string, []byte, bool) {
	l, k := binary.Uvarint(b)
	if k <= 0 || l > uint64(len(b)-k) { // #nosec G115 -- len(b)-k >= 0 once k > 0
		return "", nil, false
	}
	end := k + int(l) // #nosec G115 -- bounded by len(b) above
	return alias(b[k:end]), b[end:], true
}

// alias views b as a string without copying; b must never change afterwards (the cache's buffer
// is read once and kept read-only).
func alias(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b)) // #nosec G103 -- b is never written after it is read, see above
}

func decodeKey(b []byte) statKey {
	return statKey{
		Size:  int64(binary.LittleEndian.Uint64(b[0:])),  // #nosec G115 -- round-trips the encoder
		Mtime: int64(binary.LittleEndian.Uint64(b[8:])),  // #nosec G115 -- round-trips the encoder
		Ctime: int64(binary.LittleEndian.Uint64(b[16:])), // #nosec G115 -- round-trips the encoder
		Ino:   binary.LittleEndian.Uint64(b[24:]),
		Dev:   binary.LittleEndian.Uint64(b[32:]),
		Mode:  binary.LittleEndian.Uint32(b[40:]),
	}
}

func appendKey(b []byte, k statKey) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(k.Size))  // #nosec G115 -- bit pattern round-trips
	b = binary.LittleEndian.AppendUint64(b, uint64(k.Mtime)) // #nosec G115 -- bit pattern round-trips
	b = binary.LittleEndian.AppendUint64(b, uint64(k.Ctime)) // #nosec G115 -- bit pattern round-trips
	b = binary.LittleEndian.AppendUint64(b, k.Ino)
	b = binary.LittleEndian.AppendUint64(b, k.Dev)
	return binary.LittleEndian.AppendUint32(b, k.Mode)
}

// appendEntry encodes one entry.
func appendEntry(b []byte, e *cachedEntry) []byte {
	b = binary.AppendUvarint(b, uint64(len(e.name)))
	b = append(b, e.name...)
	kind := byte(e.kind)
	if e.racy {
		kind |= entryRacy
	}
	b = append(b, kind)
	switch e.kind {
	case tree.KindFile:
		b = appendKey(b, e.key)
		b = append(b, e.hash[:]...)
	case tree.KindSymlink:
		b = appendKey(b, e.key)
		b = binary.AppendUvarint(b, uint64(len(e.target)))
		b = append(b, e.target...)
	case tree.KindDir:
		b = binary.LittleEndian.AppendUint32(b, e.mode)
		b = append(b, e.hash[:]...)
	}
	return b
}

// cacheWriter encodes a stat cache one directory at a time.
type cacheWriter struct {
	b     []byte
	count int
	body  int // offset of the open record's body length
	n     int // entries in the open record
	nAt   int
}

func newCacheWriter(sizeHint int, stamp tree.Hash) *cacheWriter {
	w := &cacheWriter{b: make([]byte, 0, sizeHint+len(statCacheMagic)+stampLen+16+sha256.Size)}
	w.b = append(w.b, statCacheMagic...)
	w.b = append(w.b, stamp[:]...)
	w.b = append(w.b, 0, 0, 0, 0, 0) // the directory count, patched by finish as a padded uvarint
	return w
}

// beginDir opens the record of directory rel.
func (w *cacheWriter) beginDir(rel string, h tree.Hash, exact bool) {
	w.count++
	w.b = binary.AppendUvarint(w.b, uint64(len(rel)))
	w.b = append(w.b, rel...)
	var flags byte
	if exact {
		flags |= recordExact
	}
	w.b = append(w.b, flags)
	w.b = append(w.b, h[:]...)
	w.nAt = len(w.b)
	w.b = append(w.b, 0, 0, 0, 0, 0) // entry count, padded uvarint
	w.body = len(w.b)
	w.b = append(w.b, 0, 0, 0, 0)
	w.n = 0
}

func (w *cacheWriter) entry(e *cachedEntry) {
	w.b = appendEntry(w.b, e)
	w.n++
}

// endDir closes the open record.
func (w *cacheWriter) endDir() {
	putPadded(w.b[w.nAt:w.nAt+5], uint64(w.n))                             // #nosec G115 -- a count, never negative
	binary.LittleEndian.PutUint32(w.b[w.body:], uint32(len(w.b)-w.body-4)) // #nosec G115 -- a record is far below 4 GiB
}

// raw appends a record exactly as read (a restore's patch keeps the records it does not touch).
func (w *cacheWriter) raw(rel string, r dirRecord) {
	w.beginDir(rel, r.hash, r.exact)
	w.b = append(w.b, r.body...)
	w.n = r.count
	w.endDir()
}

func (w *cacheWriter) finish() []byte {
	at := len(statCacheMagic) + stampLen
	putPadded(w.b[at:at+5], uint64(w.count)) // #nosec G115 -- a count, never negative
	s := sha256.Sum256(w.b)
	return append(w.b, s[:]...)
}

// putPadded writes v as a five-byte uvarint (values below 2^35).
func putPadded(b []byte, v uint64) {
	for i := range 4 {
		b[i] = byte(v&0x7f) | 0x80
		v >>= 7
	}
	b[4] = byte(v & 0x7f)
}

func loadStatCache(path string) *statCache {
	b, err := os.ReadFile(path) // #nosec G304 -- plan's own state file
	if err != nil {
		return &statCache{}
	}
	c, err := decodeStatCache(b)
	if err != nil {
		// A damaged cache only costs re-hashing; never trust part of one.
		return &statCache{}
	}
	return c
}

// decodeStatCache checks the checksum and indexes the directories; entries are decoded as the walk
// reaches them. b must not change afterwards: names alias it.
func decodeStatCache(b []byte) (*statCache, error) {
	if len(b) < len(statCacheMagic)+stampLen+sha256.Size || string(b[:len(statCacheMagic)]) != statCacheMagic {
		return nil, errors.New("bad stat cache header")
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if s := sha256.Sum256(body); !bytes.Equal(s[:], sum) {
		return nil, errors.New("stat cache checksum mismatch")
	}
	var stamp tree.Hash
	copy(stamp[:], body[len(statCacheMagic):])
	r := body[len(statCacheMagic)+stampLen:]
	n, k := binary.Uvarint(r)
	if k <= 0 || n > uint64(len(r)) {
		return nil, errors.New("bad stat cache count")
	}
	r = r[k:]
	c := &statCache{dirs: make(map[string]dirRecord, n), size: len(b), stamp: stamp}
	for range n {
		rel, rest, ok := cutBytes(r)
		if !ok || len(rest) < 1+sha256.Size {
			return nil, errBadCache
		}
		var rec dirRecord
		rec.exact = rest[0]&recordExact != 0
		copy(rec.hash[:], rest[1:])
		rest = rest[1+sha256.Size:]
		count, k := binary.Uvarint(rest)
		if k <= 0 || count > uint64(len(rest)) || len(rest)-k < 4 {
			return nil, errBadCache
		}
		rest = rest[k:]
		size := binary.LittleEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(size) > uint64(len(rest)) {
			return nil, errBadCache
		}
		rec.count, rec.body, r = int(count), rest[:size], rest[size:] // #nosec G115 -- bounded by len(rest)
		if _, dup := c.dirs[rel]; dup {
			return nil, errBadCache
		}
		c.dirs[rel] = rec
	}
	if len(r) != 0 {
		return nil, errors.New("trailing bytes in stat cache")
	}
	return c, nil
}

// saveStatCache replaces the cache atomically but without fsync: the cache is a hint, checksummed
// as a whole, so a torn or lost write after a power failure only costs re-hashing, and skipping the
// sync keeps it off every checkpoint's critical path.
func saveStatCache(path string, b []byte) error {
	return fsx.Replace(path, b, false)
}

// cachePatch is what a restore did to the workspace, for the stat cache: files written (with the
// key they have now and the hash they hold) and paths removed.
type cachePatch struct {
	written map[string]cachedEntry // by path; the entry's name is the last component
	removed []string
}

// patchStatCache applies p to the cache at path: entries of written files are replaced, removed
// paths (and, for a directory, its records) dropped, and every directory touched, with its
// ancestors, loses its exact mark, so that the next walk encodes their trees again. The records
// nothing touched are copied as they are. Failure only costs re-hashing, so it is not reported.
func patchStatCache(path string, p cachePatch) {
	c := loadStatCache(path)
	touched := map[string]bool{}
	mark := func(rel string) {
		for {
			touched[rel] = true
			if rel == "" {
				return
			}
			rel = parentOf(rel)
		}
	}
	writes := map[string][]cachedEntry{}
	for p, e := range p.written {
		d := parentOf(p)
		writes[d] = append(writes[d], e)
		mark(d)
	}
	gone := map[string]bool{}
	for _, r := range p.removed {
		gone[r] = true
		mark(parentOf(r))
	}
	under := func(rel string) bool {
		for r := rel; r != ""; r = parentOf(r) {
			if gone[r] {
				return true
			}
		}
		return false
	}
	w := newCacheWriter(c.size+len(p.written)*(keyBytes+sha256.Size+64), tree.Hash{}) // vouches for no view
	for rel, rec := range c.dirs {
		if under(rel) {
			continue
		}
		if !touched[rel] {
			w.raw(rel, rec)
			continue
		}
		var merged []cachedEntry
		it := rec.iter()
		var e cachedEntry
		for it.next(&e) {
			if gone[join(rel, e.name)] {
				continue
			}
			if _, replaced := p.written[join(rel, e.name)]; replaced {
				continue
			}
			merged = append(merged, e)
		}
		if it.err != nil {
			merged = nil // a damaged record is dropped whole; the files written are kept below
		}
		merged = append(merged, writes[rel]...)
		delete(writes, rel)
		writeRecord(w, rel, rec.hash, merged)
	}
	for rel, es := range writes {
		// A directory the restore created (where a file was, say) has no record yet.
		writeRecord(w, rel, tree.ZeroHash, es)
	}
	_ = saveStatCache(path, w.finish())
}

// writeRecord writes a record (never exact) of entries, sorted and without duplicates.
func writeRecord(w *cacheWriter, rel string, h tree.Hash, es []cachedEntry) {
	sortEntries(es)
	w.beginDir(rel, h, false)
	for i := range es {
		if i > 0 && es[i].name == es[i-1].name {
			continue
		}
		w.entry(&es[i])
	}
	w.endDir()
}

func sortEntries(es []cachedEntry) {
	slices.SortStableFunc(es, func(a, b cachedEntry) int { return strings.Compare(a.name, b.name) })
}

// parentOf is the directory holding rel ("" for a top-level name).
func parentOf(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}
