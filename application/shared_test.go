package application

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// Fakes of a shared store, its records, its database and this machine, for SharedStoreService.

type fakeSharedStore struct {
	listing     []port.StoredWorkspace
	listErr     error
	descriptors map[string]port.WorkspaceDescriptor
	descErr     error
	retired     map[string]time.Time
	retiredErr  error
	now         time.Time
	nowErr      error
	retireErr   error
	retiredBy   string // the host the last Retire was given
}

func (s *fakeSharedStore) Location() string { return "/stores/shared" }

func (s *fakeSharedStore) DescriptorLocation(id string) string {
	return "/stores/shared/workspaces/" + id + ".json"
}

func (s *fakeSharedStore) Workspaces() ([]port.StoredWorkspace, error) { return s.listing, s.listErr }

func (s *fakeSharedStore) Descriptor(id string) (port.WorkspaceDescriptor, bool, error) {
	if s.descErr != nil {
		return port.WorkspaceDescriptor{}, false, s.descErr
	}
	d, ok := s.descriptors[id]
	return d, ok, nil
}

func (s *fakeSharedStore) Retirement(id string) (bool, time.Time, error) {
	if s.retiredErr != nil {
		return false, time.Time{}, s.retiredErr
	}
	at, ok := s.retired[id]
	return ok, at, nil
}

func (s *fakeSharedStore) Retire(id, host string, now time.Time) (time.Time, bool, error) {
	if s.retireErr != nil {
		return time.Time{}, false, s.retireErr
	}
	s.retiredBy = host
	if at, ok := s.retired[id]; ok {
		return at, true, nil
	}
	if s.retired == nil {
		s.retired = map[string]time.Time{}
	}
	s.retired[id] = now
	return now, false, nil
}

func (s *fakeSharedStore) Now() (time.Time, error) { return s.now, s.nowErr }

type fakeSharedRecords struct {
	byID         map[string][]port.RecordedCheckpoint // newest first; a key without checkpoints is a workspace with records
	committedErr error
	listErr      error
}

func (r *fakeSharedRecords) Committed(id string) (bool, error) {
	_, ok := r.byID[id]
	return ok, r.committedErr
}

func (r *fakeSharedRecords) Checkpoints(id string) ([]port.RecordedCheckpoint, error) {
	return r.byID[id], r.listErr
}

type fakeSharedDB struct {
	rows    []port.DatabaseWorkspace
	rowsErr error
	byID    map[string]*fakeWorkspaceCheckpoints
	openErr error
	closed  int
}

func (d *fakeSharedDB) Workspaces(context.Context) ([]port.DatabaseWorkspace, error) {
	return d.rows, d.rowsErr
}

func (d *fakeSharedDB) Checkpoints(_ context.Context, id string) (port.WorkspaceCheckpoints, error) {
	if d.openErr != nil {
		return nil, d.openErr
	}
	cps, ok := d.byID[id]
	if !ok {
		return nil, fault.NotFound("no workspace %s in the database", id)
	}
	cps.db = d
	return cps, nil
}

type fakeWorkspaceCheckpoints struct {
	list      []*checkpoint.Checkpoint // newest first
	latestErr error
	db        *fakeSharedDB
}

func (c *fakeWorkspaceCheckpoints) Latest(context.Context) (*checkpoint.Checkpoint, error) {
	if c.latestErr != nil {
		return nil, c.latestErr
	}
	if len(c.list) == 0 {
		return nil, fault.NotFound("no checkpoint")
	}
	return c.list[0], nil
}

func (c *fakeWorkspaceCheckpoints) Resolve(_ context.Context, ref string) (*checkpoint.Checkpoint, error) {
	for _, cp := range c.list {
		if strings.HasPrefix(string(cp.ID()), ref) {
			return cp, nil
		}
	}
	return nil, fault.NotFound("checkpoint %s not found", ref)
}

func (c *fakeWorkspaceCheckpoints) Close() error {
	c.db.closed++
	return nil
}

type fakeMachine struct {
	host       string
	configured map[string]string // root → the workspace ID its configuration names
	configErr  error
}

func (m fakeMachine) Hostname() string { return m.host }

func (m fakeMachine) ConfiguredWorkspace(root string) (string, error) {
	return m.configured[root], m.configErr
}

const (
	wsA = "0123456789abcdef0123456a"
	wsB = "0123456789abcdef0123456b"
	wsC = "0123456789abcdef0123456c"
)

