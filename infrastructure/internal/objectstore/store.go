package objectstore

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/fsx"
)

// maxCachedFDs bounds the pack files kept open between reads; past it a read opens and closes its
// own descriptor, so a store with thousands of packs cannot exhaust the process's file limit.
const maxCachedFDs = 256

// Store is an open object store. Its methods are safe for concurrent use.
type Store struct {
	// Failpoint, when set, is called at each step of a commit and a GC where a crash matters;
	// crash tests arm it (see package failpoint). Set it before the store is used.
	Failpoint func(name string) error

	// be is where the store's files are; dir is the local work directory (the store itself for a
	// Dir backend, the cache of a remote one) and tmpDir, under it, where packs are written.
	be                    Backend
	dir, packsDir, tmpDir string
	shared                bool

	mu      sync.RWMutex
	index   *objIndex
	packs   map[string]*packFile
	retired []*packFile         // dropped by GC; kept open until Close for readers still using them
	temps   map[string]struct{} // pack ids being written by this process, spared by CleanTemp

	damaged map[damageKey]struct{} // guarded by mu: copies known to be damaged (see markDamaged)

	gcMu sync.Mutex // one GC at a time

	baseMu    sync.Mutex
	bases     map[recordKey]tree.Hash // guarded by baseMu: bases read from delta records (see recordBase)
	markCache map[string]mark         // guarded by baseMu: the gc marks read (immutable)

	// Shared stores only, guarded by mu: the packs the current gc marks condemn (see marks.go),
	// and the marks themselves.
	condemned map[string]bool
	marks     []mark
	// relied, guarded by reliedMu, is what this process's transactions have come to reference
	// since the last Confirm: every object its batches deduplicated onto or stored.
	reliedMu sync.Mutex
	relied   map[tree.Hash]struct{}

	// fresh, guarded by mu, names the packs read again from the store itself in this process after
	// their local copy was dropped (see refetch); stale holds the handles of the dropped copies,
	// which readers may still use, until Close. storeBytes says every pack is to be read so.
	fresh      map[string]bool
	stale      []File
	storeBytes atomic.Bool

	trees treeCache // trees this process stored or decoded, kept as delta bases (see treeCache)
	trust trustMemo // objects found trusted since the view last lost anything (see trustMemo)
	// faulty is the fault of an idx the index keeps that a check found damaged (idxTable): the
	// store vouches for nothing and commits nothing while it holds one (Load).
	faulty atomic.Pointer[error]
	// bundles keeps the bundles read last, for the reads of their blobs (see readBase).
	bundles bundleCache

	cachedFDs atomic.Int32
	closed    atomic.Bool

	// unloaded says the index has not been read yet (OpenBackendLazy): the first use reads it
	// (Load), under loadMu, so a command that never reads an object never pays for it.
	unloaded atomic.Bool
	loadMu   sync.Mutex
}

// location is where the index found an object.
type location struct {
	pack   *packFile
	offset int64
	comp   int64
	raw    int64
	kind   Kind
}

func (l location) entry(h tree.Hash) idxEntry {
	return idxEntry{hash: h, kind: l.kind, offset: l.offset, comp: l.comp, raw: l.raw}
}

// packFile is one installed pack. size is -1 when the pack was missing at Open (its idx survived).
// path locates it for messages (and, for a Dir store, is the file).
type packFile struct {
	id      string
	path    string
	size    int64
	idxSize int64
	idxFile fileStamp // the idx file as listed when it was read (zero for one this process wrote)
	version uint32    // the pack format: 1 (no record trailers) or packVersion

	// deltas lists the pack's delta records, sorted by hash, whether or not the index points at
	// them: GC must know every delta that outlives it, to keep its base, and Present follows the
	// bases a version 3 idx names without reading the records. A pack loaded from its idx has
	// table instead, and makes the list from it on first use (deltaRecs): a lookup searches the
	// table.
	deltas     []deltaRec
	table      *idxTable
	deltasOnce sync.Once

	mu sync.Mutex
	f  File
}

func packName(id string) string { return "packs/" + id + ".pack" }
func idxName(id string) string  { return "packs/" + id + ".idx" }

func (s *Store) newPackFile(id string, size int64) *packFile {
	return &packFile{id: id, path: s.be.Location(packName(id)), size: size}
}

// deltaRec is one delta record of a pack. base is what the idx (version 3) or this process's writer
// says, immutable once the pack is registered; zero when unknown (an older idx), in which case
// recordBase reads it from the record.
type deltaRec struct {
	hash              tree.Hash
	offset, comp, raw int64
	kind              Kind
	base              tree.Hash
}

