package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// smallFile is the size up to which a file is read into memory once; larger files are streamed
// twice (hash, then store) so memory stays bounded whatever their size.
const smallFile = 8 << 20

// maxAttempts bounds how often a file that keeps changing while being read is retried.
const maxAttempts = 5

// Scanner records the live workspace into the object store.
type Scanner struct {
	layout  Layout
	store   *objectstore.Store
	workers int
	clock   func() time.Time

	trackMu sync.Mutex // guards tr and trackOff
	tr      *tracking  // set while a command follows the workspace's changes (Track)
	// trackOff, when not "", is why tracking is off (TrackOff): Track follows nothing.
	trackOff string
	// newWatcher starts watching for a tracked snapshot; tests replace it, and set afterTake to act
	// between a tracked snapshot's taking of the events and its reading of the workspace.
	newWatcher func(root string) (watcher, error)
	afterTake  func()
}

// NewScanner returns a scanner for the workspace in l storing into store.
func NewScanner(l Layout, store *objectstore.Store) *Scanner {
	return &Scanner{layout: l, store: store, workers: max(2, runtime.GOMAXPROCS(0)), clock: time.Now, newWatcher: startWatcher}
}

var _ port.Snapshotter = (*Scanner)(nil)

// node is one directory of a scan.
type node struct {
	rel      string
	mode     uint32
	children []item // sorted by name
	// base is the tree the directory had at the last snapshot (from the stat cache): the base its
	// new tree is stored as a delta against, and the tree reused when nothing in it changed.
	base tree.Hash
	// exact says the live listing equals the stat cache's record, name for name and kind for kind,
	// and the record is exact (see statcache.go).
	exact bool
	// hash is the directory's tree once built; reused says it is base, taken without encoding.
	hash   tree.Hash
	reused bool
	// parent, ino and dev identify the directory while a tracked snapshot keeps the tree; wd is
	// its watch, changed says an event touched it since the last snapshot (see track.go).
	parent   *node
	ino, dev uint64
	wd       int32
	changed  bool
	// unwatched says the kernel removed wd (the directory was deleted): a directory found under
	// its name is another one, whatever its inode number.
	unwatched bool
	walked    bool // new in this snapshot, walked whole
	// clean says prepare found nothing changed in the subtree and every object it holds Present.
	clean bool
	// confirmed is the store epoch (Batch.Epoch, never 0) at which prepare last found the subtree
	// clean and free of files with other hard links (0: never): while the epoch lasts and no event
	// touches it, the next prepare takes it as clean without a lookup per file.
	confirmed uint64
	// files and bytes count the files and symlinks of the subtree, as of its last build.
	files, bytes int64
}

// item is one entry of a directory.
type item struct {
	name   string
	kind   tree.Kind
	mode   uint32
	size   int64
	hash   tree.Hash
	target string
	key    statKey
	dir    *node
	// hit says a file or symlink is exactly as its stat cache entry recorded it (and, when storing,
	// its content is Present in the store): nothing was read.
	hit bool
	// racy marks an entry observed within its timestamps' tick; volatile one recorded from a copy
	// of a file that kept changing. The stat cache never trusts either next time.
	racy, volatile bool
	// cached and cachedMode are, for a directory, the tree and mode its stat cache entry names;
	// cached is, for a file, the content last recorded at its path (the base a delta is made
	// against when it changed).
	cached     tree.Hash
	cachedMode uint32
	// gone marks a file removed after it was listed: it is not part of the snapshot.
	gone bool
	// links says the file has other hard links, through which it can change without an event in
	// the workspace; fresh that a tracked snapshot read it again (see track.go).
	links, fresh bool
	// shared says the file's inode has another name in the workspace too: it is read again at
	// every snapshot, never trusted from its stat alone (see sharedInodes).
	shared bool
}

// inode identifies a file by its device and inode numbers.
type inode struct{ dev, ino uint64 }

func (it *item) inode() inode { return inode{it.key.Dev, it.key.Ino} }

