package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/failpoint"
	"github.com/planhq/plan/infrastructure/internal/fsx"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/timing"
)

// stageWorkers bounds the files staged at once.
const stageWorkers = 4

// Restorer applies stored trees to the workspace.
type Restorer struct {
	layout  Layout
	store   *objectstore.Store
	scanner *Scanner
	// foldsCase says whether the workspace's file system ignores case (APFS and HFS+ by default),
	// probed once.
	foldsCase func() bool
	// Failpoint is called at each step of an apply; crash tests arm it (see package failpoint).
	Failpoint func(name string) error
	// OnPlaced, when set, hears of the files an apply put in place once they are durable (the
	// watch service's client: see Scanner.Vouch). trash, when not "", is a directory of
	// Layout.Trash holding what the restore replaced: OnPlaced returns true when it takes over its
	// removal (the watch service removes it after answering), else the restore removes it.
	OnPlaced func(ctx context.Context, files []Placed, trash string) bool
}

// NewRestorer returns a restorer for the workspace in l.
func NewRestorer(l Layout, store *objectstore.Store, sc *Scanner) *Restorer {
	return &Restorer{layout: l, store: store, scanner: sc, Failpoint: failpoint.Hit,
		foldsCase: sync.OnceValue(func() bool { return foldsCase(l.State()) })}
}

var _ port.Restorer = (*Restorer)(nil)

// Apply turns the workspace from tree from into tree to; on failure it puts from back.
func (r *Restorer) Apply(ctx context.Context, from, to tree.Hash, p port.Progress) (port.ApplyStats, error) {
	changes, err := r.store.DiffTrees(from, to)
	if err != nil {
		return port.ApplyStats{}, fmt.Errorf("compare trees: %w", err)
	}
	return r.ApplyDiff(ctx, from, to, changes, p)
}

// ApplyDiff is Apply given the comparison of the two trees (DiffTrees(from, to)), which a rollback
// made already to count and journal what it changes.
func (r *Restorer) ApplyDiff(ctx context.Context, from, to tree.Hash, changes []tree.Change, p port.Progress) (stats port.ApplyStats, err error) {
	endPrepare := timing.Span("restore.prepare")
	unreadable, err := loadUnreadable(r.layout, from, to)
	var kept []string
	if err == nil {
		changes, kept, err = r.untouched(changes, to, unreadable)
	}
	if err == nil {
		err = r.refuseCaseCollisions(to, nil)
	}
	endPrepare()
	if err != nil {
		return port.ApplyStats{}, err
	}
	defer func() { stats.Kept = append(stats.Kept, kept...) }()
	stats, touched, err := r.apply(ctx, changes, p, r.Failpoint)
	if err != nil && touched {
		// The undo runs with failpoints disarmed. Fix: it used to hit the same failpoints as the
		// forward pass, so an injected error (PLAN_FAILPOINT=name=error) failed the undo as well and
		// every such failure ended as an IncompleteUndoError with a mixed workspace: the in-process
		// undo, which is what the "=error" action exists to exercise, could never succeed.
		if _, uerr := r.reconcile(context.WithoutCancel(ctx), from, noFailpoint); uerr != nil {
			return stats, &port.IncompleteUndoError{Cause: err, Undo: uerr}
		}
	}
	return stats, err
}

func noFailpoint(string) error { return nil }

// Reconcile makes the workspace equal to tree to, whatever it holds now.
func (r *Restorer) Reconcile(ctx context.Context, to tree.Hash) (port.ApplyStats, error) {
	return r.reconcile(ctx, to, r.Failpoint)
}