func (d *deltaRec) location(p *packFile) location {
	return location{pack: p, offset: d.offset, comp: d.comp, raw: d.raw, kind: d.kind}
}

func (p *packFile) setDeltas(entries []idxEntry) {
	n := 0
	for _, e := range entries {
		if e.kind.delta() {
			n++
		}
	}
	p.deltas = make([]deltaRec, 0, n)
	for _, e := range entries {
		if e.kind.delta() {
			p.deltas = append(p.deltas, deltaRec{hash: e.hash, offset: e.offset, comp: e.comp, raw: e.raw, kind: e.kind, base: e.base})
		}
	}
	slices.SortFunc(p.deltas, func(a, b deltaRec) int { return bytes.Compare(a.hash[:], b.hash[:]) })
}

// recordKey names one record: its pack and offset.
type recordKey struct {
	pack   *packFile
	offset int64
}

// deltaRecs lists the pack's delta records, sorted by hash (see packFile.deltas).
func (p *packFile) deltaRecs() []deltaRec {
	if p.table != nil {
		p.deltasOnce.Do(func() { p.deltas = p.table.deltaRecs() })
	}
	return p.deltas
}

// delta returns the pack's delta record for h, or nil.
func (p *packFile) delta(h tree.Hash) *deltaRec {
	if p.table != nil {
		return p.table.delta(h)
	}
	i, ok := slices.BinarySearchFunc(p.deltas, h, func(d deltaRec, h tree.Hash) int { return bytes.Compare(d.hash[:], h[:]) })
	if !ok {
		return nil
	}
	return &p.deltas[i]
}

// preferred says whether a copy of an object of kind other replaces an indexed copy of kind have: a
// whole copy is preferred to a delta, which depends on other objects.
func preferred(have, other Kind) bool { return have.delta() && !other.delta() }

// ObjectInfo describes a stored object. StoredSize is its compressed size (for a delta, the size of
// the delta); Pack is the pack id. An object stored as a delta has the Kind of what it rebuilds to
// (TreeObject or BlobObject) and Delta set.
type ObjectInfo struct {
	Kind       Kind
	RawSize    int64
	StoredSize int64
	Pack       string
	Delta      bool
}

// StoreStats sums up a store. StoredBytes is the size of the pack files on disk; RawBytes the
// uncompressed size of the indexed objects.
type StoreStats struct {
	Packs, Objects        int
	StoredBytes, RawBytes int64
}

// Open opens (creating if needed) the private store in the local directory dir and loads every
// idx. A pack whose idx is missing is indexed from its records in memory (Refresh, under the lock,
// writes the idx); a corrupt idx is a fault.ErrIntegrity error naming the file. Open does not need
// the workspace lock: what it loads may be stale by the time the lock is taken, which is why every
// command that holds the lock calls Refresh first.
func Open(dir string) (*Store, error) {
	return OpenBackend(NewDir(dir, false), dir)
}

