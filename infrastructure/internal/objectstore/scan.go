package objectstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sort"

	"github.com/planhq/plan/domain/tree"
)

// PackProblem is damage ScanPacks found in one pack.
type PackProblem struct {
	Pack    string
	Problem string
}

// ScanPacks reads every pack end to end: its header, every record in sequence (also records the
// index does not point at, such as a second copy of an object or a delta shadowed by a whole
// copy), each record's content decompressed and hashed at its own location, and the records
// compared with the pack's idx file. It is what `verify --read-data` adds to the per-checkpoint
// walk, so that a flipped byte anywhere in the store is reported. It reads the store's own bytes
// (see ReadStoreBytes), and changes nothing but the damage list: damage it finds is marked, and a
// mark on a copy it reads intact is cleared. A damaged record of a condemned pack whose object has
// an intact copy elsewhere is retired damage, waiting for the sweep: it is not reported. A store
// that does not answer, or refuses a read, fails the scan (see noVerdict): nothing is reported or
// marked.
func (s *Store) ScanPacks() ([]PackProblem, error) {
	if err := s.CheckIndex(); err != nil { // loads it first
		return nil, err
	}
	s.ReadStoreBytes()
	s.mu.RLock()
	packs := make([]*packFile, 0, len(s.packs))
	for _, p := range s.packs {
		packs = append(packs, p)
	}
	s.mu.RUnlock()
	sort.Slice(packs, func(i, j int) bool { return packs[i].id < packs[j].id })
	var out []PackProblem
	for _, p := range packs {
		problems, err := s.scanPack(p)
		if err != nil {
			return nil, err
		}
		for _, problem := range problems {
			out = append(out, PackProblem{Pack: p.id, Problem: problem})
		}
	}
	return out, nil
}

// scanPack is scanPackFile of the store's own bytes (a local copy is dropped first), whose
// verdicts then update the damage list.
func (s *Store) scanPack(p *packFile) ([]string, error) {
	s.refetch(p)
	problems, bad, good, err := s.scanPackFile(p)
	if err != nil {
		return nil, err
	}
	for _, e := range bad {
		s.noteDamage(e)
	}
	if err := s.forgetIntact(good); err != nil {
		return nil, err
	}
	return problems, nil
}

// scanPackFile reads pack p once: the problems it has, the damage errors of its records (to be
// marked), and its records found intact.
func (s *Store) scanPackFile(p *packFile) (problems []string, bad []error, good []damageKey, err error) {
	f, err := s.be.Open(packName(p.id))
	if err != nil {
		if noVerdict(err) {
			return nil, nil, nil, err
		}
		if errors.Is(err, fs.ErrNotExist) && s.retiredMissing(p) {
			return nil, nil, nil, nil
		}
		return []string{fmt.Sprintf("cannot read the pack: %v", err)}, nil, nil, nil
	}
	defer func() { _ = f.Close() }()
	size := f.Size()
	trap := &readTrap{r: f}
	entries, version, err := scanRecords(io.NewSectionReader(trap, 0, size), size)
	if cause := trap.failure(); cause != nil {
		return nil, nil, nil, fmt.Errorf("read pack %s: %w", p.id, cause)
	}
	if err != nil {
		return []string{fmt.Sprintf("pack structure is damaged: %v", err)}, nil, nil, nil
	}
	if b, err := s.be.ReadFile(idxName(p.id)); noVerdict(err) {
		return nil, nil, nil, err
	} else if err != nil {
		problems = append(problems, fmt.Sprintf("cannot read the idx: %v", err))
	} else if idx, idxVersion, err := decodeIdx(b); err != nil {
		problems = append(problems, fmt.Sprintf("idx is damaged: %v", err))
	} else if !sameRecords(idx, entries) || idxVersion != version {
		problems = append(problems, "idx does not describe the pack's records")
	}
	// The records are checked as the pack says it is written, whatever the idx claims.
	scanned := &packFile{id: p.id, path: p.path, size: size, version: version}
	for _, e := range entries {
		l := location{pack: scanned, offset: e.offset, comp: e.comp, raw: e.raw, kind: e.kind}
		err := s.checkRecord(e.hash, l, trap)
		switch {
		case err == nil:
			good = append(good, damageKey{p.id, e.hash})
			continue
		case noVerdict(err):
			return nil, nil, nil, err
		case s.retiredDamage(p, e.hash) || s.supersededChain(p, e, err):
			continue
		}
		bad = append(bad, err)
		problems = append(problems, fmt.Sprintf("record at offset %d: %v", e.offset, err))
	}
	// A pack may hold two copies of an object: a mark is cleared only when none is damaged.
	good = slices.DeleteFunc(good, func(k damageKey) bool {
		return slices.ContainsFunc(bad, func(err error) bool {
			var d *recordDamage
			return errors.As(err, &d) && d.h == k.hash && d.l.pack.id == k.pack
		})
	})
	return problems, bad, good, nil
}