var sharedT0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func sharedCheckpoint(t *testing.T, id string, at time.Time) *checkpoint.Checkpoint {
	t.Helper()
	cp, err := checkpoint.New(checkpoint.Params{ID: id, Type: checkpoint.Manual, CreatedAt: at, Root: tree.Sum([]byte(id))})
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func wantErr(t *testing.T, what string, err, kind error, text string) {
	t.Helper()
	if !errors.Is(err, kind) || !strings.Contains(err.Error(), text) {
		t.Errorf("%s: %v, want %v saying %q", what, err, kind, text)
	}
}

// The listing: what is no workspace is left out, the retired only when all are asked for; a
// database fills in where a workspace lives and counts its checkpoints; oldest first, by ID when
// two were made at once; a damaged descriptor or a failing listing is an error, not fewer
// workspaces.
func TestSharedStoreWorkspaces(t *testing.T) {
	ctx := context.Background()
	store := &fakeSharedStore{listing: []port.StoredWorkspace{
		{ID: "not-a-workspace"},
		{ID: wsC, Descriptor: &port.WorkspaceDescriptor{WorkspaceID: wsC, Root: "/c", Host: "h", CreatedAt: sharedT0}, Checkpoints: 1, LastCheckpointAt: sharedT0},
		{ID: wsB, Checkpoints: 2, LastCheckpointAt: sharedT0.Add(time.Hour)},
		{ID: wsA, Descriptor: &port.WorkspaceDescriptor{WorkspaceID: wsA, Root: "/a", Host: "h", CreatedAt: sharedT0}, Retired: true, RetiredAt: sharedT0.Add(2 * time.Hour)},
	}}
	svc := NewSharedStoreService("file:///stores/shared", store, &fakeSharedRecords{}, nil, fakeMachine{})
	ws, err := svc.Workspaces(ctx, false)
	if err != nil || len(ws) != 2 || ws[0].ID != wsB || ws[1].ID != wsC || ws[0].Checkpoints != 2 || ws[1].Root != "/c" {
		t.Fatalf("the workspaces, without the retired: %+v, %v", ws, err)
	}
	ws, err = svc.Workspaces(ctx, true)
	if err != nil || len(ws) != 3 || ws[1].ID != wsA || ws[2].ID != wsC || !ws[1].RetiredAt.Equal(sharedT0.Add(2*time.Hour)) || !ws[2].RetiredAt.IsZero() {
		t.Fatalf("the workspaces, with the retired: %+v, %v", ws, err)
	}

	db := &fakeSharedDB{rows: []port.DatabaseWorkspace{
		{ID: wsB, Root: "/b", Host: "db-host", CreatedAt: sharedT0.Add(-time.Hour), Checkpoints: 5, Newest: sharedT0.Add(3 * time.Hour)},
		{ID: wsC, Root: "/elsewhere", Host: "db-host", Checkpoints: 4, Newest: sharedT0},
		{ID: "0123456789abcdef01234567"}, // the database's, its content in another store
	}}
	svc = NewSharedStoreService("file:///stores/shared", store, &fakeSharedRecords{}, db, fakeMachine{})
	ws, err = svc.Workspaces(ctx, false)
	if err != nil || len(ws) != 2 {
		t.Fatalf("the workspaces through the database: %+v, %v", ws, err)
	}
	if b := ws[0]; b.ID != wsB || b.Root != "/b" || b.Host != "db-host" || b.Checkpoints != 5 || !b.LastCheckpointAt.Equal(sharedT0.Add(3*time.Hour)) {
		t.Errorf("a workspace without a descriptor, from the database: %+v", b)
	}
	if c := ws[1]; c.Root != "/c" || c.Host != "h" || c.Checkpoints != 4 {
		t.Errorf("a workspace with a descriptor keeps where it says, with the database's counts: %+v", c)
	}
	db.rowsErr = errors.New("the database is down")
	if _, err := svc.Workspaces(ctx, false); err == nil {
		t.Error("a database that cannot list: no error")
	}

	store.listing = []port.StoredWorkspace{store.listing[1], {ID: wsB, DescriptorDamaged: true}}
	_, err = svc.Workspaces(ctx, false)
	wantErr(t, "a damaged descriptor", err, fault.ErrIntegrity, "/stores/shared/workspaces/"+wsB+".json")
	store.listErr = fault.Integrity("damaged records")
	if _, err := svc.Workspaces(ctx, false); !errors.Is(err, fault.ErrIntegrity) {
		t.Errorf("a store that cannot be listed: %v", err)
	}
}

// A clone's source found in the records: the newest, by full ID or unique prefix; a retired
// workspace offers only its pinned checkpoints; what is not there, or ambiguous, or malformed,
// is refused saying so.
func TestSharedStoreCheckpointFromRecords(t *testing.T) {
	ctx := context.Background()
	c1, c2, c3 := "aaaa00000000000000000001", "aaaa00000000000000000002", "bbbb00000000000000000003"
	recs := &fakeSharedRecords{byID: map[string][]port.RecordedCheckpoint{
		wsA: {{ID: c3, Root: tree.Sum([]byte("3")), CreatedAt: sharedT0.Add(2 * time.Hour)}, {ID: c2, CreatedAt: sharedT0.Add(time.Hour)}, {ID: c1, Pinned: true, CreatedAt: sharedT0}},
		wsB: nil,
	}}
	store := &fakeSharedStore{}
	svc := NewSharedStoreService("file:///stores/shared", store, recs, nil, fakeMachine{})

	if got, err := svc.Checkpoint(ctx, wsA, ""); err != nil || got.ID != c3 || got.Workspace != wsA || got.Root != tree.Sum([]byte("3")) || !got.CreatedAt.Equal(sharedT0.Add(2*time.Hour)) {
		t.Errorf("the newest: %+v, %v", got, err)
	}
	if got, err := svc.Checkpoint(ctx, wsA, c2); err != nil || got.ID != c2 {
		t.Errorf("by full ID: %+v, %v", got, err)
	}
	if got, err := svc.Checkpoint(ctx, wsA, "bbbb"); err != nil || got.ID != c3 {
		t.Errorf("by a unique prefix: %+v, %v", got, err)
	}
	_, err := svc.Checkpoint(ctx, wsA, "aaaa")
	wantErr(t, "an ambiguous prefix", err, fault.ErrInvalid, "ambiguous: it matches "+c2+", "+c1)
	_, err = svc.Checkpoint(ctx, wsA, "cccc")
	wantErr(t, "an unknown checkpoint", err, fault.ErrNotFound, "checkpoint cccc not found in workspace "+wsA)
	_, err = svc.Checkpoint(ctx, wsB, "")
	wantErr(t, "a workspace without checkpoints", err, fault.ErrNotFound, "workspace "+wsB+" has no checkpoint")
	_, err = svc.Checkpoint(ctx, wsC, "")
	wantErr(t, "a workspace the store holds no records of", err, fault.ErrNotFound, "the store file:///stores/shared holds no workspace "+wsC)
	_, err = svc.Checkpoint(ctx, "nope", "")
	wantErr(t, "a malformed workspace ID", err, fault.ErrInvalid, "workspace")
	_, err = svc.Checkpoint(ctx, wsA, "zz")
	wantErr(t, "a malformed checkpoint ID", err, fault.ErrInvalid, "checkpoint")

	store.retired = map[string]time.Time{wsA: sharedT0.Add(3 * time.Hour), wsB: sharedT0}
	if got, err := svc.Checkpoint(ctx, wsA, ""); err != nil || got.ID != c1 {
		t.Errorf("the newest pinned of a retired workspace: %+v, %v", got, err)
	}
	_, err = svc.Checkpoint(ctx, wsA, c3)
	wantErr(t, "an unpinned checkpoint of a retired workspace", err, fault.ErrNotFound,
		"retired at 2025-03-01T15:00:00Z and keeps only its pinned checkpoints: checkpoint "+c3+" is not one of them")
	_, err = svc.Checkpoint(ctx, wsB, "")
	wantErr(t, "a retired workspace without pinned checkpoints", err, fault.ErrNotFound, "it has none")

	store.retiredErr = fault.Integrity("a damaged retirement")
	if _, err := svc.Checkpoint(ctx, wsA, ""); !errors.Is(err, fault.ErrIntegrity) {
		t.Errorf("a retirement that cannot be read: %v", err)
	}
	store.retiredErr = nil
	recs.listErr = fault.Integrity("damaged records")
	if _, err := svc.Checkpoint(ctx, wsA, ""); !errors.Is(err, fault.ErrIntegrity) {
		t.Errorf("records that cannot be read: %v", err)
	}
	recs.committedErr = errors.New("cannot list")
	if _, err := svc.Checkpoint(ctx, wsA, ""); err == nil || errors.Is(err, fault.ErrNotFound) {
		t.Errorf("records that cannot be listed: %v", err)
	}
}

// A clone's source found in the database when it holds the workspace (and the workspace is not
// retired), else in the records; the database's failures are the answer, never the records'.
func TestSharedStoreCheckpointFromTheDatabase(t *testing.T) {
	ctx := context.Background()
	newest, older := "cccc00000000000000000002", "cccc00000000000000000001"
	inRecords := "dddd00000000000000000001"
	recs := &fakeSharedRecords{byID: map[string][]port.RecordedCheckpoint{
		wsA: {{ID: inRecords}}, wsB: {{ID: inRecords}}, wsC: {{ID: inRecords, Pinned: true}},
	}}
	db := &fakeSharedDB{byID: map[string]*fakeWorkspaceCheckpoints{
		wsA: {list: []*checkpoint.Checkpoint{sharedCheckpoint(t, newest, sharedT0.Add(time.Hour)), sharedCheckpoint(t, older, sharedT0)}},
		wsC: {list: []*checkpoint.Checkpoint{sharedCheckpoint(t, newest, sharedT0)}},
	}}
	store := &fakeSharedStore{retired: map[string]time.Time{wsC: sharedT0}}
	svc := NewSharedStoreService("file:///stores/shared", store, recs, db, fakeMachine{})

	got, err := svc.Checkpoint(ctx, wsA, "")
	if err != nil || got.ID != newest || got.Workspace != wsA || got.Root != tree.Sum([]byte(newest)) || !got.CreatedAt.Equal(sharedT0.Add(time.Hour)) {
		t.Errorf("the newest, from the database: %+v, %v", got, err)
	}
	if got, err := svc.Checkpoint(ctx, wsA, older); err != nil || got.ID != older {
		t.Errorf("by ID, from the database: %+v, %v", got, err)
	}
	if _, err := svc.Checkpoint(ctx, wsA, inRecords); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("a checkpoint the database does not hold: %v", err)
	}
	if db.closed != 3 {
		t.Errorf("the database's checkpoints were closed %d times, want 3", db.closed)
	}
	if got, err := svc.Checkpoint(ctx, wsB, ""); err != nil || got.ID != inRecords {
		t.Errorf("a workspace the database does not hold, from its records: %+v, %v", got, err)
	}
	if got, err := svc.Checkpoint(ctx, wsC, ""); err != nil || got.ID != inRecords {
		t.Errorf("a retired workspace, from its records: %+v, %v", got, err)
	}
	db.byID[wsA].list = nil
	_, err = svc.Checkpoint(ctx, wsA, "")
	wantErr(t, "a workspace without checkpoints in the database", err, fault.ErrNotFound, "workspace "+wsA+" has no checkpoint")
	db.byID[wsA].latestErr = errors.New("the database is down")
	if _, err := svc.Checkpoint(ctx, wsA, ""); err == nil || errors.Is(err, fault.ErrNotFound) {
		t.Errorf("a database that cannot read: %v", err)
	}
	db.openErr = fault.Unavailable("the database does not answer")
	if _, err := svc.Checkpoint(ctx, wsB, ""); !errors.Is(err, fault.ErrUnavailable) {
		t.Errorf("a database that cannot open: %v", err)
	}
}

