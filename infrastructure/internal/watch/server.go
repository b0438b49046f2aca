package watch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// LockName is the file in .plan/ the running service holds locked: one service per workspace.
const LockName = "watch.lock"

// activeWindow is how long after a change the workspace counts as being worked on, for Every;
// scheduleTick how often the periodic and idle checkpoints are considered (tests shorten both).
var (
	activeWindow = 5 * time.Minute
	scheduleTick = time.Second
)

// Options are the service's periodic and idle checkpoints.
type Options struct {
	// Every takes a checkpoint after each Every of active work (time within activeWindow of a
	// change); Quiet one once the workspace has not changed for Quiet after a change. Zero: none.
	Every, Quiet time.Duration
	// Checkpoint takes a checkpoint of type typ with note (the checkpoint use case).
	Checkpoint func(ctx context.Context, typ checkpoint.Type, note string) error
	// Newest is the root of the newest checkpoint (ok false when there is none): a periodic or
	// idle checkpoint of the same content is skipped.
	Newest func(ctx context.Context) (root tree.Hash, ok bool, err error)
	// Ready, when set, is called once the socket listens (and the first snapshot is under way).
	Ready func(socket string)
	// Log receives what the service wants its operator to know (failed checkpoints); nil discards.
	Log func(msg string)
	// Merge, when set, merges the store's small packs once enough have accumulated (the
	// maintenance use case's Consolidate: only with the workspace lock free, a no-op when none is
	// due) and says how many it merged. The service calls it between commands, once a snapshot it
	// served stored something and no command has asked for mergeQuiet: commands served by the
	// service (agents' hooks) leave the merging to it, so that none of them pays for it.
	Merge func(ctx context.Context) (merged int, err error)
	// StopAfter stops the service once neither a command has asked it for a snapshot nor the
	// workspace changed for that long (a service an agent's hook started must not outlive the work); zero:
	// never.
	StopAfter time.Duration
}

// Server is a running watch service.
type Server struct {
	snap   *Snapshotter
	store  *objectstore.Store
	opts   Options
	path   string
	locker *workspace.Locker

	mu sync.Mutex // one snapshot at a time

	smu    sync.Mutex // guards status
	status Status

	stopc    chan struct{}
	stopOnce sync.Once
	stopWhy  string // why the service stopped itself; set before stopc closes
	conns    sync.WaitGroup
	lastUse  atomic.Int64 // when a command last asked (UnixNano)
	stored   atomic.Int32 // snapshots that stored something since the last merge was tried
	state    os.FileInfo  // .plan as it was when the service started
}

// Serve runs the service of snap's workspace until ctx ends or a client asks it to stop. It
// refuses to start where watching is not available, and while another service holds the
// workspace's watch lock.
func Serve(ctx context.Context, snap *Snapshotter, store *objectstore.Store, opts Options) error {
	if !supported() {
		return fault.Unavailable("plan watch needs inotify (Linux): on this system every command walks the workspace, as without it")
	}
	if (opts.Every > 0 || opts.Quiet > 0) && (opts.Checkpoint == nil || opts.Newest == nil) {
		return errors.New("watch: periodic and idle checkpoints need Checkpoint and Newest")
	}
	unlock, err := lockService(filepath.Join(snap.layout.State(), LockName))
	if err != nil {
		return err
	}
	defer unlock()
	path := SocketPath(snap.layout)
	ln, err := listen(path)
	if err != nil {
		return err
	}
	s := &Server{snap: snap, store: store, opts: opts, path: path, stopc: make(chan struct{}), locker: workspace.NewLocker(snap.layout)}
	s.locker.Wait = 200 * time.Millisecond // short tries, so that a stop is seen between them
	s.status = Status{Running: true, PID: os.Getpid(), Workspace: snap.layout.Root, Socket: path, StartedAt: time.Now().UTC()}
	s.lastUse.Store(time.Now().UnixNano())
	if s.state, err = os.Stat(snap.layout.State()); err != nil {
		_ = ln.Close()
		return fmt.Errorf("watch: %w", err)
	}
	if opts.StopAfter > 0 {
		s.status.StopAfter = opts.StopAfter.String()
	}
	if opts.Every > 0 {
		s.status.Every = opts.Every.String()
	}
	if opts.Quiet > 0 {
		s.status.Quiet = opts.Quiet.String()
	}
	return s.run(ctx, ln)
}