func (r *Restorer) reconcile(ctx context.Context, to tree.Hash, hit func(string) error) (port.ApplyStats, error) {
	live, unreadable, err := r.scanner.ScanReadable(ctx, nil)
	if err != nil {
		return port.ApplyStats{}, fmt.Errorf("scan the workspace: %w", err)
	}
	want, err := r.store.Flatten(to)
	if err != nil {
		return port.ApplyStats{}, fmt.Errorf("read target tree: %w", err)
	}
	recorded, err := loadUnreadable(r.layout, to)
	if err != nil {
		return port.ApplyStats{}, err
	}
	changes, kept, err := r.untouched(tree.Diff(live, want), to, append(unreadable, recorded...))
	if err != nil {
		return port.ApplyStats{}, err
	}
	if err := r.refuseCaseCollisions(to, want); err != nil {
		return port.ApplyStats{}, err
	}
	stats, _, err := r.apply(ctx, changes, nil, hit)
	stats.Kept = append(stats.Kept, kept...)
	return stats, err
}

// untouched drops the changes to paths that the live .planignore or the one the target tree
// recorded excludes: across a rollback that changes .planignore, a path either side excludes is
// never written, overwritten or deleted (the safety checkpoint did not store it either).
//
// So are the paths a snapshot could not read (unreadable, at or under them): those the workspace
// could not read now, and those either tree's snapshot could not (see unreadable.go). Fix: they
// were not filtered, so a rollback to a checkpoint that could not read a directory deleted it,
// and one from such a state failed in a directory it could not enter.
//
// kept lists the excluded paths the target has that hold something in the workspace: data outside
// every snapshot, left alone. A tree naming .plan or .git is not filtered here: apply refuses it as
// damage.
func (r *Restorer) untouched(changes []tree.Change, to tree.Hash, unreadable []string) (out []tree.Change, kept []string, err error) {
	ig, err := r.scanner.ignoreWith([]tree.Hash{to})
	if err != nil {
		return nil, nil, err
	}
	out = changes[:0:0]
	for _, ch := range changes {
		e := ch.To
		if e == nil {
			e = ch.From
		}
		if reserved(ch.Path) || (!ig.SkipPath(ch.Path, e.Kind == tree.KindDir) && !under(ch.Path, unreadable)) {
			out = append(out, ch)
			continue
		}
		if ch.To != nil {
			if _, err := os.Lstat(filepath.Join(r.layout.Root, filepath.FromSlash(ch.Path))); err == nil {
				kept = append(kept, ch.Path)
			}
		}
	}
	return out, kept, nil
}

// Unrecorded lists the live paths whose state none of trees holds. A directory counts as recorded
// when any of the trees has a directory there (its mode holds no data); a file or symlink only when
// one of them has the same content, mode or target.
func (r *Restorer) Unrecorded(ctx context.Context, trees ...tree.Hash) ([]string, error) {
	live, err := r.scanner.Scan(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("scan the workspace: %w", err)
	}
	known := make(map[string][]tree.Entry, len(live))
	for _, h := range trees {
		entries, err := r.store.Flatten(h)
		if err != nil {
			return nil, fmt.Errorf("read tree %s: %w", h, err)
		}
		for _, e := range entries {
			known[e.Path] = append(known[e.Path], e)
		}
	}
	var out []string
	for _, e := range live {
		if !recorded(e, known[e.Path]) {
			out = append(out, e.Path)
		}
	}
	return out, nil
}

func recorded(e tree.Entry, versions []tree.Entry) bool {
	for _, v := range versions {
		if (e.Kind == tree.KindDir && v.Kind == tree.KindDir) || e.Same(v) {
			return true
		}
	}
	return false
}

// applier carries one apply's state.
type applier struct {
	r        *Restorer
	hit      func(name string) error // the failpoints of this apply
	root     *os.Root
	staging  string
	mu       sync.Mutex      // guards verified, stats, staged, written and unsure while files are placed in parallel
	verified map[string]bool // directories checked to be real directories (not symlinks)
	stats    port.ApplyStats
	// staged is each staged file's stat key once its content and mode were written (by path);
	// written the stat cache entries of the files put in place (see place); unsure the paths whose
	// stat cache entries no stat taken right after the write can vouch for.
	staged  map[string]statKey
	written map[string]cachedEntry
	unsure  []string
	removed []string
	// placed are the files put in place whose stat right after showed the staged inode.
	placed []Placed
	// exchanged says an entry of the workspace was swapped into staging (put); noExchange that
	// the file system cannot exchange, so the rest of the apply renames.
	exchanged, noExchange atomic.Bool
}

