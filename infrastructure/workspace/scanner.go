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

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/objectstore"
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
}

// NewScanner returns a scanner for the workspace in l storing into store.
func NewScanner(l Layout, store *objectstore.Store) *Scanner {
	return &Scanner{layout: l, store: store, workers: max(2, runtime.GOMAXPROCS(0)), clock: time.Now}
}

var _ application.Snapshotter = (*Scanner)(nil)

// node is one directory of a scan.
type node struct {
	rel      string
	mode     uint32
	children []*item
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
	// gone marks a file removed after it was listed: it is not part of the snapshot.
	gone bool
}

type scan struct {
	s      *Scanner
	ignore *Ignore
	old    statCache
	store  bool
	batch  *objectstore.Batch

	mu       sync.Mutex // guards the fields below
	next     statCache
	jobs     []job
	warnings []string
	stored   int64
}

type job struct {
	rel string
	it  *item
}

// Snapshot stores every new object of the live workspace and returns the durable root tree. The
// ignore rules recorded in the trees also names apply on top of the live ones (see Ignore).
func (s *Scanner) Snapshot(ctx context.Context, p application.Progress, also ...tree.Hash) (application.Snapshot, error) {
	sc, root, err := s.run(ctx, p, true, also)
	if err != nil {
		return application.Snapshot{}, err
	}
	rootHash, err := sc.buildTrees(root)
	if err != nil {
		sc.batch.Abort()
		return application.Snapshot{}, err
	}
	if err := sc.batch.Commit(); err != nil {
		sc.batch.Abort()
		return application.Snapshot{}, fmt.Errorf("make objects durable: %w", err)
	}
	if len(sc.jobs) > 0 || len(sc.next) != len(sc.old) {
		if err := saveStatCache(s.layout.StatCache(), sc.next); err != nil {
			// The snapshot is durable; a stale cache only costs re-hashing next time.
			sc.warnings = append(sc.warnings, "could not save the stat cache: "+err.Error())
		}
	}
	var files, bytes int64
	walkItems(root, func(it *item) {
		if it.kind != tree.KindDir {
			files++
			bytes += it.size
		}
	})
	return application.Snapshot{
		Root: rootHash, Files: files, Bytes: bytes, StoredBytes: sc.stored, Warnings: sc.warnings,
	}, nil
}

