package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/tree"
)

// A command that takes several snapshots in one process (a run: one before and one after every
// decision) can have the scanner follow the workspace's changes between them (Track): the first
// snapshot walks the whole tree and watches every directory it opens; the next ones re-read only
// what the events since name, updating the tree the last snapshot kept in memory. Events only ever
// add work: whatever they cannot vouch for is read again (a directory deleted is known by its
// watch the kernel removed: one made again under its name is new, walked and watched whole, even
// with the same inode number, which ext4 hands out again at once), and anything uncertain (the
// event queue overflowed, a watch could not be added, the ignore rules changed, a directory is not
// where the tree says) makes the next snapshot a full walk again, with a fresh watcher.
//
// What events do not report is handled without them: files with other hard links (a write through
// a link outside the workspace makes no event here) are stat'ed at every snapshot and read again
// under the stat cache's rule, and those whose inode has another name in the tree are read again
// at every snapshot whatever their stat says (an event names only the name written through). A
// link made inside the workspace is an event for the new name only: when a snapshot reads a file
// with other links, or an event touches (writes, replaces, removes) one the tree knows to have
// some, every other name of that inode the tree holds is read again and counted as linked.
//
// A hard link made inside the workspace, changed through and removed (or moved out) again between
// two snapshots leaves events for its own name only, gone by the time the snapshot could learn its
// inode (and none at all in a directory made since, not watched yet): a file made, changed and gone
// since the last snapshot, or a directory made (or moved in from outside) since, may have held one,
// so the next snapshot stats every file of the tree (reading again those whose stat changed),
// without a walk.
//
// Two changes inotify does not report at all: writes through a shared memory mapping made by a
// process that outlives its decision, and writes through a hard link made outside the workspace
// (or under an ignored path, which is not watched) after the file was read (making the link is no
// event here either); PLAN_WATCH=0 turns tracking off for workspaces where either happens.

// watcher reports the changes under the directories it watches (watch_linux.go; none elsewhere).
type watcher interface {
	// watch starts watching directory rel, open as fd, on device dev, and returns the watch's id.
	// A directory that cannot be watched makes the next take report the watcher uncertain.
	watch(rel string, fd int, dev uint64) int32
	// forget stops watching directory rel (watch id wd) if the watch still stands for it.
	forget(rel string, wd int32)
	// take returns the changes reported since the last take (every event queued until now
	// included) and starts a new set.
	take() dirtySet
	// permanent says why watching cannot work here at all (not why one take was uncertain); "" if it can.
	permanent() string
	// vouch reads the events queued until now, then takes the word of a restore for the files
	// it placed under root that are still what it placed (Scanner.Vouch); it returns how many.
	vouch(root string, files []Placed) int
	close()
}

// What an event said about a name.
const (
	evEntry   = 1 << iota // created, deleted or moved in or out: the directory's listing changed
	evContent             // written
	evAttr                // mode, owner or timestamps
	evCreated             // a file (not a directory) created under this name since the last take
)

// dirtySet is what the events since the last snapshot named, by directory.
type dirtySet struct {
	dirs map[string]*dirtyDir
	// names counts the names held, to bound memory.
	names int
	// uncertain, when set, says why the events cannot be trusted: the next snapshot walks.
	uncertain string
	// lost are the watches the kernel removed without being asked (their directory was deleted),
	// by the directory they stood for: a directory of the same name and inode number found later
	// is another one (ext4 reuses a freed inode number at once), unwatched, and is walked whole.
	lost map[string]int32
	// restatAll, when set, names a file created, changed and then removed (or moved out of the
	// workspace) since the last take: it may have been a hard link to a file of the tree, changed
	// through it without an event for that file's name, so the next snapshot stats every file.
	restatAll string
	// movedOut are the moves (by cookie) of files made since the last take whose arrival was not
	// seen yet; dirsMoved the moves of directories out of a watched one.
	movedOut  map[uint32]movedFile
	dirsMoved map[uint32]bool
}