// Before retiring: the workspace must be in the store; its directory is live or gone on this
// machine, unknown elsewhere or when the store does not say where it is.
func TestSharedStoreRetireCheck(t *testing.T) {
	store := &fakeSharedStore{descriptors: map[string]port.WorkspaceDescriptor{
		wsA: {WorkspaceID: wsA, Root: "/a", Host: "here"},
		wsB: {WorkspaceID: wsB, Root: "/b", Host: "there"},
		wsC: {WorkspaceID: wsC, Host: "here"},
	}}
	recs := &fakeSharedRecords{byID: map[string][]port.RecordedCheckpoint{"0123456789abcdef01234567": nil}}
	m := fakeMachine{host: "here", configured: map[string]string{"/a": wsA}}
	svc := NewSharedStoreService("file:///stores/shared", store, recs, nil, m)

	if r, err := svc.RetireCheck(wsA); err != nil || r.Liveness != Live || r.Root != "/a" || r.Host != "here" || r.Already {
		t.Errorf("a live workspace: %+v, %v", r, err)
	}
	if r, err := svc.RetireCheck(wsB); err != nil || r.Liveness != Unknown || r.Root != "/b" {
		t.Errorf("another machine's workspace: %+v, %v", r, err)
	}
	if r, err := svc.RetireCheck(wsC); err != nil || r.Liveness != Unknown {
		t.Errorf("a workspace whose descriptor names no directory: %+v, %v", r, err)
	}
	if r, err := svc.RetireCheck("0123456789abcdef01234567"); err != nil || r.Liveness != Unknown || r.Root != "" {
		t.Errorf("a workspace with records and no descriptor: %+v, %v", r, err)
	}
	_, err := svc.RetireCheck("0123456789abcdef0123456f")
	wantErr(t, "a workspace the store does not hold", err, fault.ErrNotFound,
		"the store /stores/shared holds no workspace 0123456789abcdef0123456f (see `plan workspaces --store file:///stores/shared`)")
	_, err = svc.RetireCheck("bad id")
	wantErr(t, "a malformed ID", err, fault.ErrInvalid, "workspace")

	m.configured["/a"] = wsB // the directory is another workspace's now
	svc = NewSharedStoreService("file:///stores/shared", store, recs, nil, m)
	if r, err := svc.RetireCheck(wsA); err != nil || r.Liveness != Gone {
		t.Errorf("a directory that no longer holds the workspace: %+v, %v", r, err)
	}
	m.configErr = errors.New("unreadable configuration")
	svc = NewSharedStoreService("file:///stores/shared", store, recs, nil, m)
	if r, err := svc.RetireCheck(wsA); err != nil || r.Liveness != Live {
		t.Errorf("a configuration that cannot be read counts as live: %+v, %v", r, err)
	}

	store.retired = map[string]time.Time{wsB: sharedT0}
	if r, err := svc.RetireCheck(wsB); err != nil || !r.Already || !r.RetiredAt.Equal(sharedT0) {
		t.Errorf("a workspace retired before: %+v, %v", r, err)
	}
	store.descriptors[wsB] = port.WorkspaceDescriptor{}
	_, err = svc.RetireCheck(wsB)
	wantErr(t, "a damaged descriptor", err, fault.ErrIntegrity, "the workspace descriptor /stores/shared/workspaces/"+wsB+".json is damaged")
	recs.committedErr = errors.New("cannot list")
	if _, err := svc.RetireCheck("0123456789abcdef0123456f"); err == nil || errors.Is(err, fault.ErrNotFound) {
		t.Errorf("records that cannot be listed: %v", err)
	}
	store.descErr = errors.New("cannot read")
	if _, err := svc.RetireCheck(wsA); err == nil || errors.Is(err, fault.ErrIntegrity) {
		t.Errorf("a descriptor that cannot be read: %v", err)
	}
	store.retiredErr = fault.Integrity("a damaged retirement")
	if _, err := svc.RetireCheck(wsA); !errors.Is(err, fault.ErrIntegrity) {
		t.Errorf("a retirement that cannot be read: %v", err)
	}
}

