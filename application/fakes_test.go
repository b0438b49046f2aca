package application

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// The fakes below stand in for the adapters in this package's unit tests only. They keep state in
// memory and record calls so the tests can check what the use cases asked for and in which order.

type fakeLocker struct {
	mu       sync.Mutex
	held     bool
	locks    int
	unlocks  int
	purposes []string
	err      error  // Lock fails with it
	busy     bool   // TryLock reports the lock taken
	onTake   func() // called as the lock is taken: what another process did just before
}

func (l *fakeLocker) Lock(_ context.Context, purpose string) (func() error, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, l.err
	}
	if l.held {
		return nil, fault.Conflict("fake lock already held")
	}
	return l.take(purpose), nil
}

func (l *fakeLocker) TryLock(purpose string) (func() error, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, false, l.err
	}
	if l.busy || l.held {
		return nil, false, nil
	}
	return l.take(purpose), true, nil
}

func (l *fakeLocker) take(purpose string) func() error {
	l.held = true
	if l.onTake != nil {
		l.onTake()
	}
	l.locks++
	l.purposes = append(l.purposes, purpose)
	released := false
	return func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if released {
			panic("unlock called twice")
		}
		released = true
		l.held = false
		l.unlocks++
		return nil
	}
}

type fakeJournal struct {
	op         *port.Operation
	writes     []port.Operation
	clears     int
	pendingErr error
	writeErr   func(n int, op port.Operation) error // n counts writes from 1
	clearErr   error
}

func (j *fakeJournal) Write(op port.Operation) error {
	if j.writeErr != nil {
		if err := j.writeErr(len(j.writes)+1, op); err != nil {
			return err
		}
	}
	j.writes = append(j.writes, op)
	c := op
	j.op = &c
	return nil
}

func (j *fakeJournal) Pending() (*port.Operation, error) {
	if j.pendingErr != nil {
		return nil, j.pendingErr
	}
	if j.op == nil {
		return nil, nil
	}
	c := *j.op
	return &c, nil
}

func (j *fakeJournal) Clear() error {
	if j.clearErr != nil {
		return j.clearErr
	}
	j.clears++
	j.op = nil
	return nil
}

// fakeStore holds trees as flat entry lists and blobs as bytes.
type fakeStore struct {
	trees map[tree.Hash][]tree.Entry
	blobs map[tree.Hash][]byte
	err   error
}

func newFakeStore() *fakeStore {
	return &fakeStore{trees: map[tree.Hash][]tree.Entry{}, blobs: map[tree.Hash][]byte{}}
}

// put records entries as a tree and returns its (fake) root hash.
func (s *fakeStore) put(entries []tree.Entry) tree.Hash {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%s|%d|%o|%d|%s|%s\n", e.Path, e.Kind, e.Mode, e.Size, e.Hash, e.Target)
	}
	h := tree.Sum([]byte("tree\n" + b.String()))
	s.trees[h] = slices.Clone(entries)
	return h
}

func (s *fakeStore) Flatten(root tree.Hash) ([]tree.Entry, error) {
	if s.err != nil {
		return nil, s.err
	}
	e, ok := s.trees[root]
	if !ok {
		return nil, fault.Integrity("tree %s is missing", root)
	}
	return slices.Clone(e), nil
}

func (s *fakeStore) DiffTrees(from, to tree.Hash) ([]tree.Change, error) {
	f, err := s.Flatten(from)
	if err != nil {
		return nil, err
	}
	t, err := s.Flatten(to)
	if err != nil {
		return nil, err
	}
	return tree.Diff(f, t), nil
}