// OpenBackend opens the store be holds, with work as its local work directory (where packs are
// written before they are installed). A Dir backend's work directory is always its root, since its
// packs are installed by renaming them out of tmp/. Shared stores are used without any lock in
// common with other workspaces (docs/design.md#objectstore-shared-stores).
func OpenBackend(be Backend, work string) (*Store, error) {
	s, err := openBackend(be, work)
	if err != nil {
		return nil, err
	}
	pl, err := s.listPacks()
	if err != nil {
		return nil, err
	}
	if err := s.load(pl, false); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenBackendLazy is OpenBackend that reads no idx until the index is first needed: by Refresh
// (under the workspace lock, as every command that writes calls it), by Load, or by any method
// that reads or looks up an object, each of which loads it as OpenBackend would have. A command
// that reads the database only (checkpoint list, status, log, history) then never lists the
// packs nor reads their idx files: with a pack per checkpoint, that was most of its fixed cost.
// A damaged idx is reported by the first method that returns an error; the methods that return
// none (Has, Present, Info, Stats, Untrusted) see an empty index until it loads, which never
// makes a writer trust a copy it has not seen (it stores a fresh one), and their callers that
// need the verdict call Load first.
func OpenBackendLazy(be Backend, work string) (*Store, error) {
	s, err := openBackend(be, work)
	if err != nil {
		return nil, err
	}
	s.unloaded.Store(true)
	return s, nil
}

// Load reads the index if it has not been read yet (see OpenBackendLazy), as OpenBackend reads it:
// without the workspace lock's privileges. A failure is returned, and the next use tries again.
func (s *Store) Load() error {
	if f := s.faulty.Load(); f != nil {
		return *f
	}
	if !s.unloaded.Load() {
		return nil
	}
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if !s.unloaded.Load() {
		return nil
	}
	pl, err := s.listPacks()
	if err == nil {
		err = s.load(pl, false)
	}
	if err != nil {
		return err
	}
	s.unloaded.Store(false)
	return nil
}

func openBackend(be Backend, work string) (*Store, error) {
	if root, ok := be.LocalRoot(); ok {
		work = root
	}
	s := &Store{
		be:        be,
		shared:    be.Shared(),
		dir:       work,
		packsDir:  filepath.Join(work, "packs"),
		tmpDir:    filepath.Join(work, "tmp"),
		index:     newObjIndex(0),
		packs:     make(map[string]*packFile),
		temps:     make(map[string]struct{}),
		damaged:   make(map[damageKey]struct{}),
		bases:     make(map[recordKey]tree.Hash),
		fresh:     map[string]bool{},
		markCache: make(map[string]mark),
		condemned: make(map[string]bool),
		relied:    make(map[tree.Hash]struct{}),
	}
	if err := s.makeDirs(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Store) makeDirs() error {
	_, statErr := os.Stat(s.packsDir)
	for _, d := range []string{s.packsDir, s.tmpDir} {
		// Private: packs hold copies of every workspace file, including the owner-only ones.
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create object store: %w", err)
		}
	}
	if d, ok := s.be.(*Dir); ok && s.shared {
		// A shared directory keeps its gc marks and damage markers as files of their own.
		for _, sub := range []string{marksDir, damagedDir} {
			if err := os.MkdirAll(filepath.Join(d.Root(), sub), 0o700); err != nil {
				return fmt.Errorf("create object store: %w", err)
			}
		}
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		// A fresh store: its directories must be durable before any pack inside them can be.
		for _, d := range []string{s.dir, filepath.Dir(s.dir)} {
			if err := fsx.SyncDir(d); err != nil {
				return fmt.Errorf("create object store: %w", err)
			}
		}
	}
	return nil
}

// Backend is where the store's files are.
func (s *Store) Backend() Backend { return s.be }

// Shared says the store is shared by several workspaces (see Backend.Shared).
func (s *Store) Shared() bool { return s.shared }

// rebuildIdx re-indexes a pack left without its idx (a crash between the two installs of a
// commit, or a deleted idx) and writes the idx durably. The caller holds the workspace lock.
func (s *Store) rebuildIdx(p *packFile) ([]idxEntry, error) {
	entries, err := s.scanEntries(p)
	if err != nil {
		return nil, err
	}
	idx := encodeIdx(entries, p.version)
	if err := s.be.WriteFile(idxName(p.id), idx, 0o400); err != nil {
		return nil, fmt.Errorf("rebuild idx of pack %s: %w", p.path, err)
	}
	p.idxSize = int64(len(idx))
	return entries, nil
}

// Close releases the open pack files. Readers still open fail afterwards.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, p := range append(slices.Collect(maps.Values(s.packs)), s.retired...) {
		p.mu.Lock()
		if p.f != nil {
			errs = append(errs, p.f.Close())
			p.f = nil
		}
		p.mu.Unlock()
	}
	s.retired = nil
	for _, f := range s.stale {
		errs = append(errs, f.Close())
	}
	s.stale = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close object store: %w", err)
	}
	return nil
}

// Has reports whether the store holds h (committed objects only).
func (s *Store) Has(h tree.Hash) bool {
	_ = s.Load() // an index that cannot be read holds nothing (see OpenBackendLazy)
	s.mu.RLock()
	ok := s.index.has(h)
	s.mu.RUnlock()
	return ok
}

// noteFault makes the store faulty with the fault of a damaged idx (see faulty), and forgets what
// it vouched for.
func (s *Store) noteFault(err error) {
	if s.faulty.CompareAndSwap(nil, &err) {
		s.trust.forget()
	}
}

// CheckIndex loads the index if it was not yet, checks every idx it keeps (idxTable.check), and
// returns the first fault: what deletes or rewrites packs weighs every object of the store, and
// what reports on the store reports a damaged idx, so both check every idx whole first.
func (s *Store) CheckIndex() error {
	if err := s.Load(); err != nil {
		return err
	}
	s.mu.RLock()
	x := s.index
	s.mu.RUnlock()
	return x.check()
}

