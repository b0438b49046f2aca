package objectstore

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// Checkpoints store one record per object, compressed fast: that is the hot path, and it stays so.
// `plan gc --aggressive` packs what is live as compactly as git's `gc --aggressive` does, off the
// hot path (Repack):
//
//   - small whole blobs (up to bundleMember) are bundled, in the order git sorts objects for its
//     delta window (extension, file name, directory, size), so that versions and siblings of a file
//     sit side by side and compress against each other; a bundle holds at most bundleTarget bytes,
//     which bounds what a read of one of its blobs decodes;
//   - larger whole blobs are compared with the last repackWindow ones written whole before them in
//     that order (sampled, see similar.go) and stored as a delta against the most similar when the
//     delta pays (a copy, a rename, generated tables of several versions), else whole;
//   - everything stored whole (bundles included) is compressed at a strong level;
//   - deltas (trees and blobs) and blobs over largeBlob are copied as they are.
//
// Crash safety is GC's: the new packs are committed (pack and idx durable, the index pointing at
// the new copies) before the old packs go, all at once under one intent (retire): a repack killed
// at any step leaves every live object readable, from its old copy or its new one.

const (
	// repackWindow is how many of the previous blobs written whole a larger blob is compared with.
	repackWindow = 10
	// repackWindowBytes bounds the contents the window keeps in memory.
	repackWindowBytes = 32 << 20
)

// repackCodec compresses what a repack stores whole: paid once, off the hot path.
var repackCodec = sync.OnceValues(func() (*zstd.Encoder, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression),
		zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
	if err != nil {
		return nil, fmt.Errorf("zstd repack encoder: %w", err)
	}
	return enc, nil
})

// repackDict compresses a delta with dict as raw dictionary at the repack's level, with the
// smallest window of dictWindows that holds both (a reader's memory follows the frame's window).
// Its encoders serve one repack, which writes from one goroutine.
var repackDictLevel = zstd.SpeedBetterCompression

type repackDict struct {
	encs [len(dictWindows)]*zstd.Encoder
}

func (r *repackDict) encode(src, dict, dst []byte) ([]byte, error) {
	class := len(dictWindows) - 1
	for i, w := range dictWindows {
		if len(dict)+len(src) <= w {
			class = i
			break
		}
	}
	e := r.encs[class]
	if e == nil {
		var err error
		e, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(repackDictLevel), zstd.WithEncoderCRC(false),
			zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(dictWindows[class]))
		if err != nil {
			return dst, fmt.Errorf("zstd repack delta encoder: %w", err)
		}
		r.encs[class] = e
	}
	out := appendWriter{b: dst}
	if err := e.ResetWithOptions(&out, zstd.WithEncoderDictRaw(0, dict)); err != nil {
		return dst, fmt.Errorf("zstd repack delta encoder: %w", err)
	}
	_, err := e.Write(src)
	if err == nil {
		err = e.Close()
	}
	if err != nil {
		return dst, fmt.Errorf("zstd repack delta encoder: %w", err)
	}
	return out.b, nil
}

// RepackResult says what Repack did.
type RepackResult struct {
	Objects      int   // live objects written to the new packs
	Bundles      int   // bundles written
	Bundled      int   // blobs stored in a bundle
	Similar      int   // blobs stored as a delta against a similar blob
	PacksDeleted int   // old packs deleted
	BytesBefore  int64 // packs and idx files before
	BytesAfter   int64 // packs and idx files written
	// Kept says the new packs were no smaller than the old, so they were dropped and the old kept
	// (BytesAfter is what they would have taken; nothing was deleted).
	Kept bool
}

// repackItem is one live object a repack writes.
type repackItem struct {
	h    tree.Hash
	l    location
	path string
}

// Progress is told how far a repack is: the bytes of the live objects it has written of all
// (application.Progress is one).
type Progress interface {
	Start(label string, total int64)
	Add(n int64)
	Done()
}