type scan struct {
	s      *Scanner
	ignore *Ignore
	old    *statCache
	store  bool
	batch  *objectstore.Batch
	// w, when set, watches every directory the walk opens; incremental says the scan updates a
	// tracked tree rather than walking the whole workspace.
	w           watcher
	incremental bool

	mu      sync.Mutex // guards the fields below
	jobs    []job
	hitDirs []*node // directories with files the stat cache vouched for (see confirmHits)
	linked  []job   // a walk's files with other hard links (see sharedInodes)
	// linkedSeen, in a tracked snapshot, are the inodes of the files with other links it stat'ed
	// or dropped: any other name of theirs in the tree is read again (see prepare). restatAll
	// says the events left a doubt about links only a stat of every file settles (dirtySet).
	linkedSeen map[inode]bool
	restatAll  bool
	// epoch, when epochOK, is the store epoch read before prepare's first lookup (see confirmed),
	// or, in a walk, with the view.
	epoch   uint64
	epochOK bool
	// view is the store's ConfirmStamp when a walk's hits were confirmed (or taken from a stat
	// cache confirmed in that very view), at epoch; viewOK says the store gave one.
	view     tree.Hash
	viewOK   bool
	viewed   bool // the stat cache was confirmed in view: its hits and trees need no lookup
	warnings []string
	stored   int64
	// unreadable are the paths the scan could not read (permission denied): left out of the
	// snapshot, and recorded with its tree (see unreadable.go).
	unreadable []string
}

type job struct {
	rel string
	it  *item
}

// Snapshot stores every new object of the live workspace and returns the durable root tree. The
// ignore rules recorded in the trees also names apply on top of the live ones (see Ignore).
func (s *Scanner) Snapshot(ctx context.Context, p port.Progress, also ...tree.Hash) (port.Snapshot, error) {
	if tr := s.tracking(); tr != nil {
		return s.trackedSnapshot(ctx, tr, p, also)
	}
	sc, root, err := s.run(ctx, p, true, also, nil)
	if err != nil {
		return port.Snapshot{}, err
	}
	return sc.finish(root, true)
}

// finish stores the trees of a walked snapshot, commits them and, with saveCache, writes the stat
// cache when anything differs from it.
func (sc *scan) finish(root *node, saveCache bool) (port.Snapshot, error) {
	s := sc.s
	rootHash, err := sc.buildTrees(root)
	if err != nil {
		sc.batch.Abort()
		return port.Snapshot{}, err
	}
	if err := sc.batch.Commit(); err != nil {
		sc.batch.Abort()
		return port.Snapshot{}, fmt.Errorf("make objects durable: %w", err)
	}
	unreadable, err := sc.recordUnreadable(rootHash)
	if err != nil {
		return port.Snapshot{}, err
	}
	files, bytes := root.files, root.bytes
	stamp := sc.endStamp()
	if saveCache && (!root.reused || stamp != sc.old.stamp) {
		// A root reused means every directory was, so the cache already says all of it (but
		// perhaps not for this view of the store).
		if err := saveStatCache(s.layout.StatCache(), encodeNodes(root, files, stamp)); err != nil {
			// The snapshot is durable; a stale cache only costs re-hashing next time.
			sc.warnings = append(sc.warnings, "could not save the stat cache: "+err.Error())
		}
	}
	return port.Snapshot{
		Root: rootHash, Files: files, Bytes: bytes, StoredBytes: sc.stored, Warnings: sc.warnings, Unreadable: unreadable,
	}, nil
}

// recordUnreadable records, once the snapshot's objects are durable and before the snapshot is
// returned (so before any checkpoint names its tree), the paths the scan could not read, and warns
// of them. It returns them sorted.
func (sc *scan) recordUnreadable(root tree.Hash) ([]string, error) {
	if len(sc.unreadable) == 0 {
		return nil, nil
	}
	paths := slices.Clone(sc.unreadable)
	slices.Sort(paths)
	paths = slices.Compact(paths)
	if err := saveUnreadable(sc.s.layout, root, paths); err != nil {
		return nil, err
	}
	sc.warnings = append(sc.warnings, UnreadableWarning(paths))
	return paths, nil
}

// UnreadableWarning names the paths a snapshot leaves out because it could not read them.
func UnreadableWarning(paths []string) string {
	shown := paths
	more := ""
	if len(shown) > 5 {
		shown, more = shown[:5], fmt.Sprintf(" and %d more", len(paths)-5)
	}
	q := make([]string, len(shown))
	for i, p := range shown {
		q[i] = fmt.Sprintf("%q", p)
	}
	return fmt.Sprintf("could not read %s%s (permission denied): not checkpointed, and left alone by every rollback; make it readable, or exclude it in %s",
		strings.Join(q, ", "), more, IgnoreFile)
}

