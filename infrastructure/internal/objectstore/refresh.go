package objectstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/timing"
)

// File names under the store directory, beside packs/ and tmp/.
const (
	// gcIntentFile lists the packs a GC is deleting. Written durably before the first deletion and
	// removed after the last, it makes the deletion of a set of packs atomic for every reader: a
	// listed pack is never loaded, so a GC killed half-way can never leave a delta whose base it
	// already deleted in the index, where a later checkpoint would deduplicate onto it.
	gcIntentFile = "gc-pending"
	// damagedFile lists objects found damaged ("<pack id> <hash>" per line). A checkpoint never
	// deduplicates onto a listed copy: it stores a fresh one from the live file instead.
	damagedFile = "damaged"
	// damagedDir holds the same list as one marker file per damaged copy ("<pack id>-<hash>"),
	// for stores that cannot append to a file (and shared ones, whose writers hold no lock in
	// common).
	damagedDir = "damaged.d"
)

// idxCorrupt is the message of a damaged idx. Its pack holds what is needed to make it again
// (RepairIndexes, which `plan doctor --repair` runs); deleting the idx would leave a shared store's
// pack unindexed, its objects unreadable until a gc or a repair re-indexes it.
const idxCorrupt = "idx %s is corrupt: `plan doctor --repair` rebuilds it from its pack (do not delete the pack or the idx)"

// errPackGone marks a read that found its pack deleted after the index was loaded (a concurrent GC
// rewrote or dropped it). Readers refresh the index and try once more before reporting damage.
var errPackGone = errors.New("pack is gone")

// packListing is what packs/ holds at one instant.
type packListing struct {
	ids     []string // sorted; packs and idx files not being deleted
	hasPack map[string]bool
	hasIdx  map[string]bool
	size    map[string]int64     // pack sizes (packs that exist)
	mtime   map[string]time.Time // when each pack was written, by the store's clock
	idxFile map[string]fileStamp // what each idx file is, as listed
	pending []string             // packs an interrupted GC was deleting
	// orphans are the packs of a shared store that have no idx: uploads in flight, or left by a
	// writer that crashed between its two uploads (nothing references those). They are not
	// indexed; GC condemns them once they are older than its grace period.
	orphans []string
}

// listPacks reads packs/ and then the GC intent. The order matters for a reader that does not hold
// the lock: a pack that a concurrent GC deletes is either named by the intent it reads afterwards,
// or already gone from the listing, or (GC finished) missing when it is opened, which load skips.
func (s *Store) listPacks() (packListing, error) {
	pl := packListing{hasPack: map[string]bool{}, hasIdx: map[string]bool{}, size: map[string]int64{}, mtime: map[string]time.Time{},
		idxFile: map[string]fileStamp{}}
	files, err := s.be.List("packs")
	if err != nil {
		return pl, fmt.Errorf("open object store: %w", err)
	}
	var pending []string
	if !s.shared { // a shared store deletes under gc marks, never an intent
		if pending, err = s.readIntent(); err != nil {
			return pl, err
		}
	}
	pl.pending = pending
	skip := make(map[string]bool, len(pending))
	for _, id := range pending {
		skip[id] = true
	}
	for _, fi := range files {
		id, ext, ok := strings.Cut(fi.Name, ".")
		if !ok || !validPackID(id) || (ext != "pack" && ext != "idx") || skip[id] {
			continue // not ours (left alone rather than refused), or being deleted
		}
		if !pl.hasPack[id] && !pl.hasIdx[id] {
			pl.ids = append(pl.ids, id)
		}
		if ext == "idx" {
			pl.hasIdx[id] = true
			pl.idxFile[id] = fileStamp{size: fi.Size, mod: fi.ModTime}
			continue
		}
		pl.hasPack[id] = true
		pl.size[id], pl.mtime[id] = fi.Size, fi.ModTime
	}
	if s.shared {
		ids := pl.ids[:0]
		for _, id := range pl.ids {
			if pl.hasPack[id] && !pl.hasIdx[id] {
				pl.orphans = append(pl.orphans, id)
				continue
			}
			ids = append(ids, id)
		}
		pl.ids = ids
		slices.Sort(pl.orphans)
	}
	slices.Sort(pl.ids)
	return pl, nil
}

