package objectstore

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/fsx"
)

// ErrContentChanged says the bytes read for a blob were not the ones its hash names: the file
// changed between hashing and storing. The caller re-hashes and retries. It is a fault.ErrConflict.
var ErrContentChanged = fault.Conflict("content changed while it was being stored")

// Batch collects new objects into packs under tmp/; Commit makes them durable and visible. Its
// methods are safe for concurrent use, except that Commit and Abort must not race with puts.
type Batch struct {
	s *Store

	mu        sync.Mutex
	added     map[tree.Hash]struct{}
	trees     map[tree.Hash]batchTree // encodings of trees (and small blobs) added, to serve as delta bases
	treeBytes int
	blobBytes int           // of the small blobs trees also holds (see rememberBlob)
	cur       *packWriter   // pack receiving small objects, nil until needed
	packs     []*packWriter // every pack this batch will install, in creation order
	err       error         // first write failure; the batch can then only be aborted
	state     batchState
	// relied is what the batch deduplicated onto or stored, when the store is shared: Commit hands
	// it to the store, whose Confirm checks it is still held before a record references it.
	relied map[tree.Hash]struct{}
}

type batchState uint8

const (
	batchOpen batchState = iota
	batchCommitted
	batchAborted
)

// NewBatch starts a batch.
func (s *Store) NewBatch() *Batch {
	_ = s.Load() // what cannot be read is stored afresh (see OpenBackendLazy); Commit reports the store
	b := &Batch{s: s, added: make(map[tree.Hash]struct{}), trees: make(map[tree.Hash]batchTree)}
	if s.shared {
		b.relied = make(map[tree.Hash]struct{})
	}
	return b
}

// rely notes that what the batch's objects reference depends on h (shared stores only).
func (b *Batch) rely(h tree.Hash) {
	if b.relied == nil {
		return
	}
	b.mu.Lock()
	b.relied[h] = struct{}{}
	b.mu.Unlock()
}

// Has reports whether h need not be stored: added to this batch already, or Present in the store
// (a copy that is there, whole and not known to be damaged). A stale or damaged copy does not
// count, so a checkpoint stores a fresh one and never references data it has not confirmed.
func (b *Batch) Has(h tree.Hash) bool {
	if b.s.Present(h) {
		b.rely(h)
		return true
	}
	b.mu.Lock()
	_, ok := b.added[h]
	b.mu.Unlock()
	return ok
}

// Epoch is the generation of what this process has confirmed the store holds (its trust memo;
// never 0),
// and whether the batch may take an object Has found at an earlier epoch as still held while the
// epoch is the same: every change of the view that can lose an object (a pack dropped or read
// again, a damage mark, a condemnation, a gc here) starts a new epoch, and objects only ever join
// a view otherwise. A long-lived scanner uses it to skip the lookups of a subtree it confirmed
// whole (see workspace's prepare). Not in a shared store, where Has also notes each object for
// Commit's Confirm, nor when the index cannot be read.
func (b *Batch) Epoch() (uint64, bool) {
	if b.relied != nil || b.s.Load() != nil {
		return 0, false
	}
	return b.s.trust.generation(), true
}

// ConfirmStamp names the store's view as this process holds it (see Store.ConfirmStamp), with the
// epoch it was read at: objects Has found in a view are still there in any later view with the
// same stamp, in any process, and in this process's later views of the same epoch (only packs
// were added). ok is false where no stamp can vouch: where Epoch cannot either, or when the store
// has a fault.
func (b *Batch) ConfirmStamp() (view tree.Hash, epoch uint64, ok bool) {
	epoch, ok = b.Epoch()
	if !ok {
		return tree.Hash{}, 0, false
	}
	view, ok = b.s.confirmStamp()
	return view, epoch, ok
}

// PutBlob stores the size bytes of r as blob h and returns the compressed size added (0 when h is
// already present, in which case r is not read). If r does not yield exactly size bytes hashing to
// h, nothing is stored and the error wraps ErrContentChanged.
func (b *Batch) PutBlob(r io.Reader, h tree.Hash, size int64) (int64, error) {
	return b.PutBlobDelta(r, h, size, tree.ZeroHash)
}

