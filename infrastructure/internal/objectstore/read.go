package objectstore

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// maxTreeSize bounds a tree read into memory; a listing of a million entries stays far below it.
const maxTreeSize = 256 << 20

// small says whether an object is read whole rather than streamed. The compressed size is bounded
// too because the read buffer is sized from it.
func (l location) small() bool { return l.raw <= wholeRead && l.comp <= 2*wholeRead }

func missing(h tree.Hash) error { return fault.Integrity("object %s is missing", h) }

// damaged reports that the stored record of h at l is bad: the error names that copy, so that
// noteDamage marks it (and no other: a delta whose base is damaged is itself intact).
func damaged(h tree.Hash, l location, format string, args ...any) error {
	return &recordDamage{h: h, l: l, err: fault.Integrity("object %s in pack %s: %s", h, l.pack.id, fmt.Sprintf(format, args...))}
}

// damagedBy is damaged with a cause: a decoder's complaint about the record's bytes.
func damagedBy(h tree.Hash, l location, cause error, format string, args ...any) error {
	return &recordDamage{h: h, l: l, err: fault.Wrap(fault.ErrIntegrity, cause, "object %s in pack %s: %s", h, l.pack.id, fmt.Sprintf(format, args...))}
}

// unreadable is the error of a read of h's record that failed: damage of the copy when the bytes
// could not be read from where they are kept (a local file's I/O error), but a store that does not
// answer, a download cut short or a refused request (see noVerdict) says nothing about them.
func unreadable(h tree.Hash, l location, err error, what string) error {
	if noVerdict(err) {
		return fmt.Errorf("object %s in pack %s: %s: %w", h, l.pack.id, what, err)
	}
	return damagedBy(h, l, err, "%s", what)
}

// recordDamage is a fault.ErrIntegrity error about one stored copy (pack and object).
type recordDamage struct {
	h   tree.Hash
	l   location
	err error
}

func (d *recordDamage) Error() string { return d.err.Error() }
func (d *recordDamage) Unwrap() error { return d.err }

// chainBroken reports that h's delta at l cannot be rebuilt for a reason outside its own record
// (a base missing, too large or itself damaged): an integrity error that marks no copy.
func chainBroken(h tree.Hash, l location, format string, args ...any) error {
	return fault.Integrity("object %s in pack %s: %s", h, l.pack.id, fmt.Sprintf(format, args...))
}

// readHeader reads and checks the record header of l and returns the offset of its data. b, when
// long enough, receives the header and as much of the data as fits (one pread for small objects).
func readHeader(f io.ReaderAt, h tree.Hash, l location, b []byte) (int64, int, error) {
	n, err := f.ReadAt(b, l.offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, unreadable(h, l, err, "read")
	}
	got, hl, perr := parseRecordHeader(b[:n])
	if perr != nil {
		return 0, n, damaged(h, l, "%v at offset %d", perr, l.offset)
	}
	if got.kind != l.kind || got.hash != h || got.raw != l.raw || got.comp != l.comp {
		return 0, n, damaged(h, l, "record header at offset %d does not match the idx", l.offset)
	}
	return l.offset + int64(hl), n, nil
}

// readStored checks h's record header and returns the record's data as stored (compressed), read
// with one pread into *buf, a pooled buffer the caller puts back.
func (s *Store) readStored(h tree.Hash, l location, buf *[]byte) ([]byte, error) {
	f, release, err := s.openPack(l.pack)
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", h, err)
	}
	defer release()
	if n := maxRecordHeader + int(l.comp); cap(*buf) < n {
		*buf = make([]byte, n)
	} else {
		*buf = (*buf)[:n]
	}
	dataAt, n, err := readHeader(f, h, l, *buf)
	if err != nil {
		return nil, err
	}
	start := int(dataAt - l.offset)
	if n < start+int(l.comp) {
		return nil, damaged(h, l, "record truncated (pack cut short)")
	}
	return (*buf)[start : start+int(l.comp)], nil
}

// readWhole reads and verifies an object in one go, through its delta chain if it has one.
func (s *Store) readWhole(h tree.Hash, l location) ([]byte, error) {
	if l.kind.delta() {
		b, _, err := s.readChain(h, l, nil)
		return b, err
	}
	return s.readPlain(h, l)
}

