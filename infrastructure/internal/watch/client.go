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
	"sync"
	"sync/atomic"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/timing"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// Deadlines of a client: the service must begin its answer (a keep-alive at least) within
// connectWait of the connection, and never stay silent longer than idleWait afterwards; it sends
// a keep-alive every keepAlive while it works.
var (
	connectWait = 500 * time.Millisecond
	idleWait    = 3 * time.Second
	keepAlive   = 250 * time.Millisecond
)

// errNoService says no service listens: no socket file (or none on this platform).
var errNoService = errors.New("no watch service")

// Snapshotter is the workspace's Snapshotter as commands use it: a snapshot is asked of the
// watch service when one runs, and taken by walking (the Scanner) when none answers. Scan,
// OpenLive and Track are the Scanner's: a run follows the workspace with its own tracker.
type Snapshotter struct {
	*workspace.Scanner
	layout workspace.Layout
	// store is the command's own view of the object store: the service writes packs this
	// process has not loaded, so it is refreshed after every answer that stored anything or names
	// a tree the view does not hold.
	store *objectstore.Store

	mu sync.Mutex
	// local, inside the service's own process, takes the snapshot there (its periodic and idle
	// checkpoints) instead of asking the socket it serves.
	local func(ctx context.Context, also []tree.Hash) (port.Snapshot, error)
	// served says a snapshot of this process was the service's answer.
	served atomic.Bool
	// walkOnly says the service is never asked (PLAN_WATCH=0, read by the composition root).
	walkOnly atomic.Bool
}

var (
	_ port.Snapshotter   = (*Snapshotter)(nil)
	_ port.ChangeTracker = (*Snapshotter)(nil)
)

// NewSnapshotter wraps the scanner of the workspace laid out by l, storing into store.
func NewSnapshotter(s *workspace.Scanner, l workspace.Layout, store *objectstore.Store) *Snapshotter {
	return &Snapshotter{Scanner: s, layout: l, store: store}
}

// WalkOnly makes every snapshot of this process, when on, a walk that asks no service, and tells no
// service what a restore placed (PLAN_WATCH=0).
func (s *Snapshotter) WalkOnly(on bool) { s.walkOnly.Store(on) }

// Snapshot asks the service for the snapshot, and walks when it does not answer (or tracking
// is off: WalkOnly, or a run's own tracker is in force). A service that failed to answer is
// named in the snapshot's warnings; none running is not.
func (s *Snapshotter) Snapshot(ctx context.Context, p port.Progress, also ...tree.Hash) (port.Snapshot, error) {
	s.mu.Lock()
	local := s.local
	s.mu.Unlock()
	if local != nil {
		return local(ctx, also)
	}
	if s.walkOnly.Load() || s.TrackState().Tracking {
		return s.Scanner.Snapshot(ctx, p, also...)
	}
	snap, err := s.ask(ctx, also)
	if err == nil {
		s.served.Store(true)
		return snap, nil
	}
	walked, werr := s.Scanner.Snapshot(ctx, p, also...)
	if werr == nil && !errors.Is(err, errNoService) {
		walked.Warnings = append(walked.Warnings, fmt.Sprintf("the watch service did not answer (%v): walked the workspace", err))
	}
	return walked, werr
}

// Served says whether the service answered a snapshot this process asked for: its workspace is
// served, and the service merges the store's small packs between commands (Options.Merge), so a
// command on an agent's critical path need not.
func (s *Snapshotter) Served() bool { return s.served.Load() }

// maxPlaced bounds the files a restore tells the service of: past it, the request would take
// longer to send and check than what it saves (the next snapshot's stat of every file).
const maxPlaced = 1 << 14

// Placed tells the service which files a restore put in place (see workspace.Scanner.Vouch), so
// that changing and removing one of them before the next snapshot does not make that snapshot
// stat every file, and hands it trash (when not ""), the directory of what the restore replaced,
// to remove once it has answered. It returns how many files the service took its word for, and
// whether it took the trash. A hint: when no service answers, or this process follows the
// workspace itself (a run, or the service), it does nothing (0, false): the service doubts as it
// would have, and the restore removes its trash itself.
func (s *Snapshotter) Placed(ctx context.Context, files []workspace.Placed, trash string) (vouched int, tookTrash bool) {
	s.mu.Lock()
	local := s.local
	s.mu.Unlock()
	if local != nil || (len(files) == 0 && trash == "") || !supported() ||
		s.walkOnly.Load() || s.TrackState().Tracking {
		return 0, false
	}
	if len(files) > maxPlaced {
		files = nil
	}
	defer timing.Span("placed.watch")()
	var r reply
	if err := call(ctx, s.layout, request{Op: opPlaced, Workspace: s.layout.Root, Placed: files, Trash: trash}, &r); err != nil {
		return 0, false
	}
	return r.Vouched, r.Trash && trash != ""
}

// ask gets a snapshot from the service.
func (s *Snapshotter) ask(ctx context.Context, also []tree.Hash) (port.Snapshot, error) {
	if !supported() {
		return port.Snapshot{}, errNoService
	}
	defer timing.Span("snapshot.watch")()
	var r reply
	if err := call(ctx, s.layout, request{Op: opSnapshot, Workspace: s.layout.Root, Also: also}, &r); err != nil {
		return port.Snapshot{}, err
	}
	if r.Snapshot == nil || r.Snapshot.Root.IsZero() {
		return port.Snapshot{}, errors.New("an answer without a snapshot")
	}
	// What the service stored is in packs this process has not loaded yet. When it stored nothing
	// and the tree is one this process's view already holds (no change since a snapshot the view
	// has seen: the commonest snapshot of all), that view is the store's as it stands: its
	// refresh, a listing and a stat of every pack, would find nothing new.
	if r.Snapshot.StoredBytes != 0 || !s.store.Present(r.Snapshot.Root) {
		defer timing.Span("snapshot.watch.refresh")()
		if err := s.store.Refresh(); err != nil {
			return port.Snapshot{}, fmt.Errorf("refresh the store after the service's snapshot: %w", err)
		}
	}
	if !s.store.Present(r.Snapshot.Root) {
		return port.Snapshot{}, fmt.Errorf("the service answered with tree %s, which the store does not hold", r.Snapshot.Root)
	}
	return *r.Snapshot, nil
}

// call sends req to the service of the workspace laid out by l and reads its answer into r: an
// error when anything is not as a live service of this workspace answers.
func call(ctx context.Context, l workspace.Layout, req request, r *reply) error {
	path := SocketPath(l)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return errNoService
	}
	ctx, cancel := context.WithTimeout(ctx, connectWait)
	d := net.Dialer{}
	c, err := d.DialContext(ctx, "unix", path)
	cancel()
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = c.Close() }()
	conn, ok := c.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("connect: a %T, not a Unix socket", c)
	}
	if err := serviceAt(conn, filepath.Join(l.State(), LockName)); err != nil {
		return err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	_ = conn.SetDeadline(time.Now().Add(connectWait))
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	rd := bufio.NewReaderSize(conn, 64<<10)
	for {
		line, err := rd.ReadBytes('\n')
		if err != nil {
			return fmt.Errorf("read the answer: %w", err)
		}
		*r = reply{}
		if err := json.Unmarshal(line, r); err != nil {
			return fmt.Errorf("a malformed answer: %w", err)
		}
		if r.Workspace != req.Workspace {
			return fmt.Errorf("the service answering is for another workspace (%q)", r.Workspace)
		}
		if r.Error != "" {
			return errors.New(r.Error)
		}
		if !r.Wait {
			return nil
		}
		_ = conn.SetDeadline(time.Now().Add(idleWait))
	}
}