// cannotRead notes rel as a path the scan could not read when err is a permission error, and
// reports whether it was.
func (sc *scan) cannotRead(rel string, err error) bool {
	if !errors.Is(err, fs.ErrPermission) {
		return false
	}
	sc.mu.Lock()
	sc.unreadable = append(sc.unreadable, rel)
	sc.mu.Unlock()
	return true
}

// Scan returns the live workspace as an ordered entry list, storing nothing.
func (s *Scanner) Scan(ctx context.Context, p port.Progress) ([]tree.Entry, error) {
	entries, _, err := s.ScanReadable(ctx, p)
	return entries, err
}

// ScanReadable is Scan that also returns, sorted, the live paths it could not read (permission
// denied), which the entries leave out.
func (s *Scanner) ScanReadable(ctx context.Context, p port.Progress) ([]tree.Entry, []string, error) {
	sc, root, err := s.run(ctx, p, false, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	if _, err := sc.buildTrees(root); err != nil {
		return nil, nil, err
	}
	out := make([]tree.Entry, 0, root.files)
	flattenNode(root, "", &out)
	slices.Sort(sc.unreadable)
	return out, slices.Compact(sc.unreadable), nil
}

// run walks the whole workspace (watching every directory with w, when set) and hashes what the
// stat cache does not vouch for.
func (s *Scanner) run(ctx context.Context, p port.Progress, store bool, also []tree.Hash, w watcher) (*scan, *node, error) {
	ig, err := s.ignoreWith(also)
	if err != nil {
		return nil, nil, err
	}
	sc := &scan{s: s, ignore: ig, old: loadStatCache(s.layout.StatCache()), store: store, w: w}
	if store {
		sc.batch = s.store.NewBatch()
	}
	rootFd, err := unix.Open(s.layout.Root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		sc.abort()
		return nil, nil, fmt.Errorf("open workspace %s: %w", s.layout.Root, err)
	}
	root := &node{}
	var st unix.Stat_t
	if err := unix.Fstat(rootFd, &st); err != nil {
		_ = unix.Close(rootFd)
		sc.abort()
		return nil, nil, fmt.Errorf("open workspace %s: %w", s.layout.Root, err)
	}
	root.ino, root.dev = keyOfStat(&st).Ino, keyOfStat(&st).Dev
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.workers * 2)
	g.Go(func() error { return sc.walk(gctx, g, root, rootFd) })
	if err := g.Wait(); err != nil {
		sc.abort()
		return nil, nil, err
	}
	sc.sharedInodes(sc.linked)
	if sc.store {
		sc.view, sc.epoch, sc.viewOK = sc.batch.ConfirmStamp()
		// The stat cache's files and trees were all confirmed present in the view it names: in
		// the same view they still are, and are not looked up one by one again.
		sc.viewed = sc.viewOK && !sc.old.stamp.IsZero() && sc.old.stamp == sc.view
		if !sc.viewed {
			sc.confirmHits()
		} else if err := sc.s.store.CheckIndex(); err != nil {
			// The lookups would have checked every idx they went through: so is each here, once,
			// and a damaged one refused with its repair as then.
			sc.abort()
			return nil, nil, err
		}
	}
	if err := sc.hashAll(ctx, p); err != nil {
		sc.abort()
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil { // cancelled while the last files were stored: commit nothing
		sc.abort()
		return nil, nil, err
	}
	return sc, root, nil
}

// endStamp is the view of the store this snapshot's files are all confirmed present in, once it
// is committed: the view now, when it has lost nothing since the start of the scan (the same epoch:
// only packs were added, by this process or another), and zero otherwise.
func (sc *scan) endStamp() tree.Hash {
	if !sc.viewOK {
		return tree.Hash{}
	}
	view, epoch, ok := sc.batch.ConfirmStamp()
	if !ok || epoch != sc.epoch {
		return tree.Hash{}
	}
	return view
}

func (sc *scan) abort() {
	if sc.batch != nil {
		sc.batch.Abort()
	}
}

func (sc *scan) abs(rel string) string {
	if rel == "" {
		return sc.s.layout.Root
	}
	return filepath.Join(sc.s.layout.Root, filepath.FromSlash(rel))
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func (sc *scan) warn(format string, args ...any) {
	sc.mu.Lock()
	sc.warnings = append(sc.warnings, fmt.Sprintf(format, args...))
	sc.mu.Unlock()
}

// walk lists directory n (open as fd, which walk closes), queues files that need hashing and
// descends, in parallel where the group has room and inline otherwise. Every lookup is relative to
// the directory's descriptor (openat/fstatat, never following a symlink), which is both what keeps a
// concurrent rename from redirecting the walk and what makes it as cheap as find(1).
//
// The live names, sorted, are merged with the directory's stat cache record (sorted the same way):
// an entry whose stat key is the one recorded takes its hash (or target) from the record, and its
// name, so an unchanged entry costs one fstatat and no allocation.
func (sc *scan) walk(ctx context.Context, g *errgroup.Group, n *node, fd int) error {
	defer func() { _ = unix.Close(fd) }()
	if err := ctx.Err(); err != nil {
		return err
	}
	if sc.w != nil {
		// Watched before it is listed: a change after this point is an event, one before it is
		// in the listing.
		n.wd = sc.w.watch(n.rel, fd, n.dev)
	}
	names := getNameList()
	defer putNameList(names)
	if err := readNames(fd, names); err != nil {
		return fmt.Errorf("list directory %q: %w", displayRel(n.rel), err)
	}
	names.sort()
	rec, hasRec := sc.old.dir(n.rel)
	n.base = rec.hash
	if hasRec && !rec.wellFormed() {
		hasRec = false // a damaged record vouches for nothing, not even the entries before the damage
	}
	exact := hasRec && rec.exact
	recorded := rec.iter()
	var ce cachedEntry
	have := hasRec && recorded.next(&ce)
	n.children = make([]item, 0, names.len())
	var queued, linked []int
	hits := 0
	for i := range names.len() {
		nameB := names.name(i)
		for have && ce.name < alias(nameB) {
			exact, have = false, recorded.next(&ce) // recorded, no longer there
		}
		var cached *cachedEntry
		if have && ce.name == alias(nameB) {
			cached = &ce
		}
		it, keep, err := sc.entry(n, fd, names.namez(i), cached)
		if err != nil {
			return err
		}
		if cached != nil {
			if !keep || it.kind != cached.kind {
				exact = false
			}
			have = recorded.next(&ce)
		} else if keep {
			exact = false // a new entry
		}
		if !keep {
			continue
		}
		n.children = append(n.children, it)
		c := &n.children[len(n.children)-1]
		switch {
		case c.kind == tree.KindDir:
			cfd, err := openSubdir(fd, c.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if errors.Is(err, unix.ENOENT) || sc.cannotRead(join(n.rel, c.name), err) {
				c.gone = true // removed since it was listed, or unreadable: not part of this snapshot
				continue
			}
			if err != nil {
				return fmt.Errorf("open directory %q: %w", join(n.rel, c.name), err)
			}
			c.dir = &node{rel: join(n.rel, c.name), mode: c.mode, parent: n, ino: c.key.Ino, dev: c.key.Dev}
			child := c.dir
			if !g.TryGo(func() error { return sc.walk(ctx, g, child, cfd) }) {
				if err := sc.walk(ctx, g, child, cfd); err != nil {
					return err
				}
			}
		case c.kind == tree.KindFile && !c.hit:
			c.fresh = true
			queued = append(queued, len(n.children)-1)
		case c.kind == tree.KindFile:
			hits++
		}
		if c.kind == tree.KindFile && c.links {
			linked = append(linked, len(n.children)-1)
		}
	}
	if have || recorded.err != nil {
		exact = false
	}
	n.exact = exact
	if len(linked) > 0 && !sc.incremental {
		jobs := make([]job, len(linked))
		for k, i := range linked {
			jobs[k] = job{rel: join(n.rel, n.children[i].name), it: &n.children[i]}
		}
		sc.mu.Lock()
		sc.linked = append(sc.linked, jobs...)
		sc.mu.Unlock()
	}
	if len(queued) > 0 || (hits > 0 && sc.store) {
		jobs := make([]job, len(queued))
		for k, i := range queued {
			jobs[k] = job{rel: join(n.rel, n.children[i].name), it: &n.children[i]}
		}
		sc.mu.Lock()
		sc.jobs = append(sc.jobs, jobs...)
		if hits > 0 && sc.store {
			sc.hitDirs = append(sc.hitDirs, n)
		}
		sc.mu.Unlock()
	}
	return nil
}

// sharedInodes marks the files of linked (files with other hard links) whose inode has another
// name among them, that is another name in the workspace, and has every one of those read again,
// whatever the stat cache says: a write through one name is an event for that name only, and the
// stat cache vouches for what it saw at the name it recorded, so neither may vouch for the others.
// A file whose other links are all outside keeps the stat cache's rule. It reports the files
// queued.
func (sc *scan) sharedInodes(linked []job) []job {
	if len(linked) < 2 {
		return nil
	}
	names := make(map[inode]int, len(linked))
	for _, j := range linked {
		names[j.it.inode()]++
	}
	var queued []job
	for _, j := range linked {
		j.it.shared = names[j.it.inode()] > 1
		if j.it.shared && !j.it.fresh {
			j.it.hit, j.it.fresh = false, true
			queued = append(queued, j)
		}
	}
	sc.jobs = append(sc.jobs, queued...)
	return queued
}

// confirmHits checks, after the walk, that the store holds every file the stat cache vouched for
// (Batch.Has, which also notes it for a shared store's Confirm); one it does not hold is read and
// stored again. The lookups run in one goroutine: from the parallel walkers they contended on the
// store's lock and cost more in all.
func (sc *scan) confirmHits() {
	for _, n := range sc.hitDirs {
		for i := range n.children {
			it := &n.children[i]
			if it.kind == tree.KindFile && it.hit && !sc.batch.Has(it.hash) {
				it.hit, it.fresh = false, true
				sc.jobs = append(sc.jobs, job{rel: join(n.rel, it.name), it: it})
			}
		}
	}
}

// entry stats one listed name of directory n (open as fd) and returns its item; keep is false for
// what the snapshot leaves out (ignored, special, vanished, or a name that cannot be stored).
func (sc *scan) entry(n *node, fd int, namez []byte, cached *cachedEntry) (item, bool, error) {
	nameB := namez[:len(namez)-1]
	var st unix.Stat_t
	if err := statAt(fd, namez, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return item{}, false, nil // removed since listed: not part of this snapshot
		}
		if name := string(nameB); errors.Is(err, fs.ErrPermission) {
			// Its directory may be listed, not searched: unless the rules exclude it (as a
			// directory or not, which the stat would have said), it is unreadable.
			if !sc.ignore.skipChild(n.rel, name, false) && !sc.ignore.skipChild(n.rel, name, true) {
				sc.cannotRead(join(n.rel, name), err)
			}
			return item{}, false, nil
		}
		return item{}, false, fmt.Errorf("stat %q: %w", join(n.rel, string(nameB)), err)
	}
	var name string
	if cached != nil {
		name = cached.name // validated when it was recorded; shares the cache's buffer
	} else {
		name = string(nameB)
		if !storable(name) {
			sc.warn("skipped %q: its name cannot be stored", join(n.rel, name))
			return item{}, false, nil
		}
	}
	mode := statMode(&st)
	isDir := mode&unix.S_IFMT == unix.S_IFDIR
	if len(n.rel)+1+len(name) > tree.MaxPathLen {
		if rel := join(n.rel, name); len(rel) > tree.MaxPathLen && !sc.ignore.SkipPath(rel, isDir) {
			// Recorded, it could not be restored (the restorer refuses such paths): refuse the
			// checkpoint rather than take one that cannot be rolled back to.
			return item{}, false, fault.Invalid("%q… is %d bytes long, more than the %d a path may have: exclude it in %s",
				rel[:64], len(rel), tree.MaxPathLen, IgnoreFile)
		}
	}
	it := item{name: name, mode: mode & tree.ModeMask, key: keyOfStat(&st)}
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if sc.ignore.skipChild(n.rel, name, true) {
			return item{}, false, nil
		}
		it.kind = tree.KindDir
		if cached != nil && cached.kind == tree.KindDir {
			it.cached, it.cachedMode = cached.hash, cached.mode
		}
	case unix.S_IFLNK:
		if sc.ignore.skipChild(n.rel, name, false) {
			return item{}, false, nil
		}
		it.kind, it.mode = tree.KindSymlink, 0o777
		if cached != nil && cached.kind == tree.KindSymlink && !cached.racy && cached.key == it.key {
			it.target, it.size, it.hit = cached.target, int64(len(cached.target)), true
			break
		}
		target, err := readlinkat(fd, name)
		if err != nil {
			return item{}, false, fmt.Errorf("read symlink %q: %w", join(n.rel, name), err)
		}
		if target == "" || len(target) > 4096 || strings.IndexByte(target, 0) >= 0 {
			sc.warn("skipped symlink %q: its target cannot be stored", join(n.rel, name))
			return item{}, false, nil
		}
		it.target, it.size = target, int64(len(target))
	case unix.S_IFREG:
		if sc.ignore.skipChild(n.rel, name, false) {
			return item{}, false, nil
		}
		it.kind, it.size, it.links = tree.KindFile, st.Size, st.Nlink > 1
		if it.links && sc.incremental {
			sc.mu.Lock()
			sc.linkedSeen[it.inode()] = true
			sc.mu.Unlock()
		}
		if cached != nil && cached.kind == tree.KindFile {
			it.cached = cached.hash
			if !cached.racy && cached.key == it.key {
				it.hash, it.hit = cached.hash, true // when storing, confirmHits checks the store holds it
			}
		}
	default:
		if !sc.ignore.skipChild(n.rel, name, false) {
			sc.warn("skipped special file %q (%s)", join(n.rel, name), typeName(unixType(mode)))
		}
		return item{}, false, nil
	}
	return it, true, nil
}

// storable reports whether a tree can hold an entry of this name.
func storable(name string) bool { return tree.ValidateName(name) == nil }

// unixType maps a st_mode file type to Go's mode bits, for messages.
func unixType(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}

func readlinkat(fd int, name string) (string, error) {
	for size := 256; size <= 1<<16; size *= 4 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(fd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
	return "", errors.New("symlink target too long")
}

func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "irregular file"
}

func displayRel(rel string) string {
	if rel == "" {
		return "."
	}
	return rel
}

// hashAll reads and hashes every queued file with a few workers, storing content when snapshotting.
func (sc *scan) hashAll(ctx context.Context, p port.Progress) error {
	if len(sc.jobs) == 0 {
		return nil
	}
	var total int64
	for _, j := range sc.jobs {
		total += j.it.size
	}
	if p != nil {
		p.Start("reading files", total)
		defer p.Done()
	}
	ch := make(chan job)
	g, gctx := errgroup.WithContext(ctx)
	for range sc.s.workers {
		g.Go(func() error {
			bufp := new([]byte)
			for j := range ch {
				if err := sc.hashOne(gctx, j, bufp); err != nil {
					return err
				}
				if p != nil {
					p.Add(j.it.size)
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(ch)
		for _, j := range sc.jobs {
			select {
			case ch <- j:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	return g.Wait()
}

// errChanged reports a file that changed while it was read; the caller retries.
// The scan's three calls that a permission can refuse, as variables: the tests run as root, whom no
// permission refuses, and stand in for a refusal here.
var (
	openSubdir = unix.Openat
	statAt     = lstatAt
	openFile   = os.OpenFile
)

var errChanged = errors.New("file changed while being read")

func (sc *scan) hashOne(ctx context.Context, j job, bufp *[]byte) error {
	var err error
	for range maxAttempts {
		if err = ctx.Err(); err != nil {
			return err
		}
		err = sc.tryHash(j, bufp)
		if !errors.Is(err, errChanged) && !errors.Is(err, objectstore.ErrContentChanged) {
			return err
		}
	}
	// A file written to all along (a growing log): record what one read returned, as backup tools
	// do for live files, rather than fail the checkpoint.
	return sc.hashCopy(j)
}

// hashCopy records a file that keeps changing as the bytes one read of it returned: they are
// copied to a private temporary file while being hashed, so the object stored is exactly the bytes
// hashed whatever the writer does meanwhile. The stat cache does not remember it: the next scan
// reads it again. A warning names it.
func (sc *scan) hashCopy(j job) error {
	f, err := os.OpenFile(sc.abs(j.rel), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		j.it.gone = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %q: %w", j.rel, err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %q: %w", j.rel, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%q kept changing while it was read, and is no longer a regular file", j.rel)
	}
	var dst io.Writer
	var tmp *os.File
	if sc.store {
		if tmp, err = os.CreateTemp(sc.s.layout.State(), "live-copy-*"); err != nil {
			return fmt.Errorf("copy %q: %w", j.rel, err)
		}
		defer func() { _ = tmp.Close(); _ = os.Remove(tmp.Name()) }()
		dst = tmp
	} else {
		dst = io.Discard
	}
	hw := sha256.New()
	n, err := io.Copy(io.MultiWriter(dst, hw), io.LimitReader(f, fi.Size()))
	if err != nil {
		return fmt.Errorf("read %q: %w", j.rel, err)
	}
	h := tree.Hash(hw.Sum(nil))
	if sc.store && !sc.batch.Has(h) {
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("copy %q: %w", j.rel, err)
		}
		stored, err := sc.batch.PutBlob(tmp, h, n)
		if err != nil {
			return fmt.Errorf("store %q: %w", j.rel, err)
		}
		sc.mu.Lock()
		sc.stored += stored
		sc.mu.Unlock()
	}
	j.it.hash, j.it.size, j.it.volatile = h, n, true
	j.it.mode = tree.UnixMode(fi.Mode())
	sc.warn("%s kept changing while it was read (%d attempts): recorded the %d bytes one read returned", displayRel(j.rel), maxAttempts, n)
	return nil
}

func (sc *scan) tryHash(j job, bufp *[]byte) error {
	abs := sc.abs(j.rel)
	f, err := openFile(abs, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		// Removed between the listing and now: the snapshot is of the tree without it, exactly as if
		// the listing had come a moment later.
		j.it.gone = true
		return nil
	}
	if sc.cannotRead(j.rel, err) {
		j.it.gone = true // not part of the snapshot; recorded as unreadable, never as deleted
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %q: %w", j.rel, err)
	}
	defer func() { _ = f.Close() }()
	before, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %q: %w", j.rel, err)
	}
	if !before.Mode().IsRegular() {
		return fmt.Errorf("%q: %w (no longer a regular file)", j.rel, errChanged)
	}
	observed := sc.s.clock()
	size := before.Size()
	var h tree.Hash
	var data []byte
	if size <= smallFile {
		data, err = readAll(f, size, bufp)
		if err != nil {
			return fmt.Errorf("read %q: %w", j.rel, err)
		}
		h = sha256.Sum256(data)
	} else {
		hw := sha256.New()
		n, err := io.Copy(hw, f)
		if err != nil {
			return fmt.Errorf("read %q: %w", j.rel, err)
		}
		if n != size {
			return errChanged
		}
		copy(h[:], hw.Sum(nil))
	}
	after, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %q: %w", j.rel, err)
	}
	kb, _ := keyOf(before)
	ka, _ := keyOf(after)
	if kb != ka {
		return errChanged
	}
	if sc.store && !sc.batch.Has(h) {
		var r io.Reader
		if data != nil {
			r = bytes.NewReader(data)
		} else {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return fmt.Errorf("rewind %q: %w", j.rel, err)
			}
			r = f
		}
		// The content the stat cache last saw at this path is the likeliest base for a delta.
		n, err := sc.batch.PutBlobDelta(r, h, size, j.it.cached)
		if err != nil {
			return fmt.Errorf("store %q: %w", j.rel, err)
		}
		sc.mu.Lock()
		sc.stored += n
		sc.mu.Unlock()
	}
	j.it.hash, j.it.size, j.it.key = h, size, ka
	j.it.mode = tree.UnixMode(after.Mode())
	j.it.racy = racy(ka, observed)
	return nil
}

// readAll reads exactly size bytes (and checks for more) into a reusable buffer.
func readAll(f *os.File, size int64, bufp *[]byte) ([]byte, error) {
	if int64(cap(*bufp)) < size+1 {
		*bufp = make([]byte, size+1, max(size+1, 64<<10))
	}
	buf := (*bufp)[:size+1]
	n, err := io.ReadFull(f, buf)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		if int64(n) != size {
			return nil, errChanged
		}
		return buf[:n], nil
	case err != nil:
		return nil, err
	}
	return nil, errChanged // more bytes than stat said: still being written
}

// buildTrees computes the Merkle trees bottom-up, storing them when snapshotting, and returns the
// root hash. A directory whose listing matched its exact stat cache record and whose entries all
// did (files and symlinks unchanged, subdirectories reused) has the tree it had: its recorded hash
// is taken as it is, neither encoded nor hashed again (when storing, once the store confirms it
// Present, or the stat cache was confirmed in the store's present view). Any other tree is stored
// as a delta against the tree the same directory had at the last snapshot, which is what keeps a
// small change in a large tree small in the store.
func (sc *scan) buildTrees(n *node) (tree.Hash, error) {
	reuse := n.exact && !n.base.IsZero()
	if sc.incremental {
		// The tree of the last snapshot, unless events touched it; a subtree prepare found clean
		// (every object in it confirmed) is not even looked into.
		reuse = !n.changed && !n.base.IsZero()
		if reuse && n.clean && sc.batch.Has(n.base) {
			n.hash, n.reused = n.base, true
			return n.base, nil
		}
	}
	n.files, n.bytes = 0, 0
	for i := range n.children {
		it := &n.children[i]
		switch {
		case it.gone:
			reuse = false
		case it.kind == tree.KindDir:
			h, err := sc.buildTrees(it.dir)
			if err != nil {
				return tree.ZeroHash, err
			}
			it.hash = h
			n.files, n.bytes = n.files+it.dir.files, n.bytes+it.dir.bytes
			if !it.dir.reused || h != it.cached || it.mode != it.cachedMode {
				reuse = false
			}
		default:
			n.files, n.bytes = n.files+1, n.bytes+it.size
			if !it.hit {
				reuse = false
			}
		}
	}
	if reuse && (!sc.store || sc.viewed || sc.batch.Has(n.base)) {
		n.hash, n.reused = n.base, true
		return n.base, nil
	}
	t := make(objectstore.Tree, 0, len(n.children))
	for i := range n.children {
		it := &n.children[i]
		if it.gone {
			continue
		}
		e := objectstore.TreeEntry{Name: it.name, Kind: it.kind, Mode: it.mode, Size: it.size, Hash: it.hash, Target: it.target}
		switch it.kind {
		case tree.KindDir:
			e.Size = 0
		case tree.KindSymlink:
			e.Size, e.Hash = 0, tree.ZeroHash
		}
		t = append(t, e)
	}
	var h tree.Hash
	if sc.store {
		var stored int64
		var err error
		if h, stored, err = sc.batch.PutTreeDelta(t, n.base); err != nil {
			return tree.ZeroHash, fmt.Errorf("store tree %q: %w", displayRel(n.rel), err)
		}
		sc.stored += stored
	} else {
		var err error
		if h, _, err = objectstore.HashTree(t); err != nil {
			return tree.ZeroHash, fault.Wrap(fault.ErrInvalid, err, "encode directory %q", displayRel(n.rel))
		}
	}
	n.hash = h
	return h, nil
}

// flattenNode appends the entries under n in tree.Compare order; buildTrees has set every hash.
func flattenNode(n *node, prefix string, out *[]tree.Entry) {
	for i := range n.children {
		it := &n.children[i]
		if it.gone {
			continue
		}
		p := join(prefix, it.name)
		e := tree.Entry{Path: p, Kind: it.kind, Mode: it.mode, Size: it.size, Hash: it.hash, Target: it.target}
		if it.kind == tree.KindDir {
			e.Size = 0
		}
		*out = append(*out, e)
		if it.kind == tree.KindDir {
			flattenNode(it.dir, p, out)
		}
	}
}

// encodeNodes is the stat cache of a finished snapshot: every directory's record, exact, with the
// store view its files were confirmed present in (zero: none).
func encodeNodes(root *node, files int64, stamp tree.Hash) []byte {
	w := newCacheWriter(int(files)*100, stamp)
	var rec func(n *node)
	rec = func(n *node) {
		w.beginDir(n.rel, n.hash, true)
		for i := range n.children {
			it := &n.children[i]
			if it.gone {
				continue
			}
			e := cachedEntry{name: it.name, kind: it.kind, racy: it.racy || it.volatile || it.shared}
			switch it.kind {
			case tree.KindFile:
				e.key, e.hash = it.key, it.hash
			case tree.KindSymlink:
				e.key, e.target = it.key, it.target
			case tree.KindDir:
				e.mode, e.hash = it.mode, it.hash
			}
			w.entry(&e)
		}
		w.endDir()
		for i := range n.children {
			if it := &n.children[i]; it.kind == tree.KindDir && !it.gone {
				rec(it.dir)
			}
		}
	}
	rec(root)
	return w.finish()
}

// OpenLive opens the regular file at rel without following symlinks, for diffs against the
// workspace.
func (s *Scanner) OpenLive(rel string) (io.ReadCloser, error) {
	if err := tree.ValidatePath(rel); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(s.layout.Root, filepath.FromSlash(rel)), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open %q: %w", rel, err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		_ = f.Close()
		return nil, fault.Invalid("%q is not a regular file", rel)
	}
	return f, nil
}

// ignoreWith is the live ignore rules joined with those the trees also recorded.
func (s *Scanner) ignoreWith(also []tree.Hash) (*Ignore, error) {
	ig, err := LoadIgnore(s.layout.Root)
	if err != nil {
		return nil, err
	}
	if ig.skipNestedGit, err = loadScanConfig(s.layout); err != nil {
		return nil, err
	}
	for _, h := range also {
		other, err := ignoreOfTree(s.store, h)
		if err != nil {
			return nil, err
		}
		ig = ig.With(other)
	}
	if ig.skipNestedGit {
		ig.fp += "/no-nested-git"
	}
	return ig, nil
}