// Repack rewrites every live object (live: what roots name, after GCFrom of the same set; roots in
// any order) into new packs, bundled and compressed as described above, and deletes every old pack
// when the new ones are smaller (else it drops them and keeps the old: a repack never grows the
// store).
// p, when not nil, is told how far it is. The caller must hold the workspace lock and have no batch open. A shared store is never
// repacked: its writers hold no lock in common with it, and deleting every pack at once is what
// its two-phase collection exists to avoid.
func (s *Store) Repack(live map[tree.Hash]struct{}, roots []tree.Hash, p Progress) (RepackResult, error) {
	var res RepackResult
	if s.shared {
		return res, errors.New("repack: a shared store is never repacked (its writers hold no lock in common with it)")
	}
	s.gcMu.Lock()
	defer s.gcMu.Unlock()
	if err := s.refreshChecked(); err != nil {
		return res, fmt.Errorf("repack (nothing was deleted): %w", err)
	}
	paths, err := s.blobPaths(roots)
	if err != nil {
		return res, fmt.Errorf("repack (nothing was deleted): %w", err)
	}
	items, old, err := s.repackSet(live, paths)
	if err != nil {
		return res, fmt.Errorf("repack (nothing was deleted): %w", err)
	}
	for _, p := range old {
		res.BytesBefore += p.size + p.idxSize
	}
	b := s.NewBatch()
	defer b.Abort()
	w := &repacker{s: s, b: b, res: &res}
	if p != nil {
		var total int64
		for _, it := range items {
			total += it.l.raw
		}
		p.Start("repacking", total)
		defer p.Done()
	}
	for _, it := range items {
		if err := w.put(it); err != nil {
			return res, fmt.Errorf("repack (nothing was deleted): %w", err)
		}
		if p != nil {
			p.Add(it.l.raw)
		}
	}
	if err := w.flush(); err != nil {
		return res, fmt.Errorf("repack (nothing was deleted): %w", err)
	}
	for _, pw := range b.packs {
		if err := pw.finish(); err != nil {
			return res, fmt.Errorf("repack (nothing was deleted): %w", err)
		}
		res.BytesAfter += pw.size + pw.idxSize
	}
	if res.BytesAfter >= res.BytesBefore {
		// Already as compact as this repack makes it (a second gc --aggressive, content that does
		// not compress): the new packs go and the old stay, so the store never grows.
		res.Kept = true
		return res, nil
	}
	if err := b.commit(true); err != nil {
		return res, fmt.Errorf("repack (nothing was deleted): %w", err)
	}
	if err := s.hit("gc.repacked"); err != nil {
		return res, err
	}
	if err := s.retire(old); err != nil {
		return res, fmt.Errorf("repack: %w", err)
	}
	res.PacksDeleted = len(old)
	return res, nil
}

// blobPaths returns a path at which roots hold each blob (the first met), reading each tree once.
func (s *Store) blobPaths(roots []tree.Hash) (map[tree.Hash]string, error) {
	paths := map[tree.Hash]string{}
	seen := map[tree.Hash]bool{}
	var walk func(prefix string, h tree.Hash) error
	walk = func(prefix string, h tree.Hash) error {
		if seen[h] {
			return nil
		}
		seen[h] = true
		t, err := s.ReadTree(h)
		if err != nil {
			return err
		}
		for _, e := range t {
			p := join(prefix, e.Name)
			switch e.Kind {
			case tree.KindDir:
				if err := walk(p, e.Hash); err != nil {
					return err
				}
			case tree.KindFile:
				if _, ok := paths[e.Hash]; !ok {
					paths[e.Hash] = p
				}
			}
		}
		return nil
	}
	for _, r := range roots {
		if r.IsZero() {
			continue
		}
		if err := walk("", r); err != nil {
			return nil, err
		}
	}
	return paths, nil
}