func (s *Server) run(ctx context.Context, ln *net.UnixListener) error {
	stopTrack := s.snap.Track()
	defer stopTrack()
	s.snap.mu.Lock()
	s.snap.local = s.snapshot
	s.snap.mu.Unlock()
	defer func() {
		s.snap.mu.Lock()
		s.snap.local = nil
		s.snap.mu.Unlock()
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			s.conns.Add(1)
			go func() {
				defer s.conns.Done()
				s.serveConn(ctx, c)
			}()
		}
	}()
	// The first snapshot walks the whole workspace and watches every directory, under the
	// workspace lock (it stores objects, which only the lock's holder may do); a request that
	// comes meanwhile (its command holds the lock) is that first walk instead.
	first := make(chan error, 1)
	var firstRoot tree.Hash
	go func() {
		snap, err := s.lockedSnapshot(ctx)
		firstRoot = snap.Root
		first <- err
	}()
	if s.opts.Ready != nil {
		s.opts.Ready(s.path)
	}
	var err error
	select {
	case err = <-first:
		if err == nil {
			s.schedule(ctx, firstRoot)
		} else {
			s.log("the first snapshot failed: " + err.Error())
		}
	case <-ctx.Done():
	case <-s.stopc:
	}
	select {
	case <-s.stopc:
		why := "asked to (plan watch stop)"
		s.smu.Lock()
		if s.stopWhy != "" {
			why = s.stopWhy
		}
		s.smu.Unlock()
		s.log("stopping: " + why)
	default:
		if ctx.Err() != nil {
			s.log("stopping: " + context.Cause(ctx).Error())
		}
	}
	_ = ln.Close()
	<-accepted
	cancel()
	s.conns.Wait()
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("watch: the first snapshot failed: %w", err)
	}
	return nil
}

// log tells the operator msg, when the options say where.
func (s *Server) log(msg string) {
	if s.opts.Log != nil {
		s.opts.Log(msg)
	}
}

// stop ends the service (once).
func (s *Server) stop() { s.stopOnce.Do(func() { close(s.stopc) }) }

// stopBecause stops the service of its own accord, saying why in its log.
func (s *Server) stopBecause(why string) {
	s.smu.Lock()
	if s.stopWhy == "" {
		s.stopWhy = why
	}
	s.smu.Unlock()
	s.stop()
}

// outlived says why the service should stop of its own accord, or "": its workspace's .plan is
// gone or another one replaced it (the project was deleted: nothing is left to serve), or, with
// StopAfter, nothing asked and nothing changed for that long.
func (s *Server) outlived(now time.Time) string {
	st, err := os.Stat(s.snap.layout.State())
	if err != nil || !os.SameFile(st, s.state) {
		return fmt.Sprintf("the workspace's %s is gone", s.snap.layout.State())
	}
	if s.opts.StopAfter <= 0 {
		return ""
	}
	last := time.Unix(0, s.lastUse.Load())
	if lc, ok := s.snap.LastChange(); ok && lc.After(last) {
		last = lc
	}
	if now.Sub(last) >= s.opts.StopAfter {
		return fmt.Sprintf("nothing asked and nothing changed for %s (--stop-after)", s.opts.StopAfter)
	}
	return ""
}

// snapshot is one snapshot of the tracker, the store's view refreshed first (a gc since the last
// one may have removed what the tracker's tree names: the tracker checks every object it reuses
// against that view, each directory it confirmed whole again as soon as the view lost anything;
// see workspace's prepare and objectstore.Batch.Epoch).
func (s *Server) snapshot(ctx context.Context, also []tree.Hash) (port.Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.store.Refresh(); err != nil {
		return port.Snapshot{}, err
	}
	snap, err := s.snap.Scanner.Snapshot(ctx, nil, also...)
	if err == nil && snap.StoredBytes > 0 {
		s.stored.Add(1)
	}
	st := s.snap.TrackState()
	s.smu.Lock()
	s.status.Snapshots++
	s.status.Walks = st.Walks
	s.status.Events = "on"
	if st.Off != "" {
		s.status.Events = st.Off
	}
	s.smu.Unlock()
	return snap, err
}