// movedFile is a file made since the last take, moved away from path: what it went through there.
type movedFile struct {
	path  string
	flags uint8
}

type dirtyDir struct {
	relist bool
	names  map[string]uint8
}

// maxDirtyNames bounds the names a dirty set remembers; past it the next snapshot walks, which is
// then the cheaper way anyway.
const maxDirtyNames = 1 << 17

func (d *dirtySet) lose(reason string) {
	if d.uncertain == "" {
		d.uncertain = reason
	}
	d.dirs, d.lost, d.movedOut, d.dirsMoved, d.restatAll, d.names = nil, nil, nil, nil, "", 0
}

// dirArrived notes a directory made in directory rel, or moved in (move cookie, not 0): unless it
// came from a watched directory, what happened inside it before the next snapshot watches it is
// unknown (a hard link made there, written through and removed), so that snapshot stats every file.
func (d *dirtySet) dirArrived(rel, name string, cookie uint32) {
	if cookie != 0 && d.dirsMoved[cookie] {
		delete(d.dirsMoved, cookie)
		return
	}
	if d.restatAll == "" && d.uncertain == "" {
		d.restatAll = join(rel, name) + "/ was made or moved in since the last snapshot"
	}
}

// dirLeft notes a directory moved away (cookie) from a watched one.
func (d *dirtySet) dirLeft(cookie uint32) {
	if d.dirsMoved == nil {
		d.dirsMoved = map[uint32]bool{}
	}
	d.dirsMoved[cookie] = true
}

// gone notes that name left directory rel: deleted, or moved away as move cookie (not 0). A file
// made since the last take (created, or moved in: it may be a hard link to a file of the tree) and
// changed before it went may have been written through as such a link: the next snapshot stats
// every file. A move carries what its file went through to the name it arrives at (arrived); one
// that arrives nowhere the watcher sees counts as removed (settle).
func (d *dirtySet) gone(rel, name string, cookie uint32) {
	if d.uncertain != "" || d.dirs[rel] == nil {
		return
	}
	f := d.dirs[rel].names[name] & (evCreated | evContent | evAttr)
	if f&evCreated == 0 {
		return
	}
	if cookie != 0 {
		if d.movedOut == nil {
			d.movedOut = map[uint32]movedFile{}
		}
		d.movedOut[cookie] = movedFile{join(rel, name), f}
		return
	}
	d.doubt(join(rel, name), f)
}

// doubt sets restatAll when a file made since the last take (path, its flags f) was changed.
func (d *dirtySet) doubt(path string, f uint8) {
	if f&(evContent|evAttr) != 0 && d.restatAll == "" && d.uncertain == "" {
		d.restatAll = path + " was made, changed and removed since the last snapshot"
	}
}

// arrived returns the flags a name moved in (move cookie) carries: what its file went through
// under its former name in this set, and made (a file moved in may be a hard link to a file of
// the tree, as one created is).
func (d *dirtySet) arrived(cookie uint32) uint8 {
	m, ok := d.movedOut[cookie]
	delete(d.movedOut, cookie)
	if !ok {
		return evCreated
	}
	return m.flags
}

// settle ends the set: a move of a file made since the last take that arrived nowhere the watcher
// sees (out of the workspace) counts as removed (gone).
func (d *dirtySet) settle() {
	for _, m := range d.movedOut {
		d.doubt(m.path, m.flags)
	}
	d.movedOut, d.dirsMoved = nil, nil
}

func (d *dirtySet) dir(rel string) *dirtyDir {
	if d.dirs == nil {
		d.dirs = map[string]*dirtyDir{}
	}
	dd := d.dirs[rel]
	if dd == nil {
		dd = &dirtyDir{}
		d.dirs[rel] = dd
	}
	return dd
}

// watchLost notes that the watch wd of directory rel was removed by the kernel (see lost).
func (d *dirtySet) watchLost(rel string, wd int32) {
	if d.uncertain != "" {
		return
	}
	if d.lost == nil {
		d.lost = map[string]int32{}
	}
	d.lost[rel] = wd
	d.names++
	if d.names > maxDirtyNames {
		d.lose(fmt.Sprintf("more than %d changed names", maxDirtyNames))
	}
}