// Scan returns the live workspace as an ordered entry list, storing nothing.
func (s *Scanner) Scan(ctx context.Context, p application.Progress) ([]tree.Entry, error) {
	_, root, err := s.run(ctx, p, false, nil)
	if err != nil {
		return nil, err
	}
	var out []tree.Entry
	if _, err := flattenNode(root, "", &out); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Scanner) run(ctx context.Context, p application.Progress, store bool, also []tree.Hash) (*scan, *node, error) {
	ig, err := s.ignoreWith(also)
	if err != nil {
		return nil, nil, err
	}
	sc := &scan{s: s, ignore: ig, old: loadStatCache(s.layout.StatCache()), store: store, next: statCache{}}
	if store {
		sc.batch = s.store.NewBatch()
	}
	rootFd, err := unix.Open(s.layout.Root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		sc.abort()
		return nil, nil, fmt.Errorf("open workspace %s: %w", s.layout.Root, err)
	}
	root := &node{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.workers * 2)
	g.Go(func() error { return sc.walk(gctx, g, root, rootFd) })
	if err := g.Wait(); err != nil {
		sc.abort()
		return nil, nil, err
	}
	if err := sc.hashAll(ctx, p); err != nil {
		sc.abort()
		return nil, nil, err
	}
	return sc, root, nil
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
func (sc *scan) walk(ctx context.Context, g *errgroup.Group, n *node, fd int) error {
	defer func() { _ = unix.Close(fd) }()
	if err := ctx.Err(); err != nil {
		return err
	}
	names, err := readNames(fd)
	if err != nil {
		return fmt.Errorf("list directory %q: %w", displayRel(n.rel), err)
	}
	var queued []job
	for _, name := range names {
		rel := join(n.rel, name)
		var st unix.Stat_t
		if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed since listed: not part of this snapshot
			}
			return fmt.Errorf("stat %q: %w", rel, err)
		}
		if tree.ValidateName(name) != nil {
			sc.warn("skipped %q: its name cannot be stored", rel)
			continue
		}
		mode := statMode(&st)
		if len(rel) > tree.MaxPathLen && !sc.ignore.SkipPath(rel, mode&unix.S_IFMT == unix.S_IFDIR) {
			// Recorded, it could not be restored (the restorer refuses such paths): refuse the
			// checkpoint rather than take one that cannot be rolled back to.
			return fault.Invalid("%q… is %d bytes long, more than the %d a path may have: exclude it in %s",
				rel[:64], len(rel), tree.MaxPathLen, IgnoreFile)
		}
		it := &item{name: name, mode: mode & tree.ModeMask}
		switch mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if sc.ignore.Skip(rel, name, true) {
				continue
			}
			cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			if err != nil {
				return fmt.Errorf("open directory %q: %w", rel, err)
			}
			it.kind = tree.KindDir
			it.dir = &node{rel: rel, mode: it.mode}
			child := it.dir
			if !g.TryGo(func() error { return sc.walk(ctx, g, child, cfd) }) {
				if err := sc.walk(ctx, g, child, cfd); err != nil {
					return err
				}
			}
		case unix.S_IFLNK:
			if sc.ignore.Skip(rel, name, false) {
				continue
			}
			target, err := readlinkat(fd, name)
			if err != nil {
				return fmt.Errorf("read symlink %q: %w", rel, err)
			}
			if target == "" || len(target) > 4096 || strings.IndexByte(target, 0) >= 0 {
				sc.warn("skipped symlink %q: its target cannot be stored", rel)
				continue
			}
			it.kind, it.mode, it.target, it.size = tree.KindSymlink, 0o777, target, int64(len(target))
		case unix.S_IFREG:
			if sc.ignore.Skip(rel, name, false) {
				continue
			}
			key := keyOfStat(&st)
			it.kind, it.size, it.key = tree.KindFile, st.Size, key
			if e, hit := sc.old[rel]; hit && !e.Racy && e.Key == key {
				it.hash = e.Hash
				if !sc.store || sc.batch.Has(e.Hash) {
					sc.record(rel, e)
					break
				}
			}
			queued = append(queued, job{rel: rel, it: it})
		default:
			if !sc.ignore.Skip(rel, name, false) {
				sc.warn("skipped special file %q (%s)", rel, typeName(unixType(mode)))
			}
			continue
		}
		n.children = append(n.children, it)
	}
	slices.SortFunc(n.children, func(a, b *item) int { return strings.Compare(a.name, b.name) })
	if len(queued) > 0 {
		sc.mu.Lock()
		sc.jobs = append(sc.jobs, queued...)
		sc.mu.Unlock()
	}
	return nil
}

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