// supersededChain says whether err, met reading record e of pack p, is harmless: its own bytes are
// intact (the fault lies down its delta chain, in another record, reported where it is) and the
// object has a copy the index prefers that can be read: a heal stored one afresh.
func (s *Store) supersededChain(p *packFile, e idxEntry, err error) bool {
	var d *recordDamage
	if !e.kind.delta() || errors.As(err, &d) && d.h == e.hash && d.l.offset == e.offset {
		return false
	}
	l, ok := s.lookup(e.hash)
	return ok && (l.pack.id != p.id || l.offset != e.offset) && s.Present(e.hash)
}

// retiredMissing says whether missing pack p is retired already: a heal condemned it (a sweep
// removes its idx), and every object its idx lists has an intact copy elsewhere.
func (s *Store) retiredMissing(p *packFile) bool {
	entries, _, err := s.readIdxFile(p.id)
	retired := err == nil && len(entries) > 0
	for _, e := range entries {
		retired = retired && s.retiredDamage(p, e.hash)
	}
	return retired
}

// retiredDamage says whether a damaged record of h in pack p is harmless already: p is condemned
// (a heal or a gc retired it: a sweep deletes it) and the index has an intact copy of h elsewhere.
func (s *Store) retiredDamage(p *packFile, h tree.Hash) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.condemned[p.id] {
		return false
	}
	l, ok := s.index.get(h)
	return ok && l.pack.id != p.id && intact(h, l, s.damaged) && !s.condemned[l.pack.id] ||
		s.spentBundles()[h] // a bundle nothing is read from any more goes with its pack
}

// checkRecord decodes and re-hashes one record in memory bounded by the read buffers: small
// objects and deltas are read whole (a tree is bounded by maxTreeSize), large blobs streamed.
func (s *Store) checkRecord(h tree.Hash, l location, f io.ReaderAt) error {
	if err := checkStored(h, l, f); err != nil {
		return err
	}
	if l.small() || l.kind.delta() {
		_, err := s.readWhole(h, l)
		return err
	}
	var hb [maxRecordHeader]byte
	dataAt, _, err := readHeader(f, h, l, hb[:])
	if err != nil {
		return err
	}
	return s.streamCheck(h, l, f, dataAt)
}

// sameRecords reports whether an idx describes the records scanned from its pack: every idx entry
// is one of the records, and every record's object is in the idx (a pack may hold two copies of an
// object; its idx names one). A delta base the idx names must be the one its record names.
func sameRecords(idx, scanned []idxEntry) bool {
	type rec struct {
		kind              Kind
		offset, comp, raw int64
		base              tree.Hash
	}
	byHash := map[[32]byte][]rec{}
	for _, e := range scanned {
		byHash[e.hash] = append(byHash[e.hash], rec{e.kind, e.offset, e.comp, e.raw, e.base})
	}
	if len(byHash) != len(idx) {
		return false
	}
	for _, e := range idx {
		if !slices.ContainsFunc(byHash[e.hash], func(r rec) bool {
			return r.kind == e.kind && r.offset == e.offset && r.comp == e.comp && r.raw == e.raw &&
				(e.base.IsZero() || e.base == r.base)
		}) {
			return false
		}
	}
	return true
}

// checkStored compares a version 2 record's stored bytes, header and data, with its trailer. It
// reads the data in chunks, so memory stays bounded whatever the record's size.
func checkStored(h tree.Hash, l location, f io.ReaderAt) error {
	if trailerLen(l.pack.version) == 0 {
		return nil
	}
	var hb [maxRecordHeader]byte
	dataAt, _, err := readHeader(f, h, l, hb[:])
	if err != nil {
		return err
	}
	header := hb[:dataAt-l.offset]
	cw := &crcWriter{w: io.Discard}
	buf := getBuf(copyBuf)
	defer putBuf(buf)
	if n, err := io.CopyBuffer(cw, io.NewSectionReader(f, dataAt, l.comp), *buf); noVerdict(err) {
		return unreadable(h, l, err, "read")
	} else if err != nil || n != l.comp {
		return damaged(h, l, "record truncated (pack cut short)")
	}
	var tb [recordTrailerLen]byte
	n, err := f.ReadAt(tb[:], dataAt+l.comp)
	if noVerdict(err) {
		return unreadable(h, l, err, "read")
	}
	if err := checkTrailer(tb[:n], header, cw.sum); err != nil {
		return damaged(h, l, "%v", err)
	}
	return nil
}
