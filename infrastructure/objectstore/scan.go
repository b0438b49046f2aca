package objectstore

import (
	"fmt"
	"io"
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
// walk, so that a flipped byte anywhere in the store is reported. It only reads.
func (s *Store) ScanPacks() ([]PackProblem, error) {
	s.mu.RLock()
	packs := make([]*packFile, 0, len(s.packs))
	for _, p := range s.packs {
		packs = append(packs, p)
	}
	s.mu.RUnlock()
	sort.Slice(packs, func(i, j int) bool { return packs[i].id < packs[j].id })
	var out []PackProblem
	for _, p := range packs {
		for _, problem := range s.scanPackFile(p) {
			out = append(out, PackProblem{Pack: p.id, Problem: problem})
		}
	}
	return out, nil
}

func (s *Store) scanPackFile(p *packFile) []string {
	f, err := s.be.Open(packName(p.id))
	if err != nil {
		return []string{fmt.Sprintf("cannot read the pack: %v", err)}
	}
	defer func() { _ = f.Close() }()
	size := f.Size()
	entries, version, err := scanRecords(io.NewSectionReader(f, 0, size), size)
	if err != nil {
		return []string{fmt.Sprintf("pack structure is damaged: %v", err)}
	}
	var problems []string
	if b, err := s.be.ReadFile(idxName(p.id)); err != nil {
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
		if err := s.checkRecord(e.hash, l, f); err != nil {
			l.pack = p
			s.noteDamage(e.hash, l, err)
			problems = append(problems, fmt.Sprintf("record at offset %d: %v", e.offset, err))
		}
	}
	return problems
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
	if n, err := io.CopyBuffer(cw, io.NewSectionReader(f, dataAt, l.comp), *buf); err != nil || n != l.comp {
		return damaged(h, l, "record truncated (pack cut short)")
	}
	var tb [recordTrailerLen]byte
	n, _ := f.ReadAt(tb[:], dataAt+l.comp)
	if err := checkTrailer(tb[:n], header, cw.sum); err != nil {
		return damaged(h, l, "%v", err)
	}
	return nil
}