// Retiring records the store's time and this machine; one retired before keeps its retirement;
// the store's failures are returned.
func TestSharedStoreRetire(t *testing.T) {
	ctx := context.Background()
	store := &fakeSharedStore{now: sharedT0, retired: map[string]time.Time{wsB: sharedT0.Add(-time.Hour)}}
	svc := NewSharedStoreService("file:///stores/shared", store, &fakeSharedRecords{}, nil, fakeMachine{host: "here"})
	r, err := svc.Retire(ctx, Retirement{ID: wsA, Root: "/a", Liveness: Live})
	if err != nil || r.Already || !r.RetiredAt.Equal(sharedT0) || r.Root != "/a" || r.Liveness != Live || store.retiredBy != "here" {
		t.Errorf("retire: %+v, %v (by %q)", r, err, store.retiredBy)
	}
	if r, err := svc.Retire(ctx, Retirement{ID: wsB}); err != nil || !r.Already || !r.RetiredAt.Equal(sharedT0.Add(-time.Hour)) {
		t.Errorf("retire one retired before: %+v, %v", r, err)
	}
	store.retireErr = errors.New("cannot write")
	if r, err := svc.Retire(ctx, Retirement{ID: wsC}); err == nil || !r.RetiredAt.IsZero() {
		t.Errorf("a store that cannot be written: %+v, %v", r, err)
	}
	store.nowErr = errors.New("no clock")
	if _, err := svc.Retire(ctx, Retirement{ID: wsC}); err == nil {
		t.Error("a store without a clock: no error")
	}
}