// refreshChecked is Refresh, then CheckIndex.
func (s *Store) refreshChecked() error {
	if err := s.Refresh(); err != nil {
		return err
	}
	return s.CheckIndex()
}

// missing is the error of an object the index does not hold: the fault of a damaged idx, when
// one is (a damaged idx can hide an object), else that the object is missing.
func (s *Store) missing(h tree.Hash) error {
	if err := s.CheckIndex(); err != nil {
		return err
	}
	return missing(h)
}

func (s *Store) lookup(h tree.Hash) (location, bool) {
	_ = s.Load() // an index that cannot be read holds nothing (see OpenBackendLazy)
	s.mu.RLock()
	l, ok := s.index.get(h)
	s.mu.RUnlock()
	return l, ok
}

// Info describes h without reading it.
func (s *Store) Info(h tree.Hash) (ObjectInfo, bool) {
	l, ok := s.lookup(h)
	if !ok {
		return ObjectInfo{}, false
	}
	info := ObjectInfo{Kind: l.kind, RawSize: l.raw, StoredSize: l.comp, Pack: l.pack.id}
	if l.kind.delta() {
		info.Kind, info.Delta = l.kind.object(), true
	}
	return info, true
}

// PackFiles lists the pack and idx files with their sizes and times (for growth statistics).
func (s *Store) PackFiles() ([]FileInfo, error) {
	files, err := s.be.List("packs")
	if err != nil {
		return nil, err
	}
	out := files[:0]
	for _, f := range files {
		id, ext, ok := strings.Cut(f.Name, ".")
		if ok && !f.Dir && validPackID(id) && (ext == "pack" || ext == "idx") {
			out = append(out, f)
		}
	}
	return out, nil
}

// Dir is the store's local work directory (for a Dir store, the store itself).
func (s *Store) Dir() string { return s.dir }

// Stats sums up the store.
func (s *Store) Stats() StoreStats {
	_ = s.Load() // an index that cannot be read holds nothing (see OpenBackendLazy)
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := StoreStats{Packs: len(s.packs)}
	// A bundle is storage, not anyone's object: its blobs are counted, it is not.
	bundles := map[tree.Hash]bool{}
	for _, p := range s.packs {
		st.StoredBytes += max(p.size, 0)
		for _, d := range p.deltaRecs() {
			if d.kind == BundledBlobObject {
				bundles[d.base] = true
			}
		}
	}
	for h, l := range s.index.all() {
		if !bundles[h] {
			st.Objects++
			st.RawBytes += l.raw
		}
	}
	return st
}

// tempGrace is how old a temporary file of a shared store must be before CleanTemp removes it:
// other workspaces write there without holding our lock, and no pack takes this long to write.
const tempGrace = time.Hour

// CleanTemp removes what crashed writers left in tmp/. Batches of this process are spared; those
// of another process are not, which is why the caller must hold the workspace lock. In a shared
// store other workspaces' writers are never under that lock, so only files older than tempGrace
// go.
func (s *Store) CleanTemp() (int, error) {
	des, err := os.ReadDir(s.tmpDir)
	if err != nil {
		return 0, fmt.Errorf("clean object store temp: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	removed := 0
	var errs []error
	for _, de := range des {
		id, _, _ := strings.Cut(de.Name(), ".")
		if _, busy := s.temps[id]; busy {
			continue
		}
		if s.shared {
			if fi, err := de.Info(); err != nil || time.Since(fi.ModTime()) < tempGrace {
				continue
			}
		}
		if err := os.RemoveAll(filepath.Join(s.tmpDir, de.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("clean object store temp: %w", err)
	}
	return removed, nil
}

// openPack returns a reader of p (ReadAt only, so it can be shared) and the function that
// releases it.
func (s *Store) openPack(p *packFile) (File, func(), error) {
	if s.closed.Load() {
		return nil, nil, errors.New("object store is closed")
	}
	if s.storeBytes.Load() {
		s.refetch(p)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f != nil {
		return p.f, func() {}, nil
	}
	f, err := s.be.Open(packName(p.id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fault.Wrap(fault.ErrIntegrity, errPackGone, "pack %s is missing", p.path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open pack: %w", err)
	}
	if s.cachedFDs.Add(1) <= maxCachedFDs {
		p.f = f
		return f, func() {}, nil
	}
	s.cachedFDs.Add(-1)
	return f, func() { _ = f.Close() }, nil
}

func (s *Store) hit(name string) error {
	if s.Failpoint == nil {
		return nil
	}
	return s.Failpoint(name)
}

func newPackID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("pack id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func validPackID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}