// PutBlobDelta is PutBlob for content that is likely a new version of blob base (a file's content at
// the previous checkpoint): the same no-op when h is present, but the blob is stored as a delta
// against base when that saves at least an eighth of the compressed size. It is stored whole when
// base is zero or equal to h, not Present (nor added to this batch), larger than maxDeltaObject or
// unreadable, or at the end of a chain of maxDeltaDepth deltas, and when the blob itself is larger
// than maxDeltaObject (it is then streamed, in bounded memory). Readers do not see the difference.
func (b *Batch) PutBlobDelta(r io.Reader, h tree.Hash, size int64, base tree.Hash) (int64, error) {
	if size < 0 {
		return 0, fault.Invalid("blob %s: negative size %d", h, size)
	}
	if b.Has(h) {
		return 0, nil
	}
	if size > largeBlob {
		return b.putLarge(r, h, size)
	}
	buf := getBuf(int(size))
	defer putBuf(buf)
	if err := readExactly(r, *buf); err != nil {
		return 0, fmt.Errorf("blob %s: %w", h, err)
	}
	if sha256.Sum256(*buf) != h {
		return 0, fmt.Errorf("blob %s: bytes read hash differently: %w", h, ErrContentChanged)
	}
	n, depth, err := b.putObject(BlobObject, h, *buf, base)
	if err == nil && n > 0 && size <= cacheBlobMax {
		b.rememberBlob(h, *buf, depth)
	}
	return n, err
}

// readExactly fills buf from r and checks r is then at EOF: a file that grew or shrank since it
// was hashed is a changed file, not a read error.
func readExactly(r io.Reader, buf []byte) error {
	if n, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("read %d of %d bytes: %w", n, len(buf), ErrContentChanged)
		}
		return fmt.Errorf("read: %w", err)
	}
	var one [1]byte
	switch _, err := io.ReadFull(r, one[:]); {
	case err == nil:
		return fmt.Errorf("more than %d bytes: %w", len(buf), ErrContentChanged)
	case !errors.Is(err, io.EOF):
		return fmt.Errorf("read: %w", err)
	}
	return nil
}

// PutTree stores t and returns its hash and the compressed size added (0 when already present).
func (b *Batch) PutTree(t Tree) (tree.Hash, int64, error) {
	return b.PutTreeDelta(t, tree.ZeroHash)
}

// PutTreeDelta is PutTree for a tree that is likely a new version of tree base: same hash, same
// no-op (0 stored) when the tree is present already, but the tree is stored as a delta against base
// when that is smaller. It is stored whole when base is zero, not Present (nor added to this batch),
// unreadable, larger than maxDeltaObject, or itself the end of a chain of maxDeltaDepth deltas, and
// when the delta would not be smaller than the whole compressed tree. Readers do not see the
// difference.
func (b *Batch) PutTreeDelta(t Tree, base tree.Hash) (h tree.Hash, stored int64, err error) {
	h, enc, err := HashTree(t)
	if err != nil {
		return h, 0, err
	}
	if b.Has(h) {
		return h, 0, nil
	}
	n, depth, err := b.putObject(TreeObject, h, enc, base)
	if err == nil && n > 0 {
		b.remember(h, enc, depth)
	}
	return h, n, err
}