// add notes what an event said about name in directory rel ("" for the directory itself, which
// is then listed again).
func (d *dirtySet) add(rel, name string, flags uint8) {
	if d.uncertain != "" {
		return
	}
	dd := d.dir(rel)
	if name == "" || flags&evEntry != 0 {
		dd.relist = true
	}
	if name == "" {
		return
	}
	if dd.names == nil {
		dd.names = map[string]uint8{}
	}
	if _, ok := dd.names[name]; !ok {
		d.names++
	}
	dd.names[name] |= flags
	if d.names > maxDirtyNames {
		d.lose(fmt.Sprintf("more than %d changed names", maxDirtyNames))
	}
}

// tracking is what a Scanner keeps while a command follows the workspace (Track).
type tracking struct {
	mu   sync.Mutex // one snapshot at a time uses the state below
	refs int
	w    watcher
	// root is the tree of the last snapshot and fp the fingerprint of the ignore rules it was
	// taken with; root is nil until a full walk under a watcher, and after any failure.
	root *node
	fp   string
	// off says why tracking gave up for the rest of the command ("" while it works).
	off string
	// unsaved says root holds changes the stat cache file does not.
	unsaved bool
	// walked says root comes from a walk, not yet followed by an update: see restatAfterWalk.
	walked bool
	// stats, for tests and the curious: snapshots taken by walking and incrementally.
	walks, updates int
}

var _ port.ChangeTracker = (*Scanner)(nil)

// TrackOff turns tracking off for good, for the reason why (what the user set): Track then
// follows nothing and every snapshot walks. Call it before the first Track.
func (s *Scanner) TrackOff(why string) {
	s.trackMu.Lock()
	s.trackOff = why
	s.trackMu.Unlock()
}

// Track makes the snapshots of this scanner follow the workspace's changes until the returned
// stop is called (calls nest; the last stop ends tracking and saves the stat cache). After
// TrackOff (PLAN_WATCH=0, read by the composition root) it is off: every snapshot then walks.
func (s *Scanner) Track() (stop func()) {
	s.trackMu.Lock()
	defer s.trackMu.Unlock()
	if s.tr == nil {
		s.tr = &tracking{}
		s.tr.off = s.trackOff
	}
	tr := s.tr
	tr.refs++
	return sync.OnceFunc(func() {
		s.trackMu.Lock()
		defer s.trackMu.Unlock()
		if tr.refs--; tr.refs > 0 {
			return
		}
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if tr.w != nil {
			tr.w.close()
			tr.w = nil
		}
		if tr.root != nil && tr.unsaved {
			// A hint (failure costs re-hashing), vouching for no view of the store: the tracker's
			// tree was confirmed piecewise, epoch by epoch.
			_ = saveStatCache(s.layout.StatCache(), encodeNodes(tr.root, tr.root.files, tree.Hash{}))
		}
		tr.root = nil
		s.tr = nil
	})
}

func (s *Scanner) tracking() *tracking {
	s.trackMu.Lock()
	defer s.trackMu.Unlock()
	return s.tr
}

// errUncertain says an incremental snapshot found the workspace not as its tree and events say
// (a directory replaced between an event and now): the snapshot walks instead.
var errUncertain = errors.New("the workspace changed in a way the events do not cover")

func (s *Scanner) trackedSnapshot(ctx context.Context, tr *tracking, p port.Progress, also []tree.Hash) (port.Snapshot, error) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	ig, err := s.ignoreWith(also)
	if err != nil {
		return port.Snapshot{}, err
	}
	if tr.off != "" {
		sc, root, err := s.run(ctx, p, true, also, nil)
		if err != nil {
			return port.Snapshot{}, err
		}
		return sc.finish(root, true)
	}
	var d dirtySet
	if tr.w != nil {
		d = tr.w.take()
	}
	if s.afterTake != nil {
		s.afterTake()
	}
	if tr.w != nil && tr.root != nil && d.uncertain == "" && ig.fp == tr.fp {
		if tr.walked && d.restatAll == "" {
			d.restatAll = restatAfterWalk
		}
		snap, err := s.update(ctx, tr, ig, d, p)
		if err == nil {
			tr.updates++
			tr.walked = false
			return snap, nil
		}
		tr.root = nil
		if !errors.Is(err, errUncertain) {
			return port.Snapshot{}, err
		}
	}
	return s.walkTracked(ctx, tr, p, also)
}