// apply performs changes. touched reports whether the workspace itself was modified (staging
// inside .plan/ does not count), so the caller knows whether an undo is needed.
func (r *Restorer) apply(ctx context.Context, changes []tree.Change, p port.Progress, hit func(string) error) (port.ApplyStats, bool, error) {
	if len(changes) == 0 {
		return port.ApplyStats{}, false, nil
	}
	for _, ch := range changes {
		if err := tree.ValidatePath(ch.Path); err != nil {
			return port.ApplyStats{}, false, fault.Wrap(fault.ErrIntegrity, err, "refusing to restore")
		}
		if reserved(ch.Path) {
			return port.ApplyStats{}, false, fault.Integrity("refusing to restore %q: no snapshot holds .plan or .git", ch.Path)
		}
	}
	root, err := os.OpenRoot(r.layout.Root)
	if err != nil {
		return port.ApplyStats{}, false, fmt.Errorf("open workspace: %w", err)
	}
	defer func() { _ = root.Close() }()
	a := &applier{r: r, hit: hit, root: root, staging: r.layout.Staging(), verified: map[string]bool{},
		staged: map[string]statKey{}, written: map[string]cachedEntry{}}
	defer func() { _ = root.RemoveAll(a.staging) }()

	endStage := timing.Span("restore.stage")
	staged, err := a.stage(ctx, changes, p)
	endStage()
	if err != nil {
		return a.stats, false, err
	}
	if err := hit("restore.staged"); err != nil {
		return a.stats, false, err
	}
	endPlace := timing.Span("restore.place")
	if err := a.removeStale(changes); err != nil {
		return a.stats, true, err
	}
	if err := hit("restore.removed"); err != nil {
		return a.stats, true, err
	}
	if err := a.create(changes, staged); err != nil {
		return a.stats, true, err
	}
	if err := a.fixDirModes(changes); err != nil {
		return a.stats, true, err
	}
	endPlace()
	endSync := timing.Span("restore.sync")
	err = fsx.SyncPaths(r.layout.Root, a.touched(changes))
	endSync()
	if err != nil {
		return a.stats, true, err
	}
	if err := hit("restore.applied"); err != nil {
		return a.stats, true, err
	}
	endCache := timing.Span("restore.statcache")
	a.updateStatCache()
	endCache()
	r.vouch(ctx, a.placed, a.retire())
	return a.stats, true, nil
}

// reserved reports whether rel is or passes through a .plan or .git entry. Fix: the package
// invariant says these are never written or removed, but only the scanner enforced it; a damaged or
// crafted tree naming .git/hooks/x was restored (and could plant a git hook), one naming .plan
// wrote into plan's own state. The scanner skips them at every depth, so no snapshot holds them.
// reserved reports whether rel is inside a .plan directory (at any depth) or the workspace's own
// .git: no snapshot holds those, so a tree naming them is damaged or crafted. A nested .git is
// workspace content (a vendored repository) and is restored like any directory.
func reserved(rel string) bool {
	if rel == ".git" || strings.HasPrefix(rel, ".git/") {
		return true
	}
	for c := range strings.SplitSeq(rel, "/") {
		if c == StateDir {
			return true
		}
	}
	return false
}

