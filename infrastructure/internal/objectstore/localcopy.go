package objectstore

import (
	"bytes"
	"crypto/sha256"
	"errors"

	"github.com/planhq/plan/domain/fault"
)

// localCopies is the optional capability of a backend that keeps local copies of a remote store's
// files (the S3 adapter's cache). A local copy is not the store: damage found in one is local. A
// read that finds a record damaged in a local copy drops the copy and reads the store's own bytes
// again; only damage found in those is damage of the store, marked for every workspace.
type localCopies interface {
	// DropLocal removes the local copy of name and says whether there was one: the next Open or
	// ReadFile of name reads the store itself.
	DropLocal(name string) bool
}

// noVerdict says whether a read failed without looking at the stored bytes: the store did not
// answer (fault.ErrUnavailable: a download cut short, a connection reset) or refused the request
// (fault.ErrDenied). Such a failure is never damage.
func noVerdict(err error) bool {
	return errors.Is(err, fault.ErrUnavailable) || errors.Is(err, fault.ErrDenied)
}

// refetch drops the local copy of pack p, and this process's open handles of it, so that the pack
// is read again from the store itself. It reports whether there was a local copy to drop (and so
// whether a read is worth repeating); a pack is fetched afresh at most once per process.
func (s *Store) refetch(p *packFile) bool {
	lc, ok := s.be.(localCopies)
	if !ok {
		return false
	}
	s.mu.Lock()
	if s.fresh[p.id] {
		s.mu.Unlock()
		return false
	}
	s.fresh[p.id] = true
	current := s.packs[p.id]
	s.mu.Unlock()
	// The copy goes first: a reader opening the pack meanwhile gets the store's bytes, and a
	// handle of the copy opened before is dropped below (openPack sets handles under q.mu).
	lc.DropLocal(idxName(p.id)) // read afresh too by the next load or scan
	had := lc.DropLocal(packName(p.id))
	for _, q := range []*packFile{p, current} {
		if q == nil {
			continue
		}
		q.mu.Lock()
		f := q.f
		q.f = nil
		q.mu.Unlock()
		if f != nil {
			// Other readers may hold the handle still: it is closed with the store.
			s.cachedFDs.Add(-1)
			s.mu.Lock()
			s.stale = append(s.stale, f)
			s.mu.Unlock()
		}
	}
	return had
}

// localCopy says whether pack p may be read from a local copy: the backend keeps some, and p was
// not fetched afresh from the store in this process.
func (s *Store) localCopy(p *packFile) bool {
	if _, ok := s.be.(localCopies); !ok {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return !s.fresh[p.id]
}

// refetchDamaged is refetch of the pack holding the copy err names as damaged, if any.
func (s *Store) refetchDamaged(err error) bool {
	var d *recordDamage
	if !errors.As(err, &d) || errors.Is(err, errPackGone) || noVerdict(err) {
		return false
	}
	return s.refetch(d.l.pack)
}

// readIdxBytes reads pack id's idx. A local copy whose checksum does not hold is dropped and the
// store's own idx read instead: only that one can be corrupt.
func (s *Store) readIdxBytes(id string) ([]byte, error) {
	b, _, err := s.readIdx(id)
	return b, err
}

// readIdx is readIdxBytes that also says whether the bytes' checksum was verified on the way (a
// local copy's is, to decide whether to read the store's own bytes), so that load does not hash
// the same idx a second time.
func (s *Store) readIdx(id string) (b []byte, sumOK bool, err error) {
	b, err = s.be.ReadFile(idxName(id))
	lc, ok := s.be.(localCopies)
	if !ok || err != nil {
		return b, false, err
	}
	if idxSumOK(b) {
		return b, true, nil
	}
	if lc.DropLocal(idxName(id)) {
		b, err = s.be.ReadFile(idxName(id))
	}
	return b, false, err
}

// idxSumOK says whether an idx file's trailing SHA-256 matches the bytes before it.
func idxSumOK(b []byte) bool {
	if len(b) < sha256.Size {
		return false
	}
	body := b[:len(b)-sha256.Size]
	sum := idxHash(body)
	return bytes.Equal(sum[:], b[len(body):])
}

// idxHash is the idx checksum's hash; tests count its calls through it.
var idxHash = sha256.Sum256

// ReadStoreBytes makes every later read of this process check the store's own bytes: each pack
// read from now on is fetched afresh from the store once, whatever copy the backend keeps
// locally (`verify --read-data` of a shared store reads the bucket, not the cache). A store
// without local copies reads its own files anyway.
func (s *Store) ReadStoreBytes() {
	s.storeBytes.Store(true)
}

// ChecksLocalCopies says whether the backend keeps local copies of the store's files, which
// ReadStoreBytes bypasses.
func (s *Store) ChecksLocalCopies() bool {
	_, ok := s.be.(localCopies)
	return ok
}