var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readNames lists a directory's entry names (without "." and "..").
func readNames(fd int) ([]string, error) {
	bp, ok := direntBufs.Get().(*[]byte)
	if !ok {
		b := make([]byte, 32<<10)
		bp = &b
	}
	defer direntBufs.Put(bp)
	var names []string
	for {
		n, err := unix.ReadDirent(fd, *bp)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent((*bp)[:n], -1, names)
	}
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

func (sc *scan) record(rel string, e statEntry) {
	sc.mu.Lock()
	sc.next[rel] = e
	sc.mu.Unlock()
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
func (sc *scan) hashAll(ctx context.Context, p application.Progress) error {
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
	j.it.hash, j.it.size = h, n
	j.it.mode = tree.UnixMode(fi.Mode())
	sc.warn("%s kept changing while it was read (%d attempts): recorded the %d bytes one read returned", displayRel(j.rel), maxAttempts, n)
	return nil
}

func (sc *scan) tryHash(j job, bufp *[]byte) error {
	abs := sc.abs(j.rel)
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		// Removed between the listing and now: the snapshot is of the tree without it, exactly as if
		// the listing had come a moment later.
		j.it.gone = true
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
		n, err := sc.batch.PutBlobDelta(r, h, size, sc.old[j.rel].Hash)
		if err != nil {
			return fmt.Errorf("store %q: %w", j.rel, err)
		}
		sc.mu.Lock()
		sc.stored += n
		sc.mu.Unlock()
	}
	j.it.hash, j.it.size, j.it.key = h, size, ka
	j.it.mode = tree.UnixMode(after.Mode())
	sc.record(j.rel, statEntry{Key: ka, Hash: h, Racy: racy(ka, observed)})
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

// buildTrees stores the Merkle trees bottom-up and returns the root hash. Each directory's tree is
// stored as a delta against the tree the same directory had at the last snapshot (remembered in the
// stat cache), which is what keeps a small change in a large tree small in the store.
func (sc *scan) buildTrees(n *node) (tree.Hash, error) {
	t := make(objectstore.Tree, 0, len(n.children))
	for _, it := range n.children {
		if it.gone {
			continue
		}
		e := objectstore.TreeEntry{Name: it.name, Kind: it.kind, Mode: it.mode, Size: it.size, Hash: it.hash, Target: it.target}
		if it.kind == tree.KindDir {
			h, err := sc.buildTrees(it.dir)
			if err != nil {
				return tree.ZeroHash, err
			}
			e.Hash, e.Size = h, 0
		}
		if it.kind == tree.KindSymlink {
			e.Size, e.Hash = 0, tree.ZeroHash
		}
		t = append(t, e)
	}
	var base tree.Hash
	if prev, ok := sc.old[n.rel]; ok && prev.Key.Mode&unix.S_IFMT == unix.S_IFDIR {
		base = prev.Hash
	}
	h, stored, err := sc.batch.PutTreeDelta(t, base)
	if err != nil {
		return tree.ZeroHash, fmt.Errorf("store tree %q: %w", displayRel(n.rel), err)
	}
	sc.stored += stored
	sc.next[n.rel] = statEntry{Key: statKey{Mode: unix.S_IFDIR}, Hash: h}
	return h, nil
}

// flattenNode appends the entries under n in tree.Compare order and returns n's tree hash.
func flattenNode(n *node, prefix string, out *[]tree.Entry) (tree.Hash, error) {
	t := make(objectstore.Tree, 0, len(n.children))
	for _, it := range n.children {
		if it.gone {
			continue
		}
		p := join(prefix, it.name)
		idx := len(*out)
		e := tree.Entry{Path: p, Kind: it.kind, Mode: it.mode, Size: it.size, Hash: it.hash, Target: it.target}
		*out = append(*out, e)
		te := objectstore.TreeEntry{Name: it.name, Kind: it.kind, Mode: it.mode, Size: it.size, Hash: it.hash, Target: it.target}
		switch it.kind {
		case tree.KindDir:
			h, err := flattenNode(it.dir, p, out)
			if err != nil {
				return tree.ZeroHash, err
			}
			(*out)[idx].Hash, (*out)[idx].Size = h, 0
			te.Hash, te.Size = h, 0
		case tree.KindSymlink:
			(*out)[idx].Size = int64(len(it.target))
			te.Size, te.Hash = 0, tree.ZeroHash
		}
		t = append(t, te)
	}
	h, _, err := objectstore.HashTree(t)
	if err != nil {
		return tree.ZeroHash, fault.Wrap(fault.ErrInvalid, err, "encode directory %q", displayRel(n.rel))
	}
	return h, nil
}

func walkItems(n *node, fn func(*item)) {
	for _, it := range n.children {
		if it.gone {
			continue
		}
		fn(it)
		if it.dir != nil {
			walkItems(it.dir, fn)
		}
	}
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
	return ig, nil
}