// walkTracked is a full walk that (re)starts watching: every directory it opens is watched before
// it is listed.
func (s *Scanner) walkTracked(ctx context.Context, tr *tracking, p port.Progress, also []tree.Hash) (port.Snapshot, error) {
	tr.walks++
	if tr.w != nil {
		tr.w.close()
		tr.w = nil
	}
	w, err := s.newWatcher(s.layout.Root)
	if err != nil {
		tr.off = err.Error()
	} else {
		tr.w = w
	}
	tr.root = nil
	sc, root, err := s.run(ctx, p, true, also, tr.w)
	if err != nil {
		return port.Snapshot{}, err
	}
	snap, err := sc.finish(root, true)
	if err != nil {
		return snap, err
	}
	if tr.w != nil {
		if why := tr.w.permanent(); why != "" {
			tr.off = why
			tr.w.close()
			tr.w = nil
			return snap, nil
		}
		if len(snap.Unreadable) > 0 {
			// No event says when an unreadable path becomes readable (it cannot be watched): the
			// next snapshot walks again.
			return snap, nil
		}
		compact(root)
		tr.root, tr.fp, tr.unsaved, tr.walked = root, sc.ignore.fp, false, true
	}
	return snap, nil
}

// restatAfterWalk is why the first update after a walk stats every file: a walk is no instant,
// and a file it read before a hard link to it was made in a directory the walk had not watched
// yet, then written through that link, changed without an event for its name (a write through
// one name is an event for that name only, in a watched directory only). Its stat says so.
const restatAfterWalk = "the last snapshot walked the workspace while it could change"

// update is an incremental snapshot: tr.root brought up to date with what d names, then stored.
func (s *Scanner) update(ctx context.Context, tr *tracking, ig *Ignore, d dirtySet, p port.Progress) (port.Snapshot, error) {
	sc := &scan{s: s, ignore: ig, old: &statCache{}, store: true, w: tr.w, incremental: true, linkedSeen: map[inode]bool{},
		restatAll: d.restatAll != ""}
	sc.batch = s.store.NewBatch()
	root := tr.root
	if err := sc.applyDirty(ctx, root, d); err != nil {
		sc.abort()
		return port.Snapshot{}, err
	}
	var linked []*node
	sc.epoch, sc.epochOK = sc.batch.Epoch()
	sc.prepare(root, &linked)
	if err := sc.restatLinked(linked); err != nil {
		sc.abort()
		return port.Snapshot{}, err
	}
	if err := sc.hashAll(ctx, p); err != nil {
		sc.abort()
		return port.Snapshot{}, err
	}
	if err := ctx.Err(); err != nil { // cancelled while the last files were stored: commit nothing
		sc.abort()
		return port.Snapshot{}, err
	}
	if len(sc.unreadable) > 0 {
		// Something became unreadable: a walk records it (and keeps no tree to update).
		sc.abort()
		return port.Snapshot{}, errUncertain
	}
	snap, err := sc.finish(root, false)
	if err != nil {
		return snap, err
	}
	compact(root)
	tr.unsaved = tr.unsaved || !root.reused
	return snap, nil
}