// putObject compresses raw, the content of object h of kind (a blob or a tree), outside any lock
// (that is where the CPU goes), as a delta against base when that pays (see PutBlobDelta and
// PutTreeDelta), and appends the record. It returns the bytes stored and the depth of the delta (0
// when stored whole).
func (b *Batch) putObject(kind Kind, h tree.Hash, raw []byte, base tree.Hash) (int64, int, error) {
	c, err := sharedCodec()
	if err != nil {
		return 0, 0, err
	}
	e := idxEntry{hash: h, kind: kind, raw: int64(len(raw))}
	var data []byte
	depth := 0
	if !base.IsZero() && base != h && len(raw) <= maxDeltaObject {
		ddst := getBuf(0)
		defer putBuf(ddst)
		if d, n, ok := b.delta(kind, raw, base, (*ddst)[:0]); ok {
			*ddst = d
			data, depth = d, n
		}
	}
	// A delta a sixteenth of the content leaves a whole copy nothing to win: a blob's would need to
	// compress fourteen-fold and more to save the eighth a blob delta must, and a tree's is mostly
	// hashes, which do not compress.
	if data == nil || 16*len(data) > len(raw) {
		dst := getBuf(0)
		defer putBuf(dst)
		*dst = c.enc.EncodeAll(raw, (*dst)[:0])
		if data == nil || !pays(kind, len(data), len(*dst)) {
			data, depth = *dst, 0
		}
	}
	if depth > 0 {
		e.kind, e.base = deltaOf(kind), base
		b.rely(base) // the delta cannot be read without it
	}
	e.comp = int64(len(data))
	n, err := b.append(e, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return n, depth, err
}

// pays says whether a delta of delta bytes is worth storing instead of the whole object's compressed
// whole bytes. A tree delta only has to be smaller: a listing is small, and its delta usually a
// tenth of it. A blob delta must save an eighth: it makes a read decode its base chain too.
func pays(kind Kind, delta, whole int) bool {
	if kind == TreeObject {
		return delta < whole
	}
	return delta <= whole-whole/8
}

// delta appends to dst the data of a delta record of raw, an object of kind, against base and
// returns it with its depth; ok is false when no delta can be made (see PutBlobDelta and
// PutTreeDelta), or, for a blob, when it would not repeat enough of base to pay (worthDelta). A
// tree's delta is a patch (patch.go), or a zstd frame with base as dictionary when the patch is
// over a quarter of the listing and the frame smaller; a blob's is a patch when it differs from
// base in one short run, a zstd frame otherwise.
func (b *Batch) delta(kind Kind, raw []byte, base tree.Hash, dst []byte) ([]byte, int, bool) {
	baseRaw, baseDepth, ok := b.deltaBase(kind, base)
	if !ok || baseDepth >= maxDeltaDepth {
		return nil, 0, false
	}
	dst = appendDeltaPrefix(dst, base, baseDepth+1)
	if kind == TreeObject {
		if dst, ok = appendTreePatch(dst, baseRaw, raw); !ok {
			return nil, 0, false
		}
		// A patch writes out what changed uncompressed: where that is much of the listing, a
		// zstd frame with the base as dictionary may be smaller (names compress), so the smaller
		// of the two is stored.
		if 4*(len(dst)-deltaPrefixLen) > len(raw) {
			if z, err := encodeWithDict(raw, baseRaw, appendDeltaPrefix(nil, base, baseDepth+1)); err == nil && len(z) < len(dst) {
				dst = append(dst[:0], z...)
			}
		}
		return dst, baseDepth + 1, true
	}
	// A patch is found by comparing the two ends; only a blob that is not one is sampled.
	if p, ok := appendBlobPatch(dst, baseRaw, raw); ok {
		return p, baseDepth + 1, true
	}
	if !worthDelta(raw, baseRaw) {
		return nil, 0, false
	}
	dst, err := encodeWithDict(raw, baseRaw, dst)
	if err != nil {
		return nil, 0, false
	}
	return dst, baseDepth + 1, true
}

// deltaBase returns the content of base, an object of kind, and the depth of its record, to make
// a delta against: from this batch, from the store's tree cache, or read from the store (a tree or
// small blob so read is cached for the next version). ok is false when base cannot serve (see PutBlobDelta).
func (b *Batch) deltaBase(kind Kind, base tree.Hash) ([]byte, int, bool) {
	if raw, depth, ok := b.recalled(base); ok {
		return raw, depth, true
	}
	l, found := b.s.lookup(base)
	if !found || l.raw > maxDeltaObject || !b.s.Present(base) {
		return nil, 0, false
	}
	// Any failure only costs the saving: the object is then stored whole, independent of base.
	raw, depth, hit, err := b.s.readChainFrom(base, l, nil, true)
	if err != nil {
		return nil, 0, false
	}
	// What the cache gave was verified when it was cached, but the delta will be read from the
	// records on disk: one damaged since, unseen here, must not become the base of new content.
	if hit != nil {
		if err := b.s.recordsIntact(hit.h, hit.l); err != nil {
			b.s.noteDamage(err)
			return nil, 0, false
		}
	}
	return raw, depth, true
}

// batchTreeMemory bounds the tree encodings a batch keeps to serve as delta bases before they are
// committed (and readable from the store). Past it, a base added to this batch counts as missing.
const batchTreeMemory = 4 << 20

type batchTree struct {
	enc   []byte
	depth int
}

// rememberBlob keeps a copy of a small blob just added (the next version of a file is made a
// delta against it), while its own budget lasts: a first walk's many blobs leave the trees theirs.
func (b *Batch) rememberBlob(h tree.Hash, content []byte, depth int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.trees == nil || b.blobBytes+len(content) > batchTreeMemory {
		return
	}
	if _, ok := b.trees[h]; !ok {
		b.trees[h] = batchTree{enc: bytes.Clone(content), depth: depth}
		b.blobBytes += len(content)
	}
}

// remember keeps the encoding of a tree just added, while the budget lasts.
func (b *Batch) remember(h tree.Hash, enc []byte, depth int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.trees == nil || b.treeBytes+len(enc) > batchTreeMemory {
		return
	}
	if _, ok := b.trees[h]; !ok {
		b.trees[h] = batchTree{enc: enc, depth: depth}
		b.treeBytes += len(enc)
	}
}

// keepTrees hands the trees (and small blobs) this batch stored, once committed, to the store's
// tree cache, each for the record the index now locates it at (when that is this batch's own).
func (b *Batch) keepTrees() {
	if len(b.trees) == 0 {
		return
	}
	mine := make(map[*packFile]bool, len(b.packs))
	b.s.mu.RLock()
	for _, pw := range b.packs {
		mine[b.s.packs[pw.id]] = true
	}
	b.s.mu.RUnlock()
	for h, t := range b.trees {
		if l, ok := b.s.lookup(h); ok && mine[l.pack] {
			b.s.trees.put(h, t.enc, t.depth, l)
		}
	}
}

func (b *Batch) recalled(h tree.Hash) ([]byte, int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.trees[h]
	return t.enc, t.depth, ok
}

// append writes one record into the current pack, starting one if needed, and finishes the pack
// (outside the lock, so other workers keep going) once it reaches packTarget.
func (b *Batch) append(e idxEntry, write func(io.Writer) error) (int64, error) {
	b.mu.Lock()
	if err := b.usable(); err != nil {
		b.mu.Unlock()
		return 0, err
	}
	if _, dup := b.added[e.hash]; dup {
		b.mu.Unlock()
		return 0, nil // another worker stored the same content meanwhile
	}
	if b.cur == nil {
		pw, err := b.s.newPackWriter()
		if err != nil {
			b.err = err
			b.mu.Unlock()
			return 0, err
		}
		b.cur = pw
		b.packs = append(b.packs, pw)
	}
	pw := b.cur
	if err := pw.writeRecord(e, write); err != nil {
		b.err = err
		b.mu.Unlock()
		return 0, err
	}
	b.added[e.hash] = struct{}{}
	if b.relied != nil {
		b.relied[e.hash] = struct{}{}
	}
	var full *packWriter
	if pw.size >= packTarget {
		full, b.cur = pw, nil
	}
	b.mu.Unlock()
	if full != nil {
		if err := full.finish(); err != nil {
			b.mu.Lock()
			b.err = err
			b.mu.Unlock()
			return 0, err
		}
	}
	return e.comp, nil
}

func (b *Batch) usable() error {
	switch {
	case b.state == batchCommitted:
		return errors.New("object batch already committed")
	case b.state == batchAborted:
		return errors.New("object batch aborted")
	case b.err != nil:
		return fmt.Errorf("object batch failed earlier: %w", b.err)
	}
	if f := b.s.faulty.Load(); f != nil {
		return *f // a store with a damaged idx commits nothing until it is repaired
	}
	return nil
}

// putLarge streams a blob too big to hold in memory into a pack of its own. Its compressed size is
// only known at the end, so the record carries a padded uvarint that is patched in place.
func (b *Batch) putLarge(r io.Reader, h tree.Hash, size int64) (int64, error) {
	pw, err := b.s.newPackWriter()
	if err != nil {
		return 0, err
	}
	kept := false
	defer func() {
		if !kept {
			pw.discard()
		}
	}()
	hdr := appendRecordHeader(nil, BlobObject, h, size, 0)
	compAt := pw.size + int64(len(hdr)) - 1
	hdr = append(hdr[:len(hdr)-1], make([]byte, paddedVarintLen)...)
	if _, err := pw.w.Write(hdr); err != nil {
		return 0, pw.writeErr(err)
	}
	crcw := &crcWriter{w: pw.w}
	cw := &countWriter{w: crcw}
	enc, err := getStreamEncoder(cw, size)
	if err != nil {
		return 0, err
	}
	hasher := sha256.New()
	buf := getBuf(copyBuf)
	n, err := copyHashing(enc, io.LimitReader(r, size+1), hasher, *buf)
	putBuf(buf)
	if err == nil && n != size {
		err = fmt.Errorf("read %d bytes, want %d: %w", n, size, ErrContentChanged)
	}
	if err == nil {
		err = pw.writeErr(enc.Close())
	}
	putStreamEncoder(enc)
	if err != nil {
		return 0, fmt.Errorf("blob %s: %w", h, err)
	}
	if tree.Hash(hasher.Sum(nil)) != h {
		return 0, fmt.Errorf("blob %s: bytes read hash differently: %w", h, ErrContentChanged)
	}
	// The header's checksum covers the compressed size as it is patched in below.
	var patch [paddedVarintLen]byte
	putPaddedUvarint(patch[:], u64(cw.n))
	copy(hdr[len(hdr)-paddedVarintLen:], patch[:])
	var tb [recordTrailerLen]byte
	if _, err := pw.w.Write(appendTrailer(tb[:0], hdr, crcw.sum)); err != nil {
		return 0, pw.writeErr(err)
	}
	if err := pw.w.Flush(); err != nil {
		return 0, pw.writeErr(err)
	}
	if _, err := pw.f.WriteAt(patch[:], compAt); err != nil {
		return 0, pw.writeErr(err)
	}
	pw.entries = append(pw.entries, idxEntry{hash: h, kind: BlobObject, offset: int64(packHeaderLen), comp: cw.n, raw: size})
	pw.size += int64(len(hdr)) + cw.n + recordTrailerLen
	// Syncing here, in the worker, overlaps the flush of a big file with other workers' hashing.
	if err := pw.finish(); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.usable(); err != nil {
		return 0, err
	}
	if _, dup := b.added[h]; dup {
		return 0, nil
	}
	b.added[h] = struct{}{}
	if b.relied != nil {
		b.relied[h] = struct{}{}
	}
	b.packs = append(b.packs, pw)
	kept = true
	return cw.n, nil
}

// copyHashing copies r to w through buf, hashing what it reads; read errors are returned as such,
// so only a wrong length or hash counts as changed content.
func copyHashing(w io.Writer, r io.Reader, hasher hash.Hash, buf []byte) (int64, error) {
	var n int64
	for {
		m, rerr := r.Read(buf)
		if m > 0 {
			_, _ = hasher.Write(buf[:m]) // a hash.Hash never fails
			if _, err := w.Write(buf[:m]); err != nil {
				return n, fmt.Errorf("compress: %w", err)
			}
			n += int64(m)
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, fmt.Errorf("read: %w", rerr)
		}
	}
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Commit makes every object of the batch durable and then visible: each pack is fsync'd, its idx
// written and fsync'd, both renamed into packs/ (pack first, so a crash leaves at worst a pack
// whose idx Open rebuilds), and packs/ is fsync'd. An empty batch writes nothing.
func (b *Batch) Commit() error {
	return b.commit(false)
}

// commit with relocate set points the index at the new copies even for objects already indexed,
// which is what GC needs before it deletes the old packs.
func (b *Batch) commit(relocate bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == batchCommitted {
		return nil
	}
	if err := b.usable(); err != nil {
		return err
	}
	for _, pw := range b.packs {
		if err := pw.finish(); err != nil {
			b.err = err
			return err
		}
	}
	for _, pw := range b.packs {
		if err := pw.install(); err != nil {
			b.err = err
			return err
		}
	}
	if len(b.packs) > 0 {
		if err := b.s.be.Sync("packs"); err != nil {
			b.err = err
			return fmt.Errorf("commit objects: %w", err)
		}
	}
	b.s.register(b.packs, relocate)
	b.keepTrees()
	b.s.Rely(b.relied)
	b.state = batchCommitted
	b.cur, b.trees = nil, nil
	return nil
}

// Abort drops the batch and removes its temporary files. It is a no-op after Commit. Packs that a
// failed Commit already installed stay: they are complete, and GC collects what nothing references.
func (b *Batch) Abort() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state != batchOpen {
		return
	}
	b.state = batchAborted
	for _, pw := range b.packs {
		if !pw.installed {
			pw.discard()
		}
	}
	b.packs, b.cur, b.trees = nil, nil, nil
}

// register makes committed packs readable.
func (s *Store) register(pws []*packWriter, relocate bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pw := range pws {
		p := s.newPackFile(pw.id, pw.size)
		p.idxSize, p.version = pw.idxSize, packVersion
		s.packs[pw.id] = p
		delete(s.temps, pw.id)
		p.setDeltas(pw.entries)
		for _, e := range pw.entries {
			l := location{pack: p, offset: e.offset, comp: e.comp, raw: e.raw, kind: e.kind}
			// A fresh copy replaces one that is missing, cut short or known damaged: that is how a
			// checkpoint heals what it could not deduplicate onto.
			if old, dup := s.index.get(e.hash); dup && !relocate && !better(e.hash, old, l, s.damaged, s.condemned) {
				continue
			}
			s.index.set(e.hash, l)
		}
	}
}

// packWriter is one pack being written under tmp/.
type packWriter struct {
	s               *Store
	id              string
	tmpPack, tmpIdx string
	f               *os.File
	w               *bufio.Writer
	size            int64
	idxSize         int64
	entries         []idxEntry

	mu        sync.Mutex // serialises finish between a rollover and Commit
	finished  bool
	installed bool
}

func (s *Store) newPackWriter() (*packWriter, error) {
	id, err := newPackID()
	if err != nil {
		return nil, err
	}
	pw := &packWriter{
		s:       s,
		id:      id,
		tmpPack: filepath.Join(s.tmpDir, id+".pack"),
		tmpIdx:  filepath.Join(s.tmpDir, id+".idx"),
	}
	s.mu.Lock()
	s.temps[id] = struct{}{}
	s.mu.Unlock()
	// Read-only, owner-only: nothing may modify a pack once written (the open descriptor still can),
	// and it holds copies of files that may be private.
	pw.f, err = os.OpenFile(pw.tmpPack, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o400)
	if err != nil {
		s.dropTemp(id)
		return nil, fmt.Errorf("create pack: %w", err)
	}
	pw.w = bufio.NewWriterSize(pw.f, 1<<20)
	hdr := packHeader()
	if _, err := pw.w.Write(hdr); err != nil {
		pw.discard()
		return nil, pw.writeErr(err)
	}
	pw.size = int64(len(hdr))
	return pw, nil
}

func (s *Store) dropTemp(id string) {
	s.mu.Lock()
	delete(s.temps, id)
	s.mu.Unlock()
}

func (pw *packWriter) writeErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("write pack %s: %w", pw.tmpPack, err)
}