// lockedSnapshot is a snapshot the service takes for itself (not for a command, which holds the
// lock when it asks): it takes the workspace lock first, waiting as long as it is busy.
func (s *Server) lockedSnapshot(ctx context.Context) (port.Snapshot, error) {
	for {
		release, err := s.locker.Lock(ctx, "watch")
		if err == nil {
			snap, err := s.snapshot(ctx, nil)
			_ = release()
			return snap, err
		}
		if !errors.Is(err, fault.ErrConflict) {
			return port.Snapshot{}, err
		}
		select {
		case <-ctx.Done():
			return port.Snapshot{}, ctx.Err()
		case <-s.stopc:
			return port.Snapshot{}, errors.New("stopped")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Status is the service's status now.
func (s *Server) Status() Status {
	s.smu.Lock()
	defer s.smu.Unlock()
	return s.status
}

// serveConn answers one request.
func (s *Server) serveConn(ctx context.Context, c *net.UnixConn) {
	defer func() { _ = c.Close() }()
	if samePeer(c) != nil {
		return
	}
	root := s.snap.layout.Root
	_ = c.SetReadDeadline(time.Now().Add(connectWait))
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return
	}
	var req request
	var wmu sync.Mutex
	send := func(r reply) bool {
		r.Workspace = root
		b, _ := json.Marshal(r)
		wmu.Lock()
		defer wmu.Unlock()
		_ = c.SetWriteDeadline(time.Now().Add(idleWait))
		_, err := c.Write(append(b, '\n'))
		return err == nil
	}
	if err := json.Unmarshal(line, &req); err != nil {
		send(errorf("a malformed request: %v", err))
		return
	}
	if req.Workspace != root {
		send(errorf("this service watches %s, not %s", root, req.Workspace))
		return
	}
	switch req.Op {
	case opStatus:
		st := s.Status()
		send(reply{Status: &st})
	case opStop:
		send(reply{})
		s.stop()
	case opPlaced:
		trash := s.trash(req.Trash)
		if !send(reply{Vouched: s.snap.Vouch(req.Placed), Trash: trash}) || !trash {
			return
		}
		// After the answer, so that the restore does not wait for it; the service's stop waits.
		if err := os.RemoveAll(req.Trash); err != nil {
			s.log("removing what a restore replaced: " + err.Error())
		}
	case opSnapshot:
		s.lastUse.Store(time.Now().UnixNano()) // a status query is not a use: it keeps nothing alive
		if !send(reply{Wait: true}) {
			return
		}
		// A client hangs up only when it stopped waiting (and walks instead, under the lock it
		// holds): the snapshot is no one's then, and stops rather than go on writing the store
		// outside the lock. (Stopped part-way, the tracker walks at its next snapshot.)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go hungUp(c, cancel)
		done := make(chan struct{})
		go func() {
			t := time.NewTicker(keepAlive)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					if !send(reply{Wait: true}) {
						return
					}
				}
			}
		}()
		snap, err := s.snapshot(ctx, req.Also)
		close(done)
		if err != nil {
			s.log("a snapshot failed: " + err.Error())
			send(errorf("%v", err))
			return
		}
		send(reply{Snapshot: &snap})
	default:
		send(errorf("unknown request %q", req.Op))
	}
}

// hungUp calls cancel when the client closes its end of c, or c is closed. A client sends
// nothing after its request.
func hungUp(c *net.UnixConn, cancel context.CancelFunc) {
	_ = c.SetReadDeadline(time.Time{})
	var b [1]byte
	for {
		if _, err := c.Read(b[:]); err != nil {
			cancel()
			return
		}
	}
}

// trash reports whether dir is a directory the service may remove for a restore: one directly
// under the workspace's trash directory.
func (s *Server) trash(dir string) bool {
	base := filepath.Base(dir)
	return dir != "" && filepath.Dir(dir) == filepath.Join(s.snap.layout.Root, filepath.FromSlash(s.snap.layout.Trash())) &&
		base != "." && base != ".." && base != string(filepath.Separator)
}

// lockService takes the workspace's watch lock, or says another service holds it.
func lockService(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600) // #nosec G304 -- plan's own state file
	if err != nil {
		return nil, fault.Conflict("open %s: %v", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil { // #nosec G115 -- a descriptor
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fault.Conflict("plan watch already runs for this workspace (`plan watch status` shows it)")
		}
		return nil, fault.Conflict("lock %s: %v", path, err)
	}
	// The holder's pid: a client checks that the process answering on the socket is this one.
	if err := f.Truncate(0); err != nil {
		_ = f.Close()
		return nil, fault.Conflict("write %s: %v", path, err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		_ = f.Close()
		return nil, fault.Conflict("write %s: %v", path, err)
	}
	return func() { _ = f.Close() }, nil
}

// listen makes the service's socket at path. The caller holds the watch lock, so a socket file
// there is one a service that died left; anything else is not plan's and is left alone.
func listen(path string) (*net.UnixListener, error) {
	dir := filepath.Dir(path)
	if dir == runtimeDir() {
		if err := privateDir(dir); err != nil {
			return nil, err
		}
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fault.Conflict("%s exists and is not a socket: move it away to run plan watch", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fault.Conflict("remove the stale socket %s: %v", path, err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fault.Conflict("listen on %s: %v", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close()
		return nil, fault.Conflict("chmod %s: %v", path, err)
	}
	return ln, nil
}

// privateDir makes dir (mode 0700) or checks the one there is a directory of this user that
// nobody else may enter.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fault.Conflict("make %s: %v", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fault.Conflict("stat %s: %v", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Getuid() || st.Mode&0o077 != 0 {
		return fault.Conflict("%s is not a private directory of this user (mode %o, uid %d): remove it", dir, st.Mode, st.Uid)
	}
	return nil
}