// applyDirty updates the tree with what the events named: directories whose listing changed are
// listed again (vanished entries dropped), named entries stat'ed again; then the new (or replaced)
// subdirectories are walked whole. Parents are handled before their children, so a directory a
// change removed or replaced is never looked at under its old name; and every drop, which gives up
// the dropped directories' watches, comes before any walk, so that a directory moved within the
// workspace is watched afresh under its new name (a watch that stands for two names at once means
// one directory is in the workspace twice: the watcher then reports itself uncertain). Everything
// read again is marked fresh, its directory (and every ancestor) changed.
func (sc *scan) applyDirty(ctx context.Context, root *node, d dirtySet) error {
	for rel, wd := range d.lost {
		// The directory the tree holds at rel lost its watch (deleted): whatever has its name now
		// is a new directory, walked whole; its parent lists it again.
		if n := findNode(root, rel); n != nil && n.wd == wd {
			n.unwatched = true
			d.add(parentOf(rel), rel[strings.LastIndexByte(rel, '/')+1:], evEntry)
		}
	}
	rels := make([]string, 0, len(d.dirs))
	for rel := range d.dirs {
		rels = append(rels, rel)
	}
	slices.SortFunc(rels, func(a, b string) int {
		if da, db := strings.Count(a, "/")+min(len(a), 1), strings.Count(b, "/")+min(len(b), 1); da != db {
			return da - db
		}
		return strings.Compare(a, b)
	})
	rootFd, err := unix.Open(sc.s.layout.Root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open workspace %s: %w", sc.s.layout.Root, err)
	}
	defer func() { _ = unix.Close(rootFd) }()
	var touched []*node
	for _, rel := range rels {
		n := findNode(root, rel)
		if n == nil {
			continue // no longer a directory of the tree: a change above it dropped or replaced it
		}
		fd, err := openDirAt(rootFd, rel, n)
		if err != nil {
			return err
		}
		dd := d.dirs[rel]
		if dd.relist {
			err = sc.relist(n, fd, dd.names)
		} else {
			err = sc.restat(n, fd, dd.names)
		}
		_ = unix.Close(fd)
		if err != nil {
			return err
		}
		touched = append(touched, n)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(sc.s.workers * 2)
	for _, n := range touched {
		if err := sc.follow(gctx, g, rootFd, n); err != nil {
			_ = g.Wait()
			return err
		}
	}
	return g.Wait()
}

// openDirAt opens directory rel of the workspace (open as rootFd) one component at a time, never
// following a symlink, and checks it is the directory n was (same inode): anything else means it
// was replaced after the events were taken.
func openDirAt(rootFd int, rel string, n *node) (int, error) {
	fd, err := unix.Dup(rootFd)
	if err != nil {
		return -1, err
	}
	if rel != "" {
		for c := range strings.SplitSeq(rel, "/") {
			next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			_ = unix.Close(fd)
			if err != nil {
				if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) || errors.Is(err, fs.ErrPermission) {
					return -1, errUncertain
				}
				return -1, fmt.Errorf("open directory %q: %w", rel, err)
			}
			fd = next
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return -1, fmt.Errorf("stat directory %q: %w", displayRel(rel), err)
	}
	if k := keyOfStat(&st); k.Ino != n.ino || k.Dev != n.dev {
		_ = unix.Close(fd)
		return -1, errUncertain
	}
	return fd, nil
}

// findNode is the directory at rel in the tree, or nil.
func findNode(root *node, rel string) *node {
	n := root
	if rel == "" {
		return n
	}
	for c := range strings.SplitSeq(rel, "/") {
		i, ok := slices.BinarySearchFunc(n.children, c, func(it item, name string) int { return strings.Compare(it.name, name) })
		if !ok || n.children[i].kind != tree.KindDir || n.children[i].gone || n.children[i].dir == nil || n.children[i].dir.walked {
			return nil // not a directory of the tree, or one being walked whole
		}
		n = n.children[i].dir
	}
	return n
}

// markChanged notes that n's listing differs from its last tree, and so do its ancestors'.
func markChanged(n *node) {
	for ; n != nil && !n.changed; n = n.parent {
		n.changed = true
	}
}

// relist lists directory n (open as fd) again and merges the names with its entries: an entry no
// event named is kept as it is, a named or new one is stat'ed (a new or replaced subdirectory
// walked whole), a vanished one dropped.
func (sc *scan) relist(n *node, fd int, named map[string]uint8) error {
	names := getNameList()
	defer putNameList(names)
	if err := readNames(fd, names); err != nil {
		return fmt.Errorf("list directory %q: %w", displayRel(n.rel), err)
	}
	names.sort()
	old := n.children
	next := make([]item, 0, names.len())
	changed := false
	i := 0
	for k := range names.len() {
		nameB := names.name(k)
		for i < len(old) && old[i].name < alias(nameB) {
			sc.drop(&old[i])
			changed, i = true, i+1
		}
		var prev *item
		if i < len(old) && old[i].name == alias(nameB) {
			prev = &old[i]
			i++
		}
		flags, isNamed := named[string(nameB)]
		if prev != nil && !isNamed {
			next = append(next, *prev) // no event named it: as it was
			continue
		}
		it, keep, err := sc.reread(n, fd, names.namez(k), prev, flags)
		if err != nil {
			return err
		}
		if prev != nil && (!keep || it.fresh || it.kind != prev.kind) {
			sc.noteLinked(prev) // its other names in the tree may be what changed
		}
		if prev != nil && (!keep || prev.kind == tree.KindDir && it.dir != prev.dir) {
			sc.drop(prev) // gone, ignored now, or another directory under the same name
			changed = true
		}
		if !keep {
			continue
		}
		if prev == nil || it.fresh {
			changed = true
		}
		next = append(next, it)
	}
	for ; i < len(old); i++ {
		sc.drop(&old[i])
		changed = true
	}
	n.children = next
	if changed {
		markChanged(n)
	}
	return nil
}

// restat stats again the entries of directory n (open as fd) that events named. An entry that
// is not what the tree holds (new, gone, another kind, another directory) means the listing
// changed too: n is then listed again.
func (sc *scan) restat(n *node, fd int, named map[string]uint8) error {
	for name, flags := range named {
		i, ok := slices.BinarySearchFunc(n.children, name, func(it item, name string) int { return strings.Compare(it.name, name) })
		namez := append([]byte(name), 0)
		if !ok {
			_, keep, err := sc.reread(n, fd, namez, nil, flags)
			if err != nil {
				return err
			}
			if keep {
				return sc.relist(n, fd, named) // an entry the tree does not have
			}
			continue // gone, ignored, special or unstorable: in no tree
		}
		prev := &n.children[i]
		it, keep, err := sc.reread(n, fd, namez, prev, flags)
		if err != nil {
			return err
		}
		if !keep || it.kind != prev.kind || (it.kind == tree.KindDir && it.dir != prev.dir) {
			return sc.relist(n, fd, named)
		}
		if it.fresh {
			sc.noteLinked(prev)
			markChanged(n)
		}
		if it.fresh || it.key != prev.key {
			*prev = it
		}
	}
	return nil
}

// reread stats the entry namez of directory n (open as fd) that an event named (flags), prev being
// what the tree holds there (nil when nothing). A file is read again unless its stat key is the one
// recorded and no event said it was written; a subdirectory that is still the same directory keeps
// its subtree (new ones are walked by follow).
func (sc *scan) reread(n *node, fd int, namez []byte, prev *item, flags uint8) (item, bool, error) {
	var cached *cachedEntry
	if prev != nil {
		ce := cachedEntry{name: prev.name, kind: prev.kind, racy: prev.racy || prev.volatile || prev.shared, key: prev.key, hash: prev.hash, target: prev.target}
		if prev.kind == tree.KindFile && flags&evContent != 0 {
			ce.racy = true // written: whatever its stat says
		}
		if prev.kind == tree.KindDir {
			ce.mode, ce.hash = prev.mode, prev.hash
			if prev.dir != nil {
				ce.hash = prev.dir.hash
			}
		}
		cached = &ce
	}
	it, keep, err := sc.entry(n, fd, namez, cached)
	if err != nil || !keep {
		return it, keep, err
	}
	it.fresh = !it.hit
	if it.kind == tree.KindDir && prev != nil && prev.kind == tree.KindDir && prev.dir != nil && !prev.dir.unwatched &&
		prev.key.Ino == it.key.Ino && prev.key.Dev == it.key.Dev {
		it.dir, it.fresh = prev.dir, false // the same directory: its own events cover what is inside
		if it.mode != prev.mode {
			it.fresh = true
		}
	}
	if it.kind == tree.KindSymlink || it.kind == tree.KindDir {
		it.hit = !it.fresh
	}
	return it, true, nil
}

// follow walks the subdirectories of n that have no subtree yet (new, or replaced), and queues the
// files read again. n is opened again (from rootFd) only when it has such a subdirectory.
func (sc *scan) follow(ctx context.Context, g *errgroup.Group, rootFd int, n *node) error {
	var jobs []job
	fd := -1
	defer func() {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	}()
	for i := range n.children {
		c := &n.children[i]
		if c.kind == tree.KindDir && c.dir == nil && fd < 0 {
			var err error
			if fd, err = openDirAt(rootFd, n.rel, n); err != nil {
				return err
			}
		}
		switch {
		case c.kind == tree.KindDir && c.dir == nil:
			cfd, err := unix.Openat(fd, c.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if errors.Is(err, fs.ErrPermission) {
				return errUncertain // unreadable: a walk records it
			}
			if errors.Is(err, unix.ENOENT) {
				c.gone = true
				continue
			}
			if err != nil {
				return fmt.Errorf("open directory %q: %w", join(n.rel, c.name), err)
			}
			c.dir = &node{rel: join(n.rel, c.name), mode: c.mode, parent: n, ino: c.key.Ino, dev: c.key.Dev, walked: true}
			child := c.dir
			markChanged(child)
			g.Go(func() error { return sc.walk(ctx, g, child, cfd) })
		case c.kind == tree.KindFile && c.fresh:
			jobs = append(jobs, job{rel: join(n.rel, c.name), it: c})
		}
		if c.fresh {
			markChanged(n)
		}
	}
	if len(jobs) > 0 {
		sc.mu.Lock()
		sc.jobs = append(sc.jobs, jobs...)
		sc.mu.Unlock()
	}
	return nil
}

// drop removes an entry from the tree: a directory's watches are given up, and the inodes of the
// files with other links it held are noted (noteLinked).
func (sc *scan) drop(it *item) {
	sc.noteLinked(it)
	if it.kind != tree.KindDir || it.dir == nil {
		return
	}
	var forget func(n *node)
	forget = func(n *node) {
		if n.wd > 0 && sc.w != nil {
			sc.w.forget(n.rel, n.wd)
		}
		for i := range n.children {
			c := &n.children[i]
			sc.noteLinked(c)
			if c.dir != nil {
				forget(c.dir)
			}
		}
	}
	forget(it.dir)
}

// noteLinked notes the inode of it, a file of the tree with other hard links that an event
// touched (written, removed, replaced): a write through it, or before it went, is no event for its
// other names, so prepare reads every other name of that inode the tree holds again.
func (sc *scan) noteLinked(it *item) {
	if it.kind != tree.KindFile || !it.links {
		return
	}
	sc.mu.Lock()
	sc.linkedSeen[it.inode()] = true
	sc.mu.Unlock()
}

// prepare readies n's subtree for buildTrees after the events were applied: every file not read
// again must still be Present in the store (Batch.Has, which also notes it for a shared store's
// Confirm), or it is read and stored again; unchanged directories offer their tree for reuse. It
// says whether the subtree is clean (nothing in it read again or changed, every file Present), and
// lists the directories holding files with other hard links. One store lookup per file is the bulk
// of a snapshot after which nothing changed; lookups from two goroutines measured slower (the
// store's lock), so it runs in one. A subtree confirmed clean at the store's current epoch, and
// untouched since, is taken as clean without them (see node.confirmed): the epoch changes whenever
// the store's view may have lost an object, so that subtree's objects are all still held.
func (sc *scan) prepare(n *node, linked *[]*node) bool {
	n.base, n.reused = n.hash, false
	if sc.epochOK && n.confirmed == sc.epoch && !n.changed && !sc.restatAll && len(sc.linkedSeen) == 0 {
		n.clean = true
		return true
	}
	n.confirmed = 0
	clean := !n.changed
	hasLinks, subConfirmed := false, true
	for i := range n.children {
		it := &n.children[i]
		switch it.kind {
		case tree.KindFile:
			if !it.fresh && len(sc.linkedSeen) > 0 && sc.linkedSeen[it.inode()] {
				// Another name of this inode was written, made or removed: this one was not named.
				it.links, it.fresh = true, true
				sc.jobs = append(sc.jobs, job{rel: join(n.rel, it.name), it: it})
				markChanged(n)
			}
			if !it.fresh {
				if it.hit = sc.batch.Has(it.hash); !it.hit {
					it.fresh = true
					sc.jobs = append(sc.jobs, job{rel: join(n.rel, it.name), it: it})
					markChanged(n)
				}
			}
			clean = clean && !it.fresh
			hasLinks = hasLinks || it.links
		case tree.KindSymlink:
			it.hit = !it.fresh
			clean = clean && it.hit
		case tree.KindDir:
			if it.dir != nil {
				it.cached, it.cachedMode = it.dir.hash, it.mode
				clean = sc.prepare(it.dir, linked) && clean
				subConfirmed = subConfirmed && it.dir.confirmed == sc.epoch
			}
		}
	}
	if hasLinks || (sc.restatAll && len(n.children) > 0) {
		*linked = append(*linked, n)
	}
	n.clean = clean && !n.changed
	if n.clean && sc.epochOK && !hasLinks && subConfirmed && !sc.restatAll {
		n.confirmed = sc.epoch
	}
	return n.clean
}

// restatLinked stats the files with other hard links again (every file, when the events say one
// may have had a link they do not name: restatAll): a write through another link makes no event
// here. A file whose inode has another name in the tree is read again whatever its stat says (see
// sharedInodes); one that is not the file it was makes the snapshot walk.
func (sc *scan) restatLinked(dirs []*node) error {
	if len(dirs) == 0 {
		return nil
	}
	names := map[inode]int{}
	for _, n := range dirs {
		for i := range n.children {
			if it := &n.children[i]; it.kind == tree.KindFile && it.links {
				names[it.inode()]++
			}
		}
	}
	rootFd, err := unix.Open(sc.s.layout.Root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open workspace %s: %w", sc.s.layout.Root, err)
	}
	defer func() { _ = unix.Close(rootFd) }()
	for _, n := range dirs {
		fd, err := openDirAt(rootFd, n.rel, n)
		if err != nil {
			return err
		}
		for i := range n.children {
			it := &n.children[i]
			if it.kind != tree.KindFile || (!it.links && !sc.restatAll) {
				continue
			}
			shared := it.links && names[it.inode()] > 1
			if it.fresh {
				it.shared = shared
				continue
			}
			var flags uint8
			if shared {
				flags = evContent // read again, whatever its stat says
			}
			got, keep, err := sc.reread(n, fd, append([]byte(it.name), 0), it, flags)
			if err != nil || !keep || got.kind != tree.KindFile {
				_ = unix.Close(fd)
				if err == nil {
					err = errUncertain
				}
				return err
			}
			if got.fresh {
				*it = got
				sc.jobs = append(sc.jobs, job{rel: join(n.rel, it.name), it: it})
				markChanged(n)
			}
			it.shared = shared
		}
		_ = unix.Close(fd)
	}
	return nil
}

// compact drops what a snapshot found gone from the tree it keeps, and clears the per-snapshot
// marks. A reused directory has neither.
func compact(n *node) {
	if n.reused {
		return
	}
	n.changed, n.walked = false, false
	kept := n.children[:0]
	for i := range n.children {
		it := n.children[i]
		if it.gone {
			continue
		}
		it.fresh = false
		kept = append(kept, it)
		if it.dir != nil {
			compact(it.dir)
		}
	}
	clear(n.children[len(kept):])
	n.children = kept
}