// repackSet returns what a repack writes, in the order it writes it, and the packs it replaces.
// That is every live object and the chain of every delta copied as it is; a bundled blob's old
// bundle is not needed (the blob is stored anew). Every object must be readable: a live object in
// a pack that is missing, or known damaged, fails the repack before anything is written.
func (s *Store) repackSet(live map[tree.Hash]struct{}, paths map[tree.Hash]string) ([]repackItem, []*packFile, error) {
	s.mu.RLock()
	old := make([]*packFile, 0, len(s.packs))
	for _, p := range s.packs {
		old = append(old, p)
	}
	s.mu.RUnlock()
	for _, p := range old {
		if p.size < 0 {
			return nil, nil, fault.Integrity("pack %s is missing: run `plan verify`", p.id)
		}
	}
	want := map[tree.Hash]repackItem{}
	add := func(h tree.Hash) error {
		for range maxDeltaChain {
			if _, ok := want[h]; ok {
				return nil
			}
			l, ok := s.lookup(h)
			if !ok {
				return s.missing(h)
			}
			s.mu.RLock()
			ok = intact(h, l, s.damaged)
			s.mu.RUnlock()
			if !ok {
				return fault.Integrity("object %s is damaged: run `plan verify --read-data --repair`", h)
			}
			want[h] = repackItem{h: h, l: l, path: paths[h]}
			if l.kind != TreeDeltaObject && l.kind != BlobDeltaObject {
				return nil
			}
			base, err := s.cachedBase(h, l)
			if err != nil {
				return err
			}
			h = base
		}
		return fault.Integrity("object %s: delta chain longer than %d", h, maxDeltaChain)
	}
	for h := range live {
		if _, ok := s.lookup(h); !ok {
			continue // not stored here (GC reports a missing live object)
		}
		if err := add(h); err != nil {
			return nil, nil, err
		}
	}
	items := make([]repackItem, 0, len(want))
	for _, it := range want {
		items = append(items, it)
	}
	// Records copied as they are first, in pack order; then the blobs stored anew, in the order
	// git sorts objects for its delta window.
	slices.SortFunc(items, func(a, b repackItem) int {
		ca, cb := a.l.kind.copied(a.l), b.l.kind.copied(b.l)
		switch {
		case ca && cb:
			if c := cmp.Compare(a.l.pack.id, b.l.pack.id); c != 0 {
				return c
			}
			return cmp.Compare(a.l.offset, b.l.offset)
		case ca != cb:
			if ca {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(path.Ext(a.path), path.Ext(b.path)); c != 0 {
			return c
		}
		if c := cmp.Compare(path.Base(a.path), path.Base(b.path)); c != 0 {
			return c
		}
		if c := cmp.Compare(path.Dir(a.path), path.Dir(b.path)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.l.raw, b.l.raw); c != 0 {
			return c
		}
		return bytes.Compare(a.h[:], b.h[:])
	})
	return items, old, nil
}

// copied says whether a repack copies a record of kind k (at l) as it is: trees, deltas, and
// blobs too large to hold in memory. The others (blobs whole or bundled) are stored anew.
func (k Kind) copied(l location) bool {
	return (k != BlobObject && k != BundledBlobObject) || l.raw > maxDeltaObject
}

// repacker writes a repack's objects into one batch.
type repacker struct {
	s   *Store
	b   *Batch
	res *RepackResult

	bundle     []bundled // small blobs waiting for the current bundle
	bundleSize int

	window      []windowed // the last blobs written whole, for similar-blob deltas
	windowBytes int

	dict repackDict
}

type bundled struct {
	h   tree.Hash
	raw []byte
}

type windowed struct {
	h   tree.Hash
	raw []byte
}

func (w *repacker) put(it repackItem) error {
	w.res.Objects++
	if it.l.kind == BlobDeltaObject && it.l.raw <= maxDeltaObject {
		return w.putDelta(it.h, it.l)
	}
	if it.l.kind.copied(it.l) {
		return w.s.copyRecord(w.b, it.h, it.l)
	}
	raw, _, err := w.s.readChain(it.h, it.l, nil)
	if err != nil {
		return err
	}
	if len(raw) <= bundleMember {
		if w.bundleSize+len(raw) > bundleTarget {
			if err := w.flush(); err != nil {
				return err
			}
		}
		w.bundle = append(w.bundle, bundled{h: it.h, raw: raw})
		w.bundleSize += len(raw)
		return nil
	}
	return w.putLarger(it.h, raw)
}

// putDelta stores a blob delta again against the same base, at the repack's level, when that is
// smaller than its record; else it copies the record.
func (w *repacker) putDelta(h tree.Hash, l location) error {
	base, depth, old, err := w.s.deltaRecord(h, l)
	var raw, baseRaw, d []byte
	if err == nil {
		raw, _, err = w.s.readChain(h, l, nil)
	}
	if err == nil {
		baseRaw, err = w.s.readContent(base)
	}
	if err == nil {
		d, err = w.dict.encode(raw, baseRaw, appendDeltaPrefix(nil, base, depth))
	}
	switch {
	case err != nil:
		return err
	case len(d) >= old:
		return w.s.copyRecord(w.b, h, l)
	}
	return w.write(idxEntry{hash: h, kind: BlobDeltaObject, raw: int64(len(raw)), base: base}, d)
}

// putLarger stores a blob above bundleMember: a delta against the most similar blob of the window
// when that pays, else whole.
func (w *repacker) putLarger(h tree.Hash, raw []byte) error {
	enc, err := repackCodec()
	if err != nil {
		return err
	}
	whole := enc.EncodeAll(raw, nil)
	var best []byte
	var base tree.Hash
	for i := len(w.window) - 1; i >= 0; i-- {
		c := w.window[i]
		if !worthDelta(raw, c.raw) {
			continue
		}
		d, err := w.dict.encode(raw, c.raw, appendDeltaPrefix(nil, c.h, 1))
		if err != nil {
			return err
		}
		if best == nil || len(d) < len(best) {
			best, base = d, c.h
		}
	}
	e := idxEntry{hash: h, kind: BlobObject, raw: int64(len(raw))}
	data := whole
	if best != nil && pays(BlobObject, len(best), len(whole)) {
		e.kind, e.base, data = BlobDeltaObject, base, best
		w.res.Similar++
	} else {
		w.remember(h, raw)
	}
	return w.write(e, data)
}

// remember adds a blob written whole to the window, dropping the oldest past its bounds.
func (w *repacker) remember(h tree.Hash, raw []byte) {
	w.window = append(w.window, windowed{h: h, raw: raw})
	w.windowBytes += len(raw)
	for len(w.window) > repackWindow || w.windowBytes > repackWindowBytes {
		w.windowBytes -= len(w.window[0].raw)
		w.window = w.window[1:]
	}
}

func (w *repacker) write(e idxEntry, data []byte) error {
	e.comp = int64(len(data))
	_, err := w.b.append(e, func(wr io.Writer) error {
		_, err := wr.Write(data)
		return err
	})
	return err
}

// flush writes the blobs waiting for a bundle: a lone one whole, more as a bundle (an ordinary blob,
// stored whole, before them) followed by a bundled record per blob.
func (w *repacker) flush() error {
	ms := w.bundle
	w.bundle, w.bundleSize = nil, 0
	if len(ms) == 0 {
		return nil
	}
	enc, err := repackCodec()
	if err != nil {
		return err
	}
	if len(ms) == 1 {
		return w.write(idxEntry{hash: ms[0].h, kind: BlobObject, raw: int64(len(ms[0].raw))}, enc.EncodeAll(ms[0].raw, nil))
	}
	var content []byte
	for _, m := range ms {
		content = append(content, m.raw...)
	}
	bh := tree.Hash(sha256.Sum256(content))
	if err := w.write(idxEntry{hash: bh, kind: BlobObject, raw: int64(len(content))}, enc.EncodeAll(content, nil)); err != nil {
		return err
	}
	w.res.Bundles++
	off := 0
	for _, m := range ms {
		data := appendBundleRef(appendDeltaPrefix(nil, bh, 1), off)
		if err := w.write(idxEntry{hash: m.h, kind: BundledBlobObject, raw: int64(len(m.raw)), base: bh}, data); err != nil {
			return err
		}
		off += len(m.raw)
		w.res.Bundled++
	}
	return nil
}

// deltaRecord returns the base and depth h's delta record (at l) names, and the record's size.
func (s *Store) deltaRecord(h tree.Hash, l location) (tree.Hash, int, int, error) {
	buf := getBuf(0)
	defer putBuf(buf)
	data, err := s.readStored(h, l, buf)
	var base tree.Hash
	var depth int
	if err == nil {
		if base, depth, _, err = parseDeltaPrefix(data); err != nil {
			err = damaged(h, l, "%v", err)
		}
	}
	return base, depth, len(data), err
}

// readContent reads the verified content of h, wherever the index has it.
func (s *Store) readContent(h tree.Hash) ([]byte, error) {
	l, ok := s.lookup(h)
	if !ok {
		return nil, s.missing(h)
	}
	b, _, err := s.readChain(h, l, nil)
	return b, err
}