func (pw *packWriter) writeRecord(e idxEntry, write func(io.Writer) error) error {
	var hb [maxRecordHeader]byte
	hdr := appendRecordHeader(hb[:0], e.kind, e.hash, e.raw, e.comp)
	if _, err := pw.w.Write(hdr); err != nil {
		return pw.writeErr(err)
	}
	cw := &crcWriter{w: pw.w}
	if err := write(cw); err != nil {
		return pw.writeErr(err)
	}
	var tb [recordTrailerLen]byte
	if _, err := pw.w.Write(appendTrailer(tb[:0], hdr, cw.sum)); err != nil {
		return pw.writeErr(err)
	}
	e.offset = pw.size
	pw.entries = append(pw.entries, e)
	pw.size += int64(len(hdr)) + e.comp + recordTrailerLen
	return nil
}

// finish makes the pack durable and writes its idx (durable too) next to it in tmp/.
func (pw *packWriter) finish() error {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.finished {
		return nil
	}
	err := pw.w.Flush()
	if err == nil {
		err = pw.f.Sync()
	}
	if cerr := pw.f.Close(); err == nil {
		err = cerr
	}
	pw.f = nil
	if err != nil {
		return pw.writeErr(err)
	}
	idx := encodeIdx(sortEntries(append([]idxEntry(nil), pw.entries...)), packVersion)
	if err := fsx.CreateDurable(pw.tmpIdx, idx, 0o400); err != nil {
		return fmt.Errorf("write idx %s: %w", pw.tmpIdx, err)
	}
	pw.idxSize = int64(len(idx))
	pw.finished = true
	return nil
}

// install moves the finished pack and its idx into packs/. Commit calls it once per pack: a batch
// whose commit failed (installed or not) cannot commit again.
func (pw *packWriter) install() error {
	if err := pw.s.be.Install(pw.tmpPack, packName(pw.id)); err != nil {
		return fmt.Errorf("install pack: %w", err)
	}
	if err := pw.s.hit("store.pack-installed"); err != nil {
		return err
	}
	if err := pw.s.be.Install(pw.tmpIdx, idxName(pw.id)); err != nil {
		return fmt.Errorf("install idx: %w", err)
	}
	pw.installed = true
	return nil
}

func (pw *packWriter) discard() {
	pw.mu.Lock()
	if pw.f != nil {
		_ = pw.f.Close()
		pw.f = nil
	}
	pw.mu.Unlock()
	_ = os.Remove(pw.tmpPack)
	_ = os.Remove(pw.tmpIdx)
	pw.s.dropTemp(pw.id)
}