// stage writes every new file and symlink under .plan/staging, verifying content hashes. Nothing in
// the workspace changes here.
func (a *applier) stage(ctx context.Context, changes []tree.Change, p port.Progress) (map[int]string, error) {
	if err := a.root.RemoveAll(a.staging); err != nil {
		return nil, fmt.Errorf("clear staging: %w", err)
	}
	// What an earlier restore replaced, left by a watch service that stopped before removing it.
	_ = a.root.RemoveAll(a.r.layout.Trash())
	if err := a.root.MkdirAll(a.staging, 0o700); err != nil {
		return nil, fmt.Errorf("create staging: %w", err)
	}
	var total int64
	for _, ch := range changes {
		// Files only: they are what p.Add reports below. Fix: symlinks were counted here too, and
		// since a symlink's Size is its target's length the progress never reached its total.
		if needsContent(ch) && ch.To.Kind == tree.KindFile {
			total += ch.To.Size
		}
	}
	if p != nil {
		p.Start("restoring files", total)
		defer p.Done()
	}
	// Creating a file is latency-bound (about half a millisecond each on the machines we measured), so
	// staging runs on a few workers; the order of staged names does not matter, renames come later.
	// Each worker creates in a directory of its own: creations in one directory take its lock in
	// turn, which kept parallel staging nearly serial.
	staged := make(map[int]string, len(changes))
	var order []int
	for i, ch := range changes {
		if needsContent(ch) {
			staged[i] = a.staging + "/" + strconv.Itoa(len(order)%stageWorkers) + "/" + strconv.Itoa(i)
			order = append(order, i)
		}
	}
	for w := range min(stageWorkers, len(order)) {
		if err := a.root.Mkdir(a.staging+"/"+strconv.Itoa(w), 0o700); err != nil {
			return nil, fmt.Errorf("create staging: %w", err)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(stageWorkers)
	for _, i := range order {
		ch, name := changes[i], staged[i]
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			if ch.To.Kind == tree.KindSymlink {
				if err := a.root.Symlink(ch.To.Target, name); err != nil {
					return fmt.Errorf("stage symlink %q: %w", ch.Path, err)
				}
				return nil
			}
			if err := a.stageFile(name, ch.Path, *ch.To); err != nil {
				return err
			}
			if p != nil {
				p.Add(ch.To.Size)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// No sync here: staged content need not be durable before it is renamed into place. The journal
	// is durable and every target object is durable in the store, so a crash that tears a renamed
	// file is repaired by recovery, which re-hashes the workspace and rewrites what differs. The one
	// sync that matters comes after the renames, before the database records the rollback.
	return staged, nil
}

// needsContent reports whether ch writes a file or symlink (not only a mode change).
func needsContent(ch tree.Change) bool {
	if ch.To == nil || ch.To.Kind == tree.KindDir {
		return false
	}
	if ch.To.Kind == tree.KindFile && ch.From != nil && ch.From.Kind == tree.KindFile &&
		ch.From.Hash == ch.To.Hash && ch.From.Size == ch.To.Size {
		return false // same content, only the mode differs
	}
	return true
}

func (a *applier) stageFile(name, rel string, e tree.Entry) error {
	rc, err := a.r.store.OpenBlob(e.Hash)
	if err != nil {
		return fmt.Errorf("read stored content of %q: %w", e.Path, err)
	}
	defer func() { _ = rc.Close() }()
	f, err := a.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("stage %q: %w", e.Path, err)
	}
	n, err := copySparse(f, rc, e.Size)
	if err == nil && n != e.Size {
		err = fault.Integrity("stored content of %q has %d bytes, the tree says %d", e.Path, n, e.Size)
	}
	if err == nil {
		err = f.Chmod(tree.GoMode(e.Mode))
	}
	if err == nil {
		// The key the content was written with: the stat cache may vouch for the file in place
		// only while it keeps this mtime (see place).
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			if k, ok := keyOf(fi); ok {
				a.mu.Lock()
				a.staged[rel] = k
				a.mu.Unlock()
			}
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("stage %q: %w", e.Path, err)
	}
	return nil
}

// checkParents makes sure every directory above rel is a real directory, so no write can pass
// through a symlink, even one pointing inside the workspace.
func (a *applier) checkParents(rel string) error {
	for i := 0; i < len(rel); i++ {
		if rel[i] != '/' {
			continue
		}
		dir := rel[:i]
		a.mu.Lock()
		ok := a.verified[dir]
		a.mu.Unlock()
		if ok {
			continue
		}
		fi, err := a.root.Lstat(dir)
		if err != nil {
			return fmt.Errorf("check %q: %w", dir, err)
		}
		if !fi.IsDir() {
			return fault.Conflict("refusing to write %q: %q is not a directory (a %s)", rel, dir, fi.Mode().Type())
		}
		a.mu.Lock()
		a.verified[dir] = true
		a.mu.Unlock()
	}
	return nil
}

// removeStale removes, deepest first, every path the target does not have or has as another kind.
// A directory that still holds ignored files is kept when the target does not need its place.
func (a *applier) removeStale(changes []tree.Change) error {
	for i := len(changes) - 1; i >= 0; i-- {
		ch := changes[i]
		if ch.From == nil || (ch.To != nil && ch.To.Kind == ch.From.Kind) {
			continue
		}
		if err := a.checkParents(ch.Path); err != nil {
			return err
		}
		err := a.root.Remove(ch.Path)
		switch {
		case err == nil:
			a.stats.Removed++
			a.removed = append(a.removed, ch.Path)
			delete(a.verified, ch.Path)
		case errors.Is(err, fs.ErrNotExist):
		case errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST):
			if ch.To != nil {
				return fault.Conflict("cannot replace directory %q: it still holds ignored files", ch.Path)
			}
			a.stats.Kept = append(a.stats.Kept, ch.Path)
		default:
			return fmt.Errorf("remove %q: %w", ch.Path, err)
		}
	}
	return nil
}

// create makes directories (parents first), then moves staged files into place and fixes
// file modes. Once every directory exists the files are independent, so they are moved by a few
// workers: a rename is latency-bound like a file creation.
func (a *applier) create(changes []tree.Change, staged map[int]string) error {
	var files []int
	for i, ch := range changes {
		if ch.To == nil {
			continue
		}
		if ch.To.Kind != tree.KindDir {
			files = append(files, i)
			continue
		}
		if ch.From != nil && ch.From.Kind == tree.KindDir {
			continue // mode only: fixDirModes
		}
		if err := a.checkParents(ch.Path); err != nil {
			return err
		}
		if err := a.root.Mkdir(ch.Path, 0o700); err != nil {
			fi, lerr := a.root.Lstat(ch.Path)
			if lerr != nil || !fi.IsDir() {
				return fmt.Errorf("create directory %q: %w", ch.Path, err)
			}
		}
		a.stats.Dirs++
	}
	if len(files) > 0 {
		if err := a.hit("restore.write"); err != nil { // before the first file is put in place
			return err
		}
	}
	g := new(errgroup.Group)
	g.SetLimit(stageWorkers)
	for _, i := range files {
		ch := changes[i]
		name, spare := staged[i], a.staging+"/l"+strconv.Itoa(i)
		g.Go(func() error { return a.place(ch, name, spare) })
	}
	return g.Wait()
}

// place puts one file or symlink in place: the staged content, or only a new mode. spare is a
// free name in staging, for a mode change that must replace the file (chmodFile).
func (a *applier) place(ch tree.Change, staged, spare string) error {
	if err := a.checkParents(ch.Path); err != nil {
		return err
	}
	if staged == "" { // same content, new mode
		replace, err := a.chmodFile(ch.Path, ch.To.Mode)
		if err != nil {
			return err
		}
		a.mu.Lock()
		a.stats.Chmods++
		a.mu.Unlock()
		if replace {
			return a.replaceLinked(ch, spare)
		}
		a.mu.Lock()
		a.unsure = append(a.unsure, ch.Path) // content the restore did not write: read it again
		a.mu.Unlock()
		return nil
	}
	if ch.From == nil {
		// The live scan did not list this path; if something is there it is ignored data the
		// workspace holds outside every snapshot: never overwrite it.
		if _, err := a.root.Lstat(ch.Path); err == nil {
			a.mu.Lock()
			a.stats.Kept = append(a.stats.Kept, ch.Path)
			a.mu.Unlock()
			return nil
		}
	}
	placed := time.Now()
	if err := a.put(staged, ch); err != nil {
		return fmt.Errorf("write %q: %w", ch.Path, err)
	}
	if ch.To.Kind == tree.KindFile {
		a.placedFile(ch.Path, ch.To.Hash, placed)
	}
	a.mu.Lock()
	a.stats.Written++
	a.mu.Unlock()
	return nil
}

// put moves the staged entry to ch.Path. Over an entry the workspace holds (ch.From) it exchanges
// the two where the file system can (renameat2 RENAME_EXCHANGE, atomic like the rename): the
// replaced entry goes to staging and is freed with it after the restore (see retire), instead of
// inside the rename, where freeing an inode and its blocks is most of what renaming over a file
// costs. A directory swapped out (the workspace changed meanwhile) is swapped back and refused, as
// a rename over it is refused. Both directories are opened through the workspace's os.Root.
func (a *applier) put(staged string, ch tree.Change) error {
	if ch.From == nil || a.noExchange.Load() {
		return a.root.Rename(staged, ch.Path)
	}
	sdir, sname := splitRel(staged)
	dir, name := splitRel(ch.Path)
	if dir == "" {
		dir = "."
	}
	sd, err := a.root.Open(sdir)
	if err != nil {
		return err
	}
	defer func() { _ = sd.Close() }()
	wd, err := a.root.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = wd.Close() }()
	swapped, unsupported, err := exchange(sd, sname, wd, name)
	switch {
	case unsupported:
		a.noExchange.Store(true)
		return a.root.Rename(staged, ch.Path)
	case errors.Is(err, fs.ErrNotExist): // nothing there any more
		return a.root.Rename(staged, ch.Path)
	case err != nil:
		return err
	}
	a.exchanged.Store(true)
	if isDir(&swapped) {
		if err := unswap(sd, sname, wd, name); err != nil {
			return fmt.Errorf("put back directory %q: %w", ch.Path, err)
		}
		return fault.Conflict("refusing to replace %q: it is a directory now", ch.Path)
	}
	return nil
}

// retire moves the staging directory, which holds what put swapped out of the workspace, to a
// directory of its own under Layout.Trash and returns its path ("" when nothing was swapped out,
// or the move failed: the deferred removal of staging then frees it).
func (a *applier) retire() string {
	if !a.exchanged.Load() {
		return ""
	}
	trash := a.r.layout.Trash()
	if err := a.root.MkdirAll(trash, 0o700); err != nil {
		return ""
	}
	name := trash + "/" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := a.root.Rename(a.staging, name); err != nil {
		return ""
	}
	return filepath.Join(a.r.layout.Root, filepath.FromSlash(name))
}

// placedFile notes the stat cache entry of a file the restore just put in place (placedEntry), or
// that none vouches for it.
func (a *applier) placedFile(rel string, h tree.Hash, placed time.Time) {
	e, ok := a.placedEntry(rel, h, placed)
	a.mu.Lock()
	defer a.mu.Unlock()
	if ok {
		a.written[rel] = e
		a.placed = append(a.placed, Placed{Path: rel, Dev: e.key.Dev, Ino: e.key.Ino})
		return
	}
	a.unsure = append(a.unsure, rel)
}

// placedEntry is the stat cache entry of the file the restore just renamed to rel (content h,
// visible from the moment placed), from a stat taken right after the rename: only when that stat
// shows the inode, size, mtime and mode the staged file had once written (anything else means
// another process changed it already) does the cache record it. The entry is racy unless the
// content's timestamps were at least a tick older than the moment the file became visible: a
// write by anyone else after that moment then gives it another mtime, so the next walk reads it.
// The end of the restore stats nothing: a stat then would vouch for another process's write.
func (a *applier) placedEntry(rel string, h tree.Hash, placed time.Time) (cachedEntry, bool) {
	fi, err := a.root.Lstat(rel)
	if err != nil || !fi.Mode().IsRegular() {
		return cachedEntry{}, false
	}
	k, ok := keyOf(fi)
	a.mu.Lock()
	was, staged := a.staged[rel]
	a.mu.Unlock()
	if !ok || !staged || k.Ino != was.Ino || k.Dev != was.Dev || k.Size != was.Size || k.Mtime != was.Mtime || k.Mode != was.Mode {
		return cachedEntry{}, false
	}
	return cachedEntry{name: path.Base(rel), kind: tree.KindFile, key: k, hash: h, racy: racy(was, placed)}, true
}

// chmodFile gives the regular file rel the mode in place (fchmod of the inode it opened and found
// to have no other name), or reports replace when it must not: an inode with another name may be a
// file outside the workspace under a name inside it (a hard link), whose mode a restore must never
// change. Fix: it chmodded the name in place, so a workspace name hard-linked to a file outside
// changed that file's mode. An inode it cannot open (its mode lets nobody read it) is replaced
// too: the stat that would show its links and the chmod must concern the same inode.
func (a *applier) chmodFile(rel string, mode uint32) (replace bool, err error) {
	fi, err := a.root.Lstat(rel)
	if err != nil {
		return false, fmt.Errorf("chmod %q: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return false, fault.Conflict("refusing to chmod %q: not a regular file", rel)
	}
	f, err := a.root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	var ofi os.FileInfo
	if err == nil {
		defer func() { _ = f.Close() }()
		ofi, err = f.Stat()
	}
	if err != nil || !os.SameFile(fi, ofi) || !soleName(ofi) {
		// Linked, not to be opened, or another inode than the name showed: the stored content
		// replaces it, and the replacement reads nothing of this file.
		return true, nil //nolint:nilerr // see above
	}
	if err := f.Chmod(tree.GoMode(mode)); err != nil {
		return false, fmt.Errorf("chmod %q: %w", rel, err)
	}
	return false, nil
}

// soleName reports whether fi is of an inode with exactly one name.
func soleName(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && uint64(st.Nlink) == 1 //nolint:unconvert // widths differ between architectures
}

// replaceLinked restores the mode of ch.Path, whose inode chmodFile must not change, as a content
// restore does: the stored content is staged with the mode and exchanged with (or renamed over) the
// name, so the other names keep their inode, mode and content.
func (a *applier) replaceLinked(ch tree.Change, staged string) error {
	if err := a.stageFile(staged, ch.Path, *ch.To); err != nil {
		return err
	}
	placed := time.Now()
	if err := a.put(staged, ch); err != nil {
		return fmt.Errorf("write %q: %w", ch.Path, err)
	}
	a.placedFile(ch.Path, ch.To.Hash, placed)
	return nil
}

// fixDirModes sets directory modes deepest first, after their contents are written (a read-only
// directory would refuse them).
func (a *applier) fixDirModes(changes []tree.Change) error {
	for i := len(changes) - 1; i >= 0; i-- {
		ch := changes[i]
		if ch.To == nil || ch.To.Kind != tree.KindDir {
			continue
		}
		fi, err := a.root.Lstat(ch.Path)
		if err != nil {
			return fmt.Errorf("chmod %q: %w", ch.Path, err)
		}
		if !fi.IsDir() {
			return fault.Conflict("refusing to chmod %q: not a directory", ch.Path)
		}
		if tree.UnixMode(fi.Mode()) == ch.To.Mode {
			continue
		}
		if err := a.root.Chmod(ch.Path, tree.GoMode(ch.To.Mode)); err != nil {
			return fmt.Errorf("chmod %q: %w", ch.Path, err)
		}
		if ch.From != nil && ch.From.Kind == tree.KindDir {
			a.stats.Chmods++
		}
	}
	return nil
}

// vouch tells whoever follows the workspace's changes which files the restore placed (this
// process's own tracker, a run's; the watch service, through OnPlaced), and frees what the restore
// replaced (trash, when not ""): the watch service does when it takes it over, else vouch here.
func (r *Restorer) vouch(ctx context.Context, placed []Placed, trash string) {
	r.scanner.Vouch(placed)
	if r.OnPlaced != nil && (len(placed) > 0 || trash != "") && r.OnPlaced(ctx, placed, trash) {
		return
	}
	if trash != "" {
		_ = os.RemoveAll(trash) // plan's own leftovers: a failure costs disk until the next restore
	}
}

// updateStatCache records the restored files with the hashes already known and the stats taken
// right after each was put in place (placedEntry), so the next snapshot does not read them again
// unless they changed since; it drops what was removed, and the entries of files whose content
// no such stat vouches for (modes changed, stats that did not match). Failure only costs
// re-hashing, so it is not an error.
func (a *applier) updateStatCache() {
	p := cachePatch{written: a.written, removed: append(a.removed, a.unsure...)}
	patchStatCache(a.r.layout.StatCache(), p)
}

// sparseBlock is the unit copySparse checks for zeros: a file system block on most systems.
const sparseBlock = 4096

// copySparse copies r into the new file f, seeking over whole blocks of zeros instead of writing
// them, so a sparse file comes back sparse (a 3 GiB file with a few written pages takes a few pages,
// not 3 GiB). Files smaller than a few blocks are copied plainly. It returns the bytes copied.
func copySparse(f *os.File, r io.Reader, size int64) (int64, error) {
	if size < 16*sparseBlock {
		return io.Copy(f, r)
	}
	buf := make([]byte, 64*sparseBlock)
	var n int64
	hole := false
	for {
		m, rerr := io.ReadFull(r, buf)
		for off := 0; off < m; off += sparseBlock {
			blk := buf[off:min(off+sparseBlock, m)]
			if len(blk) == sparseBlock && allZero(blk) {
				if _, err := f.Seek(sparseBlock, io.SeekCurrent); err != nil {
					return n, err
				}
				hole = true
			} else {
				if _, err := f.Write(blk); err != nil {
					return n, err
				}
				hole = false
			}
			n += int64(len(blk))
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return n, rerr
		}
	}
	if hole { // the file ends in a hole: give it its length
		if err := f.Truncate(n); err != nil {
			return n, err
		}
	}
	return n, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// refuseCaseCollisions refuses, before anything is touched, a target tree holding two entries that
// a case-insensitive file system cannot tell apart (README.md and Readme.md in one directory):
// restoring it would silently merge them. entries is the target flattened, when the caller has it.
// On a case-sensitive file system it costs nothing.
func (r *Restorer) refuseCaseCollisions(to tree.Hash, entries []tree.Entry) error {
	if !r.foldsCase() {
		return nil
	}
	if entries == nil {
		var err error
		if entries, err = r.store.Flatten(to); err != nil {
			return fmt.Errorf("read target tree: %w", err)
		}
	}
	paths := make([]string, len(entries))
	for i, e := range entries {
		paths[i] = e.Path
	}
	if pairs := caseCollisions(paths); len(pairs) > 0 {
		return fault.Conflict("the checkpoint holds %q and %q, which this file system cannot tell apart (it ignores case); nothing was changed",
			pairs[0][0], pairs[0][1])
	}
	return nil
}

// caseCollisions lists the pairs of paths that differ only in the case of their last component,
// within one directory: what a case-insensitive file system would store as one entry.
func caseCollisions(paths []string) [][2]string {
	seen := make(map[string]string, len(paths))
	var out [][2]string
	for _, p := range paths {
		dir, name := path.Split(p)
		k := dir + strings.ToLower(name)
		if other, ok := seen[k]; ok && other != p {
			out = append(out, [2]string{other, p})
			continue
		}
		seen[k] = p
	}
	return out
}

// foldsCase probes whether the file system holding dir ignores case: a file created with a
// lower-case name is then found under its upper-case one.
func foldsCase(dir string) bool {
	f, err := os.CreateTemp(dir, "case-probe-*")
	if err != nil {
		return false
	}
	name := f.Name()
	_ = f.Close()
	defer func() { _ = os.Remove(name) }()
	base := filepath.Base(name)
	_, err = os.Lstat(filepath.Join(filepath.Dir(name), strings.ToUpper(base)))
	return err == nil
}

// touched lists what this apply changed, for a platform that must sync each path: every path it
// wrote, created or re-moded, and the directories whose entries changed.
func (a *applier) touched(changes []tree.Change) []string {
	dirs := map[string]bool{}
	out := make([]string, 0, len(changes))
	for _, ch := range changes {
		if ch.To != nil {
			out = append(out, ch.Path)
		}
		dirs[path.Dir(ch.Path)] = true
	}
	for d := range dirs {
		out = append(out, d)
	}
	return out
}