func (s *fakeStore) OpenBlob(h tree.Hash) (io.ReadCloser, error) {
	b, ok := s.blobs[h]
	if !ok {
		return nil, fault.Integrity("blob %s is missing", h)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// fakeSnap is the live workspace: an entry list (plus file contents for OpenLive).
type fakeSnap struct {
	also     []tree.Hash // trees whose ignore rules snapshots were asked to add
	store    *fakeStore
	live     []tree.Entry
	content  map[string][]byte
	warnings []string
	err      error
	// openErr, when set, is what OpenLive fails with.
	openErr error
	snaps   int
	// onSnapshot runs as a snapshot starts: what changed between a scan and the snapshot.
	onSnapshot func()
	// tracking counts the Track calls not stopped yet; tracked the snapshots taken meanwhile.
	tracking, tracked int
}

func (s *fakeSnap) Track() func() {
	s.tracking++
	stopped := false
	return func() {
		if !stopped {
			stopped = true
			s.tracking--
		}
	}
}

func (s *fakeSnap) Snapshot(_ context.Context, _ port.Progress, also ...tree.Hash) (port.Snapshot, error) {
	if s.onSnapshot != nil {
		s.onSnapshot()
	}
	if s.err != nil {
		return port.Snapshot{}, s.err
	}
	s.snaps++
	if s.tracking > 0 {
		s.tracked++
	}
	s.also = append(s.also, also...)
	var files, size int64
	for _, e := range s.live {
		if e.Kind != tree.KindDir {
			files++
			size += e.Size
		}
	}
	return port.Snapshot{Root: s.store.put(s.live), Files: files, Bytes: size, StoredBytes: 1, Warnings: s.warnings}, nil
}

func (s *fakeSnap) Scan(context.Context, port.Progress) ([]tree.Entry, error) {
	if s.err != nil {
		return nil, s.err
	}
	return slices.Clone(s.live), nil
}

func (s *fakeSnap) OpenLive(path string) (io.ReadCloser, error) {
	if s.openErr != nil {
		return nil, s.openErr
	}
	b, ok := s.content[path]
	if !ok {
		return nil, fault.NotFound("%s", path)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

// fakeRestorer changes fakeSnap's live list to the requested tree.
type fakeRestorer struct {
	snap          *fakeSnap
	applies       [][2]tree.Hash
	reconciles    []tree.Hash
	applyErr      error
	reconcileErr  error
	unrecordedErr error
	unrecorded    []string // what Unrecorded reports when there is no fake workspace
	diffsGiven    int      // applies whose comparison the caller made (ApplyDiff)
}

func (r *fakeRestorer) ApplyDiff(ctx context.Context, from, to tree.Hash, changes []tree.Change, p port.Progress) (port.ApplyStats, error) {
	r.diffsGiven++
	if got, err := r.snap.store.DiffTrees(from, to); err == nil && len(got) != len(changes) {
		return port.ApplyStats{}, fmt.Errorf("ApplyDiff given %d changes, the trees differ in %d", len(changes), len(got))
	}
	return r.Apply(ctx, from, to, p)
}

func (r *fakeRestorer) Apply(_ context.Context, from, to tree.Hash, _ port.Progress) (port.ApplyStats, error) {
	r.applies = append(r.applies, [2]tree.Hash{from, to})
	if r.applyErr != nil {
		return port.ApplyStats{}, r.applyErr
	}
	return r.set(to)
}

func (r *fakeRestorer) Reconcile(_ context.Context, to tree.Hash) (port.ApplyStats, error) {
	r.reconciles = append(r.reconciles, to)
	if r.reconcileErr != nil {
		return port.ApplyStats{}, r.reconcileErr
	}
	return r.set(to)
}

// Unrecorded compares the fake live list with the trees, as the real restorer does.
func (r *fakeRestorer) Unrecorded(_ context.Context, trees ...tree.Hash) ([]string, error) {
	if r.unrecordedErr != nil {
		return nil, r.unrecordedErr
	}
	if r.snap == nil {
		return r.unrecorded, nil
	}
	known := map[string][]tree.Entry{}
	for _, h := range trees {
		es, err := r.snap.store.Flatten(h)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			known[e.Path] = append(known[e.Path], e)
		}
	}
	var out []string
	for _, e := range r.snap.live {
		ok := false
		for _, k := range known[e.Path] {
			ok = ok || e.Same(k) || (e.Kind == tree.KindDir && k.Kind == tree.KindDir)
		}
		if !ok {
			out = append(out, e.Path)
		}
	}
	return out, nil
}

func (r *fakeRestorer) set(to tree.Hash) (port.ApplyStats, error) {
	if r.snap == nil {
		return port.ApplyStats{Written: 1}, nil
	}
	want, err := r.snap.store.Flatten(to)
	if err != nil {
		return port.ApplyStats{}, err
	}
	n := len(tree.Diff(r.snap.live, want))
	r.snap.live = want
	return port.ApplyStats{Written: n}, nil
}

type fakeRepo struct {
	cps       map[checkpoint.ID]*checkpoint.Checkpoint
	addErr    error
	updateErr error
	latestErr error
	getErr    error
	listErr   error
	sinceErr  error
	deleteErr error
}

func newFakeRepo() *fakeRepo { return &fakeRepo{cps: map[checkpoint.ID]*checkpoint.Checkpoint{}} }

func (r *fakeRepo) Add(_ context.Context, c *checkpoint.Checkpoint) error {
	if r.addErr != nil {
		return r.addErr
	}
	if _, dup := r.cps[c.ID()]; dup {
		return fault.Conflict("duplicate %s", c.ID())
	}
	r.cps[c.ID()] = c
	return nil
}

func (r *fakeRepo) Get(_ context.Context, id checkpoint.ID) (*checkpoint.Checkpoint, error) {
	if r.getErr != nil {
		return nil, r.getErr
	}
	c, ok := r.cps[id]
	if !ok {
		return nil, fault.NotFound("checkpoint %s not found", id)
	}
	return c, nil
}

func (r *fakeRepo) Resolve(_ context.Context, ref string) (*checkpoint.Checkpoint, error) {
	var found []*checkpoint.Checkpoint
	for id, c := range r.cps {
		if strings.HasPrefix(string(id), ref) {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return nil, fault.NotFound("checkpoint %s not found", ref)
	case 1:
		return found[0], nil
	}
	return nil, fault.Invalid("ambiguous %s", ref)
}

func (r *fakeRepo) IDs(ctx context.Context) ([]checkpoint.ID, error) {
	all, err := r.List(ctx)
	ids := make([]checkpoint.ID, len(all))
	for i, cp := range all {
		ids[i] = cp.ID()
	}
	return ids, err
}

func (r *fakeRepo) ListSince(ctx context.Context, t time.Time) ([]*checkpoint.Checkpoint, error) {
	if r.sinceErr != nil {
		return nil, r.sinceErr
	}
	all, err := r.List(ctx)
	var out []*checkpoint.Checkpoint
	for i := len(all) - 1; i >= 0; i-- {
		if !all[i].CreatedAt().Before(t) {
			out = append(out, all[i])
		}
	}
	return out, err
}

func (r *fakeRepo) List(context.Context) ([]*checkpoint.Checkpoint, error) {
	if r.listErr != nil {
		return nil, r.listErr
	}
	out := make([]*checkpoint.Checkpoint, 0, len(r.cps))
	for _, c := range r.cps {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *checkpoint.Checkpoint) int {
		if c := b.CreatedAt().Compare(a.CreatedAt()); c != 0 {
			return c
		}
		return strings.Compare(string(b.ID()), string(a.ID()))
	})
	return out, nil
}

func (r *fakeRepo) Latest(ctx context.Context) (*checkpoint.Checkpoint, error) {
	if r.latestErr != nil {
		return nil, r.latestErr
	}
	l, _ := r.List(ctx)
	if len(l) == 0 {
		return nil, fault.NotFound("no checkpoint yet")
	}
	return l[0], nil
}

func (r *fakeRepo) Delete(_ context.Context, id checkpoint.ID) error {
	if r.deleteErr != nil {
		return r.deleteErr
	}
	if _, ok := r.cps[id]; !ok {
		return fault.NotFound("checkpoint %s not found", id)
	}
	delete(r.cps, id)
	return nil
}

// Update changes a copy and keeps it only when fn succeeds, as the database adapter's transaction
// does (the contract suite checks both).
func (r *fakeRepo) Update(ctx context.Context, id checkpoint.ID, fn func(*checkpoint.Checkpoint) error) error {
	if r.updateErr != nil {
		return r.updateErr
	}
	c, err := r.Get(ctx, id)
	if err != nil {
		return err
	}
	cp := checkpoint.Rehydrate(checkpoint.Params{
		ID: string(c.ID()), Type: c.Type(), CreatedAt: c.CreatedAt(), Note: c.Note(), DecisionID: c.DecisionID(),
		ParentID: c.ParentID(), GitCommit: c.GitCommit(), Root: c.Root(), Stats: c.Stats(),
	}, c.RollbackCount())
	if err := fn(cp); err != nil {
		return err
	}
	r.cps[id] = cp
	return nil
}

type fakeHistory struct {
	recs      map[string]port.HistoryRecord
	recordErr error
	listErr   error
}

// Record keeps a copy of r, its times in UTC, as the database adapter does (application/oplogtest
// holds both to that).
func (h *fakeHistory) Record(_ context.Context, r port.HistoryRecord) error {
	if h.recordErr != nil {
		return h.recordErr
	}
	if _, dup := h.recs[r.ID]; dup {
		return fault.Conflict("history record %s already exists", r.ID)
	}
	r.StartedAt, r.FinishedAt = r.StartedAt.UTC(), r.FinishedAt.UTC()
	r.Reverted = slices.Clone(r.Reverted)
	h.recs[r.ID] = r
	return nil
}

func (h *fakeHistory) Has(_ context.Context, id string) (bool, error) {
	_, ok := h.recs[id]
	return ok, nil
}

func (h *fakeHistory) Get(_ context.Context, id string) (port.HistoryRecord, error) {
	r, ok := h.recs[id]
	if !ok {
		return r, fault.NotFound("operation %s not found", id)
	}
	r.Reverted = slices.Clone(r.Reverted)
	return r, nil
}

// List returns the history oldest first (by start, then ID), as the database adapter does.
func (h *fakeHistory) List(context.Context) ([]port.HistoryRecord, error) {
	if h.listErr != nil {
		return nil, h.listErr
	}
	out := make([]port.HistoryRecord, 0, len(h.recs))
	for _, r := range h.recs {
		r.Reverted = slices.Clone(r.Reverted)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b port.HistoryRecord) int {
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// fakeTx runs fn directly; a real database would roll back on error, which the tests that need it
// check through the recorded state.
type fakeTx struct{ calls int }

func (t *fakeTx) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	t.calls++
	return fn(ctx)
}

// fakeClock advances one millisecond per call so generated IDs sort in creation order.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time {
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

type fakeGit struct {
	commit string
	ok     bool
}

func (g fakeGit) Head() (string, bool) { return g.commit, g.ok }

// latestOf is d's newest attempt, zero when it never ran.
func latestOf(d *plan.Decision) plan.Attempt {
	a, _ := d.Latest()
	return a
}