// readPlain reads, decompresses and verifies an object stored whole.
func (s *Store) readPlain(h tree.Hash, l location) ([]byte, error) {
	return s.readPlainHashed(h, l, true)
}

// readPlainHashed is readPlain, which checks the content's hash only when hashed (its size always).
func (s *Store) readPlainHashed(h tree.Hash, l location, hashed bool) ([]byte, error) {
	buf := getBuf(0)
	defer putBuf(buf)
	data, err := s.readStored(h, l, buf)
	if err != nil {
		return nil, err
	}
	c, err := sharedCodec()
	if err != nil {
		return nil, err
	}
	out, err := c.dec.DecodeAll(data, make([]byte, 0, l.raw+decodeSlack))
	if err != nil {
		return nil, damagedBy(h, l, err, "decompress")
	}
	if int64(len(out)) != l.raw || hashed && sha256.Sum256(out) != h {
		return nil, damaged(h, l, "content does not match its hash")
	}
	return out, nil
}

// OpenBlob returns a reader of h's content. Every byte is checked: damage is reported as a
// fault.ErrIntegrity error by OpenBlob or by Read (at the latest instead of io.EOF), so a caller
// must treat an error from either as damage and discard what it read.
func (s *Store) OpenBlob(h tree.Hash) (io.ReadCloser, error) {
	var rc io.ReadCloser
	err := s.retryGone(h, func(l location) error {
		if l.small() || l.kind.delta() {
			rc = &wholeReader{s: s, h: h}
			return nil
		}
		f, release, err := s.openPack(l.pack)
		if err != nil {
			return fmt.Errorf("object %s: %w", h, err)
		}
		var hb [maxRecordHeader]byte
		dataAt, _, err := readHeader(f, h, l, hb[:])
		if err == nil && s.localCopy(l.pack) {
			// The record's checksums, checked before a byte is handed out: damage of a local copy
			// found only at the end could not be undone (see streamReader.resume).
			err = checkStored(h, l, f)
		}
		if err != nil {
			release()
			return err
		}
		rc, err = s.newStreamReader(h, l, f, dataAt, release)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rc, nil
}

// wholeReader decodes a small object at the first Read; holding nothing until then keeps many
// open readers cheap.
type wholeReader struct {
	s    *Store
	h    tree.Hash
	data []byte
	read bool
	err  error
}

func (r *wholeReader) Read(p []byte) (int, error) {
	if !r.read {
		r.read = true
		r.err = r.s.retryGone(r.h, func(l location) error {
			var err error
			r.data, err = r.s.readWhole(r.h, l)
			return err
		})
	}
	if r.err != nil {
		return 0, r.err
	}
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func (r *wholeReader) Close() error {
	r.data, r.read, r.err = nil, true, errors.New("read of closed blob")
	return nil
}

// streamReader decompresses a large object as it is read, hashing the output; the verdict is
// given in place of io.EOF. Damage found in a local copy of a remote pack is not the object's: the
// reader drops the copy and goes on from the store's own bytes (see resume).
type streamReader struct {
	s       *Store
	h       tree.Hash
	l       location
	dec     *zstd.Decoder
	release func()
	trap    *readTrap
	sum     stateHash // of the n bytes handed out
	n       int64
	err     error
	resumed bool
}

// newStreamReader reads the record of h at l, whose data starts at dataAt of f; release is called
// on Close (and at once when this fails).
func (s *Store) newStreamReader(h tree.Hash, l location, f io.ReaderAt, dataAt int64, release func()) (*streamReader, error) {
	trap := &readTrap{r: f}
	dec, err := getStreamDecoder(bufio.NewReaderSize(io.NewSectionReader(trap, dataAt, l.comp), 256<<10))
	if err != nil {
		release()
		return nil, err
	}
	return &streamReader{s: s, h: h, l: l, dec: dec, release: release, trap: trap, sum: newSum()}, nil
}

// stateHash is a hash whose state can be kept and put back.
type stateHash interface {
	hash.Hash
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}

func newSum() stateHash {
	h, _ := sha256.New().(stateHash) // sha256's digest always is one
	return h
}

func (r *streamReader) Read(p []byte) (int, error) {
	for {
		if r.err != nil {
			return 0, r.err
		}
		if r.dec == nil {
			return 0, errors.New("read of closed blob")
		}
		n, err := r.dec.Read(p)
		verdict := r.judge(p[:n], err)
		if verdict == nil || errors.Is(verdict, io.EOF) {
			if verdict != nil {
				r.err = verdict
			}
			return n, verdict
		}
		if !r.resumed && r.s.refetchDamaged(verdict) {
			r.resumed = true
			if verdict = r.resume(); verdict == nil {
				continue
			}
		}
		r.s.noteDamage(verdict)
		r.err = verdict
		return 0, verdict // never hand out bytes of an object known to be damaged
	}
}

// judge decides on the bytes b just decoded and the decoder's err: nil hands them out, io.EOF
// hands them out as the last, and anything else is the read's error: a store that stopped
// answering, or damage of the record.
func (r *streamReader) judge(b []byte, err error) error {
	if cause := r.trap.failure(); cause != nil {
		return fmt.Errorf("object %s in pack %s: read: %w", r.h, r.l.pack.id, cause)
	}
	n := int64(len(b))
	switch {
	case r.n+n > r.l.raw:
		return damaged(r.h, r.l, "content longer than recorded")
	case err == nil:
	case errors.Is(err, io.EOF):
		// The hash of what was handed out is kept as it is in case the read goes on elsewhere.
		// (sha256's state marshals and unmarshals without fail, as its Write does).
		before, _ := r.sum.MarshalBinary()
		_, _ = r.sum.Write(b)
		if r.n+n != r.l.raw || tree.Hash(r.sum.Sum(nil)) != r.h {
			_ = r.sum.UnmarshalBinary(before)
			return damaged(r.h, r.l, "content does not match its hash")
		}
		r.n += n
		return io.EOF
	default:
		return damagedBy(r.h, r.l, err, "decompress")
	}
	_, _ = r.sum.Write(b)
	r.n += n
	return nil
}

// resume goes on from the store's own bytes after damage was found in a local copy (which
// refetch dropped): the pack is opened afresh and the bytes handed out so far are decoded again,
// and must hash the same, before reading goes on.
func (r *streamReader) resume() error {
	f, release, err := r.s.openPack(r.l.pack)
	if err != nil {
		return fmt.Errorf("object %s: %w", r.h, err)
	}
	var hb [maxRecordHeader]byte
	dataAt, _, err := readHeader(f, r.h, r.l, hb[:])
	if err != nil {
		release()
		return err
	}
	fresh, err := r.s.newStreamReader(r.h, r.l, f, dataAt, release)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(fresh.sum, fresh.dec, r.n); err != nil {
		err = fresh.judge(nil, err)
		_ = fresh.Close() // a streamReader's Close never fails
		return err
	}
	if !bytes.Equal(fresh.sum.Sum(nil), r.sum.Sum(nil)) {
		_ = fresh.Close()
		return fault.Integrity("object %s: the local copy of pack %s it was read from is damaged (dropped now: read it again)", r.h, r.l.pack.id)
	}
	_ = r.Close()
	r.dec, r.release, r.trap, r.sum = fresh.dec, fresh.release, fresh.trap, fresh.sum
	return nil
}

func (r *streamReader) Close() error {
	if r.dec != nil {
		putStreamDecoder(r.dec)
		r.dec = nil
		r.release()
	}
	return nil
}

// readTrap passes reads through and remembers a failure of the store to answer (see noVerdict),
// which a decoder reading through it may report as a malformed frame.
type readTrap struct {
	r   io.ReaderAt
	mu  sync.Mutex
	err error
}

func (t *readTrap) ReadAt(p []byte, off int64) (int, error) {
	n, err := t.r.ReadAt(p, off)
	if err != nil && noVerdict(err) {
		t.mu.Lock()
		t.err = err
		t.mu.Unlock()
	}
	return n, err
}

func (t *readTrap) failure() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// ReadTree reads and decodes tree h. The zero hash names the empty tree.
func (s *Store) ReadTree(h tree.Hash) (Tree, error) {
	return s.readTree(h, nil)
}

// readTree is ReadTree calling visit, if not nil, with every delta base read on the way.
func (s *Store) readTree(h tree.Hash, visit func(tree.Hash)) (Tree, error) {
	return s.treeFrom(h, func(l location) ([]byte, error) {
		if l.kind.delta() {
			b, _, err := s.readChain(h, l, visit)
			return b, err
		}
		return s.readPlain(h, l)
	})
}

// treeFrom decodes tree h, its content read by read from the record the index locates (again
// after a GC moved it); the zero hash names the empty tree.
func (s *Store) treeFrom(h tree.Hash, read func(l location) ([]byte, error)) (Tree, error) {
	if h.IsZero() {
		return nil, nil
	}
	var b []byte
	err := s.retryGone(h, func(l location) error {
		if l.raw > maxTreeSize || l.comp > maxTreeSize {
			return damaged(h, l, "too large for a tree (%d bytes)", l.raw)
		}
		var err error
		b, err = read(l)
		return err
	})
	if err != nil {
		return nil, err
	}
	t, err := DecodeTree(b)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	return t, nil
}

// CheckObject checks that h is present, that its pack holds the whole record and that the record
// header matches the idx (and, for a delta, that its base is present), and, without readData, that
// no earlier read found the copy damaged; with readData it decompresses and re-hashes the content,
// rebuilding a delta from its base chain.
func (s *Store) CheckObject(h tree.Hash, readData bool) error {
	return s.retryGone(h, func(l location) error { return s.checkObject(h, l, readData) })
}

func (s *Store) checkObject(h tree.Hash, l location, readData bool) error {
	f, release, err := s.openPack(l.pack)
	if err != nil {
		return fmt.Errorf("object %s: %w", h, err)
	}
	defer release()
	var hb [maxRecordHeader]byte
	dataAt, _, err := readHeader(f, h, l, hb[:])
	if err != nil {
		return err
	}
	if dataAt+l.comp > f.Size() {
		return damaged(h, l, "record truncated (pack cut short)")
	}
	if l.kind.delta() {
		base, err := s.deltaBase(h, l)
		if err != nil {
			return err
		}
		if !s.Has(base) {
			return chainBroken(h, l, "delta base %s is missing", base)
		}
		if err := s.checkChain(base); err != nil {
			return chainBroken(h, l, "delta base %s: %v", base, err)
		}
	}
	if !readData {
		// Not read here, but known: a copy an earlier read found damaged is not vouched for.
		s.mu.RLock()
		_, bad := s.damaged[damageKey{l.pack.id, h}]
		s.mu.RUnlock()
		if bad {
			return damaged(h, l, "found damaged by an earlier read (`plan verify --read-data` reads it again)")
		}
		return nil
	}
	if l.small() || l.kind.delta() {
		_, err := s.readWhole(h, l)
		return err
	}
	return s.streamCheck(h, l, f, dataAt)
}

// streamCheck decompresses and re-hashes a large record at l in bounded memory.
func (s *Store) streamCheck(h tree.Hash, l location, f io.ReaderAt, dataAt int64) error {
	r, err := s.newStreamReader(h, l, f, dataAt, func() {})
	if err != nil {
		return err
	}
	defer r.Close()
	buf := getBuf(copyBuf)
	defer putBuf(buf)
	_, err = io.CopyBuffer(io.Discard, r, *buf)
	return err
}

// checkChain checks, without decoding, that every base down a delta chain from h is indexed in a
// pack that is there and long enough to hold it.
func (s *Store) checkChain(h tree.Hash) error {
	for range maxDeltaChain {
		l, ok := s.lookup(h)
		if !ok {
			return s.missing(h)
		}
		if !intact(h, l, nil) {
			return damaged(h, l, "its pack is missing or cut short")
		}
		if !l.kind.delta() {
			return nil
		}
		base, err := s.cachedBase(h, l)
		if err != nil {
			return err
		}
		h = base
	}
	return fault.Integrity("delta chain longer than %d (a cycle?)", maxDeltaChain)
}