func (s *Store) readIntent() ([]string, error) {
	b, err := s.be.ReadFile(gcIntentFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the gc intent: %w", err)
	}
	var ids []string
	for _, line := range strings.Fields(string(b)) {
		if !validPackID(line) {
			// A torn intent cannot be: it is replaced whole. Refuse rather than guess which packs
			// are being deleted.
			return nil, fault.Integrity("the gc intent %s is damaged (%q is no pack id): run `plan doctor`",
				s.be.Location(gcIntentFile), line)
		}
		ids = append(ids, line)
	}
	return ids, nil
}

// writeIntent durably records that the packs ids are about to be deleted.
func (s *Store) writeIntent(ids []string) error {
	if err := s.be.WriteFile(gcIntentFile, []byte(strings.Join(ids, "\n")+"\n"), 0o400); err != nil {
		return fmt.Errorf("write the gc intent: %w", err)
	}
	return nil
}

// deletePacks removes the packs ids under the intent: intent durable, every idx and pack removed
// (idx first, so a pack is never left indexed without its data), packs/ synced, intent removed.
// It is idempotent, which is how an interrupted GC is finished.
func (s *Store) deletePacks(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := s.writeIntent(ids); err != nil {
		return err
	}
	if err := s.hit("gc.intent"); err != nil {
		return err
	}
	var errs []error
	for i, id := range ids {
		for _, name := range []string{idxName(id), packName(id)} {
			if err := s.be.Remove(name); err != nil {
				errs = append(errs, err)
			}
		}
		if i == 0 {
			if err := s.hit("gc.deleted-one"); err != nil {
				return err
			}
		}
	}
	if err := s.be.Sync("packs"); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete packs (the next command finishes it): %w", err)
	}
	if err := s.be.Remove(gcIntentFile); err != nil {
		return fmt.Errorf("clear the gc intent: %w", err)
	}
	return s.be.Sync("")
}

// Refresh brings the in-memory index up to date with the files, as the workspace lock's holder sees
// them. It MUST be called after taking the workspace lock and before the first read or write of a
// command: the store was opened before the lock, so another process (a GC, a checkpoint) may have
// added or removed packs since. Holding the lock, it also finishes a GC that was interrupted,
// writes the idx of a pack whose commit was cut short, and removes what crashed writers left in
// tmp/. When nothing changed it costs one directory listing and a stat per pack.
func (s *Store) Refresh() error {
	if err := s.refresh(); err != nil {
		return err
	}
	s.unloaded.Store(false)
	if f := s.faulty.Load(); f != nil {
		return *f // a damaged idx found since the last load, still there
	}
	return nil
}

// Settle is Refresh for a lock holder that may read no object: it finishes an interrupted GC and
// clears tmp/ as Refresh does, but an index not read yet (see OpenBackendLazy) stays unread until
// its first use, which reads it as Open would. A read-only command that takes the lock only to
// run repairs of the database then costs no idx read. A loaded index is refreshed.
func (s *Store) Settle() error {
	if !s.unloaded.Load() {
		return s.Refresh()
	}
	if !s.shared {
		pending, err := s.readIntent()
		if err != nil {
			return err
		}
		if err := s.deletePacks(pending); err != nil {
			return err
		}
	}
	_, err := s.CleanTemp()
	return err
}

func (s *Store) refresh() error {
	if s.shared {
		// Nothing to finish or rebuild from here: a shared store deletes under gc marks, and a pack
		// without its idx belongs to a writer of another workspace, or to no one.
		if _, err := s.CleanTemp(); err != nil {
			return err
		}
		return s.reload()
	}
	pl, err := s.listPacks()
	if err != nil {
		return err
	}
	if len(pl.pending) > 0 {
		if err := s.deletePacks(pl.pending); err != nil {
			return err
		}
	}
	if _, err := s.CleanTemp(); err != nil {
		return err
	}
	if s.matches(pl) {
		// The packs are the ones indexed; what another process may have learnt of them since (a
		// verify that found a copy damaged, a repair that healed one) is in the damaged-object
		// list, which a long-lived process (the watch service, a run) must see as a new one would.
		known, err := s.knowsDamage()
		if err != nil || known {
			return err
		}
	}
	return s.load(pl, true)
}

// fileStamp is what a listing says of a file: enough to see that it was replaced.
type fileStamp struct {
	size int64
	mod  time.Time
}

// confirmStamp names the store's view: the packs the index holds (with the sizes of each pack and
// of its idx, and the idx's stored checksum) and the copies it knows damaged. Packs are never
// changed once written, only added or deleted (pack names are random, never reused), and an idx
// replaced by another is another view: so an object found present, whole down its chain, in one
// view is present in every view with the same stamp, in any process. A store with a fault has none.
func (s *Store) confirmStamp() (tree.Hash, bool) {
	if s.faulty.Load() != nil {
		return tree.Hash{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := slices.Sorted(maps.Keys(s.packs))
	h := sha256.New()
	var n [8]byte
	for _, id := range ids {
		p := s.packs[id]
		h.Write([]byte(id))
		binary.BigEndian.PutUint64(n[:], uint64(p.size)) // #nosec G115 -- -1 (missing) encodes as itself
		h.Write(n[:])
		binary.BigEndian.PutUint64(n[:], uint64(p.idxSize)) // #nosec G115 -- a size
		h.Write(n[:])
		// The idx's own checksum, as stored: another idx of the same size (one that lists other
		// objects) is another view.
		var sum [sha256.Size]byte
		if p.table != nil && len(p.table.raw) >= len(sum) {
			copy(sum[:], p.table.raw[len(p.table.raw)-len(sum):])
		}
		h.Write(sum[:])
	}
	h.Write([]byte{0})
	dmg := make([]string, 0, len(s.damaged))
	for k := range s.damaged {
		dmg = append(dmg, k.pack+" "+k.hash.String())
	}
	slices.Sort(dmg)
	for _, d := range dmg {
		h.Write([]byte(d))
		h.Write([]byte{'\n'})
	}
	var out tree.Hash
	h.Sum(out[:0])
	return out, true
}

// knowsDamage says whether the index knows every copy the damaged-object list names. (It may know
// more: a copy this process found damaged and could not record stays marked here.)
func (s *Store) knowsDamage() (bool, error) {
	dmg, err := s.readDamaged()
	if err != nil {
		return false, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for k := range dmg {
		if _, ok := s.damaged[k]; !ok {
			return false, nil
		}
	}
	return true, nil
}

// matches reports whether the index was built from exactly the packs pl lists, with their sizes.
func (s *Store) matches(pl packListing) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if len(pl.ids) != len(s.packs) {
		return false
	}
	for _, id := range pl.ids {
		p, ok := s.packs[id]
		if !ok || !pl.hasIdx[id] {
			return false
		}
		size, present := pl.size[id]
		if !present {
			size = -1
		}
		if p.size != size {
			return false
		}
		if p.table != nil && p.table.failed() != nil && p.idxFile != pl.idxFile[id] {
			return false // a damaged idx was replaced (plan doctor --repair): read it again
		}
	}
	return true
}

// load (re)builds the index from the packs pl lists. locked says the caller holds the workspace
// lock, so a missing idx may be written; without it, a pack without idx is indexed in memory only
// (its writer, or a GC, may be working on it). Packs that vanish while they are read are skipped:
// only a GC deletes packs, and it deletes nothing a checkpoint references without copying it first.
func (s *Store) load(pl packListing, locked bool) error {
	defer timing.Span("index.load")()
	damagedSet, err := s.readDamaged()
	if err != nil {
		return err
	}
	marks, err := s.readMarks()
	if err != nil {
		return err
	}
	cond := condemnedBy(marks)
	s.mu.RLock()
	old := s.packs
	s.mu.RUnlock()
	// Every idx is read before the index is made.
	var reads []packEntries
	// Packs that exist are registered first so that, for an object also listed by an idx whose pack
	// is gone, the index keeps the copy that can be read.
	for _, present := range []bool{true, false} {
		for _, id := range pl.ids {
			if pl.hasPack[id] != present {
				continue
			}
			size, ok := pl.size[id]
			if !ok {
				size = -1
			}
			// An idx is immutable once it is in packs/ (a pack is renamed in whole, its idx after it,
			// and a repaired idx lists what the pack holds, as the one it replaces did): the table of
			// an unchanged pack loaded from its idx is kept, not read and checked again. A command
			// refreshed after `plan watch` stored a pack reads that pack's idx alone.
			if p := old[id]; p != nil && p.table != nil && p.idxSize > 0 && pl.hasIdx[id] && p.size == size {
				err := p.table.failed()
				if err != nil && p.idxFile == pl.idxFile[id] {
					return err // found damaged: refused as at its first load, until doctor --repair
				}
				if err == nil {
					reads = append(reads, packEntries{p: p, table: p.table})
					continue
				}
				// Replaced since it was found damaged: read again, and checked at its first use.
			}
			r, err := s.readEntries(id, size, pl.hasIdx[id], locked)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			r.p.idxFile = pl.idxFile[id]
			// A pack already loaded, unchanged, keeps its packFile: its open file, and the delta
			// bases read from its records.
			if p := old[id]; p != nil && p.size == r.p.size && p.idxSize == r.p.idxSize && p.version == r.p.version &&
				(p.table == nil || p.table.failed() == nil) {
				r.p = p
			}
			reads = append(reads, r)
		}
	}
	// Nothing is built from the idx files but their tables (see objIndex): each is searched when an
	// object is looked up, and checked whole when first used (see idxTable).
	index := newObjIndex(0)
	index.onFault = s.noteFault
	index.dmg, index.cond = maps.Clone(damagedSet), maps.Clone(cond)
	packs := make(map[string]*packFile, len(reads))
	for _, r := range reads {
		p := r.p
		t := r.table
		var err error
		switch {
		case t != nil:
		case r.idx != nil:
			if t, err = newIdxTable(p, r.idx, r.sumOK, s.be.Location(idxName(p.id))); err != nil {
				return fault.Wrap(fault.ErrIntegrity, err, idxCorrupt, s.be.Location(idxName(p.id)))
			}
		default:
			if t, err = tableOf(p, r.scanned); err != nil {
				return fault.Wrap(fault.ErrIntegrity, err, "pack %s has no idx and cannot be re-indexed", p.path)
			}
		}
		index.tables = append(index.tables, t)
		index.entries += t.n
		if p.table == nil {
			p.table = t
		}
		packs[p.id] = p
	}
	s.mu.Lock()
	for id, p := range s.packs {
		if packs[id] != p {
			s.retired = append(s.retired, p)
		}
	}
	lost := lostAny(s.packs, packs, s.damaged, damagedSet, s.condemned, cond)
	s.index, s.packs, s.damaged, s.condemned, s.marks = index, packs, damagedSet, cond, marks
	// A damaged table is kept by no load (see above): the new index has none, as far as anyone
	// has looked.
	s.faulty.Store(nil)
	s.mu.Unlock()
	if lost {
		s.trust.forget()
	}
	s.unloaded.Store(false)
	s.baseMu.Lock()
	for k := range s.bases {
		if packs[k.pack.id] != k.pack {
			delete(s.bases, k)
		}
	}
	s.baseMu.Unlock()
	return nil
}

// better says whether location l should replace prev in the index: a copy that can be read beats
// one that cannot (its pack missing or cut short, or known damaged), a copy in a pack no gc mark
// condemns beats one in a condemned pack, and a whole copy beats a delta.
func better(h tree.Hash, prev, l location, dmg map[damageKey]struct{}, cond map[string]bool) bool {
	pu, lu := intact(h, prev, dmg), intact(h, l, dmg)
	if pu != lu {
		return lu
	}
	if pc, lc := cond[prev.pack.id], cond[l.pack.id]; pc != lc {
		return pc
	}
	return preferred(prev.kind, l.kind)
}

// packEntries is what load reads of one pack: its idx file (checked as it is walked), or the
// entries scanned from the pack itself.
type packEntries struct {
	p   *packFile
	idx []byte
	// sumOK says idx's checksum was verified as it was read (see readIdx).
	sumOK bool
	// table is the table of an unchanged pack, kept from the previous load.
	table   *idxTable
	scanned []idxEntry
}

// readEntries reads the entries of pack id (of size bytes, -1 when missing): its idx, or, when the
// idx is missing, the pack's records (and, locked, writes the idx). fs.ErrNotExist means the pack
// is gone.
func (s *Store) readEntries(id string, size int64, haveIdx, locked bool) (packEntries, error) {
	r := packEntries{p: s.newPackFile(id, size)}
	if haveIdx {
		b, sumOK, err := s.readIdx(id)
		switch {
		case err == nil:
			r.sumOK = sumOK
			_, cerr := idxCount(b)
			if cerr != nil {
				return r, fault.Wrap(fault.ErrIntegrity, cerr,
					idxCorrupt, s.be.Location(idxName(id)))
			}
			r.idx = b
			r.p.idxSize = int64(len(b))
			r.p.version = idxVersion(b)
			return r, nil
		case !errors.Is(err, fs.ErrNotExist):
			return r, fmt.Errorf("read idx %s: %w", s.be.Location(idxName(id)), err)
		}
		if size < 0 {
			return r, fs.ErrNotExist
		}
	}
	var err error
	if !locked || s.shared {
		// In a shared store a pack without its idx is one another workspace is still installing
		// (or one a crash cut short, which no checkpoint references): index it in memory, never
		// write its idx from here.
		r.scanned, err = s.scanEntries(r.p)
	} else {
		r.scanned, err = s.rebuildIdx(r.p)
	}
	return r, err
}

// scanEntries indexes a pack from its records, in memory.
func (s *Store) scanEntries(p *packFile) ([]idxEntry, error) {
	f, err := s.be.Open(packName(p.id))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, version, err := scanPack(io.NewSectionReader(f, 0, f.Size()), p.size)
	if err != nil {
		return nil, fault.Wrap(fault.ErrIntegrity, err, "pack %s has no idx and cannot be re-indexed", p.path)
	}
	p.version = version
	return entries, nil
}

// damageKey names one stored copy of an object.
type damageKey struct {
	pack string
	hash tree.Hash
}

func (s *Store) readDamaged() (map[damageKey]struct{}, error) {
	set := map[damageKey]struct{}{}
	var b []byte
	var err error
	if !s.shared { // a shared store keeps markers only
		b, err = s.be.ReadFile(damagedFile)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read the damaged-object list: %w", err)
		}
	}
	for line := range bytes.Lines(b) {
		// A line cut short by a crash during its append is skipped: at worst one copy is trusted
		// until the next verify lists it again.
		if k, ok := parseDamage(string(bytes.TrimRight(line, "\n")), " "); ok {
			set[k] = struct{}{}
		}
	}
	markers, err := s.be.List(damagedDir)
	if err != nil {
		return nil, fmt.Errorf("read the damaged-object list: %w", err)
	}
	for _, fi := range markers {
		if k, ok := parseDamage(fi.Name, "-"); ok && !fi.Dir {
			set[k] = struct{}{}
		}
	}
	return set, nil
}

// parseDamage reads "<pack id><sep><hash>": a line of the damage list or a marker's name.
func parseDamage(s, sep string) (damageKey, bool) {
	pack, hx, ok := strings.Cut(s, sep)
	var h tree.Hash
	if !ok || !validPackID(pack) || len(hx) != 2*len(h) {
		return damageKey{}, false
	}
	if _, err := hex.Decode(h[:], []byte(hx)); err != nil {
		return damageKey{}, false
	}
	return damageKey{pack, h}, true
}

// markDamaged records that the copy of h at l is damaged, so that no later checkpoint
// deduplicates onto it. Readers that do not hold the workspace lock record what they find too: a
// local store appends one short line to its list (atomic with O_APPEND); a store without appends
// writes one marker file per copy, named after it.
func (s *Store) markDamaged(h tree.Hash, l location) {
	k := damageKey{l.pack.id, h}
	s.mu.Lock()
	_, known := s.damaged[k]
	if !known {
		s.damaged[k] = struct{}{}
	}
	s.mu.Unlock()
	if !known {
		s.trust.forget()
	}
	if known {
		return
	}
	// A failure to record leaves the in-memory mark, which still protects this process; verify
	// finds the damage again.
	if a, ok := s.be.(lineAppender); ok && !s.shared {
		_ = a.AppendLine(damagedFile, fmt.Sprintf("%s %s", l.pack.id, h))
		return
	}
	_ = s.be.WriteFile(damagedDir+"/"+l.pack.id+"-"+h.String(), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o600)
}

// noteDamage marks damaged the copy err says has bad bytes: the record the error names, which on
// a delta chain is the link found bad, not the object read through it. A vanished pack, a broken
// chain and a store that does not answer mark nothing.
func (s *Store) noteDamage(err error) {
	var d *recordDamage
	if err == nil || !errors.As(err, &d) || errors.Is(err, errPackGone) || noVerdict(err) {
		return
	}
	if d.l.pack != nil && d.l.pack.size >= 0 {
		s.markDamaged(d.h, d.l)
	}
}

// intact says whether the copy at l can be trusted as far as can be told without reading it: its
// pack exists and is long enough to hold the record, and it is not known to be damaged.
func intact(h tree.Hash, l location, dmg map[damageKey]struct{}) bool {
	if l.pack == nil || l.pack.size < 0 {
		return false
	}
	// The shortest header: kind, hash and two one-byte sizes.
	if l.offset+1+32+2+l.comp+trailerLen(l.pack.version) > l.pack.size {
		return false
	}
	_, bad := dmg[damageKey{l.pack.id, h}]
	return !bad
}

// Present reports whether h can be deduplicated onto: the index has it in a pack that exists and
// is long enough and that no gc mark condemns, no read found that copy damaged, and for a delta the
// same holds for every base down its chain. A checkpoint MUST store a fresh copy of anything not
// Present.
func (s *Store) Present(h tree.Hash) bool { return s.trusted(h, false) }

// Untrusted lists, sorted, the objects the index knows that have no copy to trust: known damaged,
// in a pack missing or cut short, or a delta with such a link down its chain (a copy a gc mark
// condemns is still trusted: it is read until the sweep).
func (s *Store) Untrusted() []tree.Hash {
	_ = s.Load() // an index that cannot be read holds nothing (see OpenBackendLazy)
	s.mu.RLock()
	var all []tree.Hash
	for h := range s.index.all() {
		all = append(all, h)
	}
	s.mu.RUnlock()
	var out []tree.Hash
	for _, h := range all {
		if !s.trusted(h, true) {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b tree.Hash) int { return bytes.Compare(a[:], b[:]) })
	return out
}

// trusted is Present, with condemned copies counted when condemned is set.
func (s *Store) trusted(h tree.Hash, condemned bool) bool {
	if s.Load() != nil {
		return false // an index that cannot be read vouches for nothing
	}
	if s.trust.has(h) {
		return true // trusted without condemned copies: so with them too
	}
	gen, first := s.trust.generation(), h
	for range maxDeltaChain + 1 {
		// One read lock per link: this runs for every unchanged file of every checkpoint.
		s.mu.RLock()
		l, ok := s.index.get(h)
		ok = ok && intact(h, l, s.damaged) && (condemned || !s.condemned[l.pack.id])
		s.mu.RUnlock()
		if !ok {
			return false
		}
		if !l.kind.delta() {
			if !condemned {
				s.trust.note(first, gen)
			}
			return true
		}
		base, err := s.cachedBase(h, l)
		if err != nil {
			return false
		}
		h = base
	}
	return false // a chain longer than any reader follows
}

// cachedBase returns the base of the delta record of h at l (see recordBase).
func (s *Store) cachedBase(h tree.Hash, l location) (tree.Hash, error) {
	if d := l.pack.delta(h); d != nil && d.offset == l.offset {
		return s.recordBase(l.pack, d)
	}
	return s.storedBase(h, l)
}

// storedBase is deltaBase that reads a local copy's damage again from the store itself, and
// notes what damage remains.
func (s *Store) storedBase(h tree.Hash, l location) (tree.Hash, error) {
	base, err := s.deltaBase(h, l)
	err = s.fromStore(err, func() (err error) {
		base, err = s.deltaBase(h, l)
		return err
	})
	return base, err
}

// fromStore takes err, the outcome of a read, and runs read again while the error is damage in a
// local copy of a remote store's pack (dropped then: the next read gets the store's own bytes,
// once per pack, down a delta chain across packs); damage that remains is the store's, and is
// noted.
func (s *Store) fromStore(err error, read func() error) error {
	for s.refetchDamaged(err) {
		err = read()
	}
	s.noteDamage(err)
	return err
}

// recordBase returns the base of delta record d of pack p: the one its idx names, or, for a pack
// indexed without bases (an older idx), the one its record names, read once and remembered for as
// long as the pack is loaded. A record that cannot be read is noted as damaged.
func (s *Store) recordBase(p *packFile, d *deltaRec) (tree.Hash, error) {
	if !d.base.IsZero() {
		return d.base, nil
	}
	k := recordKey{p, d.offset}
	s.baseMu.Lock()
	base, ok := s.bases[k]
	s.baseMu.Unlock()
	if ok {
		return base, nil
	}
	base, err := s.storedBase(d.hash, d.location(p))
	if err != nil {
		return base, err
	}
	s.baseMu.Lock()
	s.bases[k] = base
	s.baseMu.Unlock()
	return base, nil
}

// retryGone runs read against h's current location; when the pack vanished under it (a
// concurrent GC moved the object), it refreshes the index, without the lock's privileges, and
// tries once more; when it found damage in a local copy of a remote pack, it drops the copy and
// reads the store's own bytes. Damage found on the way is recorded.
func (s *Store) retryGone(h tree.Hash, read func(l location) error) error {
	if err := s.Load(); err != nil {
		return err
	}
	l, ok := s.lookup(h)
	if !ok {
		return s.missing(h)
	}
	err := read(l)
	if errors.Is(err, errPackGone) {
		pl, lerr := s.listPacks()
		if lerr == nil && !s.matches(pl) {
			lerr = s.load(pl, false)
		}
		if lerr != nil {
			return errors.Join(err, lerr)
		}
		if l, ok = s.lookup(h); !ok {
			return s.missing(h)
		}
		err = read(l)
	}
	return s.fromStore(err, func() error { return read(l) })
}

// Problems lists, without reading object data, what keeps objects the index lists from being read:
// an idx whose pack is missing, a pack cut short of the records its idx lists, a delta whose base
// chain is broken, and a GC that was interrupted. It backs `plan doctor`; `verify --read-data`
// reads every byte.
func (s *Store) Problems() []string {
	var out []string
	if err := s.CheckIndex(); err != nil { // loads it first
		return append(out, err.Error())
	}
	if pending, err := s.readIntent(); err != nil {
		out = append(out, err.Error())
	} else if len(pending) > 0 {
		out = append(out, fmt.Sprintf("an interrupted gc was deleting %d pack(s); the next command that takes the lock finishes it", len(pending)))
	}
	s.mu.RLock()
	type packCount struct {
		missing, cut int
	}
	per := map[*packFile]*packCount{}
	var deltas []tree.Hash
	for h, l := range s.index.all() {
		pc := per[l.pack]
		if pc == nil {
			pc = &packCount{}
			per[l.pack] = pc
		}
		switch {
		case l.pack.size < 0:
			pc.missing++
		case !intact(h, l, nil):
			pc.cut++
		case l.kind.delta():
			deltas = append(deltas, h)
		}
	}
	s.mu.RUnlock()
	ids := make([]*packFile, 0, len(per))
	for p := range per {
		ids = append(ids, p)
	}
	slices.SortFunc(ids, func(a, b *packFile) int { return strings.Compare(a.id, b.id) })
	for _, p := range ids {
		switch pc := per[p]; {
		case pc.missing > 0:
			out = append(out, fmt.Sprintf("pack %s is missing: its idx lists %d object(s) that cannot be read", p.id, pc.missing))
		case pc.cut > 0:
			out = append(out, fmt.Sprintf("pack %s is cut short: %d object(s) its idx lists lie past its end", p.id, pc.cut))
		}
	}
	slices.SortFunc(deltas, func(a, b tree.Hash) int { return bytes.Compare(a[:], b[:]) })
	broken := 0
	var first error
	for _, h := range deltas {
		l, ok := s.lookup(h)
		if !ok {
			continue
		}
		base, err := s.cachedBase(h, l)
		if err == nil {
			err = s.checkChain(base)
		}
		if err != nil {
			broken++
			if first == nil {
				first = fmt.Errorf("tree %s: %w", h, err)
			}
		}
	}
	if broken > 0 {
		out = append(out, fmt.Sprintf("%d delta(s) cannot be rebuilt because their base chain is broken, e.g. %v", broken, first))
	}
	return out
}
