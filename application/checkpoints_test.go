package application

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

type svcEnv struct {
	guardEnv
	store   *fakeStore
	snap    *fakeSnap
	repo    *fakeRepo
	history *fakeHistory
	tx      *fakeTx
	ops     *Operations
	svc     *CheckpointService
}

func fe(p, content string) tree.Entry {
	return tree.Entry{Path: p, Kind: tree.KindFile, Mode: 0o644, Size: int64(len(content)), Hash: tree.Sum([]byte(content))}
}

func de(p string) tree.Entry { return tree.Entry{Path: p, Kind: tree.KindDir, Mode: 0o755} }

func le(p, target string) tree.Entry {
	return tree.Entry{Path: p, Kind: tree.KindSymlink, Mode: 0o777, Size: int64(len(target)), Target: target}
}

func newSvcEnv(t *testing.T) *svcEnv {
	t.Helper()
	e := &svcEnv{store: newFakeStore(), repo: newFakeRepo(), history: &fakeHistory{recs: map[string]port.HistoryRecord{}}, tx: &fakeTx{}}
	e.snap = &fakeSnap{store: e.store, content: map[string][]byte{}}
	e.l, e.j = &fakeLocker{}, &fakeJournal{}
	e.r = &fakeRestorer{snap: e.snap}
	e.ops = NewOperations(OperationsParams{
		Checkpoints: e.repo, Plans: newFakePlans(), Corrections: newFakeCorrections(), Snapshotter: e.snap, Store: e.store,
		Locker: e.l, Journal: e.j, Restorer: e.r, Tx: e.tx, History: e.history, Clock: &fakeClock{t: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)},
		Git: fakeGit{commit: strings.Repeat("c", 40), ok: true}, Executor: newFakeExecutor(), Archiver: newFakeArchiver(),
	})
	e.g = e.ops.guard
	e.svc = NewCheckpointService(e.ops)
	return e
}

func (e *svcEnv) create(t *testing.T, live ...tree.Entry) *checkpoint.Checkpoint {
	t.Helper()
	e.snap.live = live
	cp, err := e.svc.Create(context.Background(), CreateRequest{Note: "n"})
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func TestCreate(t *testing.T) {
	e := newSvcEnv(t)
	e.snap.warnings = []string{"skipped special file \"fifo\""}
	var warned []string
	e.snap.live = []tree.Entry{fe("a", "1"), de("d"), fe("d/b", "22"), le("l", "a")}
	first, err := e.svc.Create(context.Background(), CreateRequest{Note: "first", Warn: func(m string) { warned = append(warned, m) }})
	if err != nil {
		t.Fatal(err)
	}
	if first.Type() != checkpoint.Manual || first.ParentID() != "" || first.Note() != "first" {
		t.Errorf("first: type %s parent %q note %q", first.Type(), first.ParentID(), first.Note())
	}
	if first.GitCommit() != strings.Repeat("c", 40) {
		t.Errorf("git commit %q", first.GitCommit())
	}
	if st := first.Stats(); st.Files != 3 || st.Bytes != 1+2+1 || st.StoredBytes != 1 {
		t.Errorf("stats %+v", st)
	}
	if !slices.Equal(warned, e.snap.warnings) {
		t.Errorf("warnings %q", warned)
	}
	if got, _ := e.store.Flatten(first.Root()); !slices.Equal(got, e.snap.live) {
		t.Errorf("root does not name the live tree")
	}
	second, err := e.svc.Create(context.Background(), CreateRequest{Type: checkpoint.Milestone})
	if err != nil {
		t.Fatal(err)
	}
	if second.ParentID() != first.ID() || second.Type() != checkpoint.Milestone {
		t.Errorf("second: parent %q type %s", second.ParentID(), second.Type())
	}
	if e.l.locks != 2 || e.l.held {
		t.Errorf("lock use %+v", e.l)
	}
	list, err := e.svc.List(context.Background())
	if err != nil || len(list) != 2 || list[0].ID() != second.ID() {
		t.Errorf("List = %v, %v", list, err)
	}
	got, err := e.svc.Resolve(context.Background(), string(first.ID()[:16]))
	if err != nil || got.ID() != first.ID() {
		t.Errorf("Resolve prefix = %v, %v", got, err)
	}
	for _, g := range []fakeGit{{}, {commit: "ref: refs/heads/unborn", ok: false}} {
		e.ops.git = g
		third, err := e.svc.Create(context.Background(), CreateRequest{})
		if err != nil || third.GitCommit() != "" {
			t.Errorf("git probe %+v: commit %q, %v; want none recorded", g, third.GitCommit(), err)
		}
	}
}

func TestCreateRejects(t *testing.T) {
	e := newSvcEnv(t)
	if _, err := e.svc.Create(context.Background(), CreateRequest{Type: "weekly"}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("bad type: %v", err)
	}
	if _, err := e.svc.Create(context.Background(), CreateRequest{Note: strings.Repeat("x", checkpoint.MaxNoteLength+1)}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("long note: %v", err)
	}
	if e.snap.snaps != 0 {
		t.Error("snapshot taken for an invalid request")
	}
	e.snap.err = errors.New("EACCES")
	if _, err := e.svc.Create(context.Background(), CreateRequest{}); !errors.Is(err, e.snap.err) {
		t.Errorf("snapshot error: %v", err)
	}
	e.snap.err = nil
	e.repo.latestErr = errors.New("db gone")
	if _, err := e.svc.Create(context.Background(), CreateRequest{}); !errors.Is(err, e.repo.latestErr) {
		t.Errorf("latest error: %v", err)
	}
	e.repo.latestErr = nil
	e.repo.addErr = errors.New("disk full")
	if _, err := e.svc.Create(context.Background(), CreateRequest{}); !errors.Is(err, e.repo.addErr) {
		t.Errorf("add error: %v", err)
	}
	if len(e.repo.cps) != 0 {
		t.Error("checkpoint recorded despite errors")
	}
	if e.l.held {
		t.Error("lock leaked")
	}
}

func TestCreateRecoversFirst(t *testing.T) {
	e := newSvcEnv(t)
	target := e.store.put([]tree.Entry{fe("restored", "x")})
	e.j.op = &port.Operation{ID: "0123456789abcdef01234567", Kind: "rollback", Direction: port.Backward, Source: target, Target: target}
	e.snap.live = []tree.Entry{fe("half", "mixed")}
	cp, err := e.svc.Create(context.Background(), CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if cp.Root() != target {
		t.Errorf("checkpoint taken before recovery finished: its root is not the recovered tree")
	}
}

func TestResolveValidatesBeforeLookup(t *testing.T) {
	e := newSvcEnv(t)
	for _, ref := range []string{"", "abc", "../../etc", "AB.CD", "abcdefabcdefabcdefabcdefa"} {
		if _, err := e.svc.Resolve(context.Background(), ref); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("Resolve(%q) = %v, want ErrInvalid", ref, err)
		}
	}
	if _, err := e.svc.Resolve(context.Background(), "abcd"); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
	if _, err := e.svc.Rollback(context.Background(), RollbackRequest{Ref: "xyz!"}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("Rollback bad ref: %v", err)
	}
	if e.l.locks != 0 {
		t.Error("locked for an invalid reference")
	}
}

func TestDelete(t *testing.T) {
	e := newSvcEnv(t)
	cp := e.create(t, fe("a", "1"))
	got, err := e.svc.Delete(context.Background(), string(cp.ID()), false)
	if err != nil || got.ID() != cp.ID() || len(e.repo.cps) != 0 {
		t.Fatalf("Delete = %v, %v", got, err)
	}
	if _, err := e.svc.Delete(context.Background(), string(cp.ID()), false); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	if e.l.held {
		t.Error("lock leaked")
	}
}

func TestDeleteRefusesProtectedUnlessForced(t *testing.T) {
	e := newUseCaseEnv(t)
	p := ranABC(t, e)
	b, _ := p.Decision("b")
	cp := latestOf(b).CheckpointID
	n := len(e.repo.cps)
	_, err := e.cps.Delete(context.Background(), string(cp), false)
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "live decision b") || len(e.repo.cps) != n {
		t.Fatalf("delete of a protected checkpoint: %v (checkpoints left %d of %d)", err, len(e.repo.cps), n)
	}
	if _, err := e.cps.Delete(context.Background(), string(cp), true); err != nil || len(e.repo.cps) != n-1 {
		t.Fatalf("forced delete: %v", err)
	}
}

func TestDiff(t *testing.T) {
	e := newSvcEnv(t)
	a := e.create(t, fe("a", "1"), fe("b", "2"))
	b := e.create(t, fe("a", "1"), fe("c", "3"))
	res, err := e.svc.Diff(context.Background(), string(a.ID()), string(b.ID()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.To == nil || res.To.ID() != b.ID() || summarizeChanges(res.Changes) != "D b,A c" {
		t.Errorf("checkpoint diff: %s", summarizeChanges(res.Changes))
	}
	e.snap.live = []tree.Entry{fe("a", "changed")}
	res, err = e.svc.Diff(context.Background(), string(a.ID()), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.To != nil || summarizeChanges(res.Changes) != "M a,D b" {
		t.Errorf("live diff: %s", summarizeChanges(res.Changes))
	}
	if _, err := e.svc.Diff(context.Background(), string(a.ID()), "ffff", nil); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("unknown TO: %v", err)
	}
	e.snap.err = errors.New("scan failed")
	if _, err := e.svc.Diff(context.Background(), string(a.ID()), "", nil); !errors.Is(err, e.snap.err) {
		t.Errorf("scan error: %v", err)
	}
	e.store.err = fault.Integrity("tree damaged")
	if _, err := e.svc.Entries(context.Background(), a); !errors.Is(err, fault.ErrIntegrity) || !strings.Contains(err.Error(), string(a.ID())) {
		t.Errorf("Entries error %v should be integrity and name the checkpoint", err)
	}
}

func summarizeChanges(cs []tree.Change) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.Type.Letter() + " " + c.Path
	}
	return strings.Join(s, ",")
}

func TestRollback(t *testing.T) {
	e := newSvcEnv(t)
	target := e.create(t, fe("a", "old"), fe("b", "gone later"), de("d"), fe("d/x", "x"))
	current := []tree.Entry{fe("a", "new"), fe("c", "added later"), le("l", "a")}
	e.snap.live = slices.Clone(current)
	e.l.locks = 0

	res, err := e.svc.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID()[:16])})
	if err != nil {
		t.Fatal(err)
	}
	// The safety checkpoint honours the target's ignore rules as well as the live ones.
	if !slices.Equal(e.snap.also, []tree.Hash{target.Root()}) {
		t.Errorf("safety snapshot ignore trees %v, want the target's", e.snap.also)
	}
	if got, _ := e.store.Flatten(target.Root()); !slices.Equal(e.snap.live, got) {
		t.Errorf("workspace after rollback %v, want the target tree", e.snap.live)
	}
	// The backup is a pre_rollback checkpoint of the state before.
	if res.Backup == nil || res.Backup.Type() != checkpoint.PreRollback || !strings.Contains(res.Backup.Note(), string(target.ID())) {
		t.Fatalf("backup %+v", res.Backup)
	}
	if got, _ := e.store.Flatten(res.Backup.Root()); !slices.Equal(got, current) {
		t.Errorf("backup tree %v, want the state before the rollback", got)
	}
	// Counts: files and symlinks only. a modified; b, d/x added; c, l deleted; d (a dir) not counted.
	if res.Counts != (port.ChangeCounts{Added: 2, Modified: 1, Deleted: 2}) {
		t.Errorf("counts %+v", res.Counts)
	}
	if len(res.RevertedDecisions) != 0 || res.Target.ID() != target.ID() || res.DryRun { // no plan: none to revert
		t.Errorf("result %+v", res)
	}
	// The trees were compared once: the restore is handed the rollback's comparison.
	if e.r.diffsGiven != 1 || len(e.r.applies) != 1 {
		t.Errorf("%d applies, %d given the comparison; want 1 and 1", len(e.r.applies), e.r.diffsGiven)
	}
	// The journal named the right trees, and is gone.
	if len(e.j.writes) != 1 {
		t.Fatalf("journal writes %+v", e.j.writes)
	}
	op := e.j.writes[0]
	if op.Kind != "rollback" || op.Direction != port.Forward || op.Source != res.Backup.Root() ||
		op.Target != target.Root() || op.TargetCheckpoint != target.ID() ||
		op.BackupCheckpoint != res.Backup.ID() || op.Counts != res.Counts || op.StartedAt.IsZero() {
		t.Errorf("journaled operation %+v", op)
	}
	if e.j.op != nil {
		t.Error("journal left behind")
	}
	if !slices.Equal(e.r.applies, [][2]tree.Hash{{res.Backup.Root(), target.Root()}}) {
		t.Errorf("applies %v", e.r.applies)
	}
	// Database side: one rollback counted on the target, one history record.
	if got, _ := e.repo.Get(context.Background(), target.ID()); got.RollbackCount() != 1 {
		t.Errorf("rollback count %d", got.RollbackCount())
	}
	rec, err := e.history.Get(context.Background(), op.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Kind != "rollback" || rec.TargetCheckpoint != target.ID() || rec.BackupCheckpoint != res.Backup.ID() ||
		rec.Added != 2 || rec.Modified != 1 || rec.Deleted != 2 || len(rec.Reverted) != 0 ||
		rec.FinishedAt.Before(rec.StartedAt) {
		t.Errorf("history %+v", rec)
	}
	if e.l.locks != 1 || e.l.held {
		t.Errorf("lock use %+v", e.l)
	}
	// The finisher is idempotent: recovery may run it again for the same operation.
	if err := e.ops.finishRollback(context.Background(), op); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.repo.Get(context.Background(), target.ID()); got.RollbackCount() != 1 {
		t.Errorf("re-running the finisher counted again: %d", got.RollbackCount())
	}
	// Rolling back to the backup restores the state before.
	if _, err := e.svc.Rollback(context.Background(), RollbackRequest{Ref: string(res.Backup.ID())}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.snap.live, current) {
		t.Errorf("undo: workspace %v, want %v", e.snap.live, current)
	}
}

func TestRollbackDryRun(t *testing.T) {
	e := newSvcEnv(t)
	target := e.create(t, fe("a", "old"), fe("b", "b"))
	e.snap.live = []tree.Entry{fe("a", "new"), de("empty")}
	locks := e.l.locks
	res, err := e.svc.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID()), DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.DryRun || res.Backup != nil || res.Counts != (port.ChangeCounts{Added: 1, Modified: 1}) {
		t.Errorf("dry run %+v", res)
	}
	if summarizeChanges(res.Changes) != "M a,A b,D empty" {
		t.Errorf("changes %s", summarizeChanges(res.Changes))
	}
	if len(e.j.writes) != 0 || len(e.r.applies) != 0 || len(e.repo.cps) != 1 || e.l.locks != locks {
		t.Error("a dry run changed something or took the lock")
	}
	e.snap.err = errors.New("scan")
	if _, err := e.svc.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID()), DryRun: true}); err == nil {
		t.Error("scan error ignored")
	}
}

func TestRollbackApplyFailure(t *testing.T) {
	e := newSvcEnv(t)
	target := e.create(t, fe("a", "old"))
	e.snap.live = []tree.Entry{fe("a", "new")}
	e.r.applyErr = errors.New("operation not permitted")
	res, err := e.svc.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID())})
	if !errors.Is(err, e.r.applyErr) || !strings.Contains(err.Error(), string(target.ID())) {
		t.Fatalf("Rollback = %v", err)
	}
	if res.Backup == nil {
		t.Error("the result should still name the backup taken")
	}
	if got, _ := e.repo.Get(context.Background(), target.ID()); got.RollbackCount() != 0 {
		t.Error("failed rollback counted")
	}
	if len(e.history.recs) != 0 || e.j.op != nil || e.l.held {
		t.Errorf("history %v, journal %+v, lock %+v", e.history.recs, e.j.op, e.l)
	}
}

func TestRollbackRecordFailureUndoes(t *testing.T) {
	e := newSvcEnv(t)
	target := e.create(t, fe("a", "old"))
	current := []tree.Entry{fe("a", "new"), fe("b", "b")}
	e.snap.live = slices.Clone(current)
	e.repo.updateErr = errors.New("database is locked")
	res, err := e.svc.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID())})
	if !errors.Is(err, e.repo.updateErr) {
		t.Fatalf("Rollback = %v", err)
	}
	if !slices.Equal(e.snap.live, current) {
		t.Errorf("workspace %v after a rollback that could not be recorded, want the state before", e.snap.live)
	}
	if res.Backup == nil || e.j.op != nil || len(e.history.recs) != 0 || e.l.held {
		t.Errorf("backup %v, journal %+v, history %v, lock %+v", res.Backup, e.j.op, e.history.recs, e.l)
	}
	e.repo.updateErr = nil
	if got, _ := e.repo.Get(context.Background(), target.ID()); got.RollbackCount() != 0 {
		t.Errorf("rollback count %d", got.RollbackCount())
	}
}

func TestRollbackErrorsBeforeTouching(t *testing.T) {
	e := newSvcEnv(t)
	target := e.create(t, fe("a", "old"))
	e.snap.err = errors.New("EIO")
	if _, err := e.svc.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID())}); !errors.Is(err, e.snap.err) {
		t.Errorf("backup snapshot failure: %v", err)
	}
	if len(e.j.writes) != 0 || len(e.r.applies) != 0 {
		t.Error("workspace touched without a backup")
	}
	e.snap.err = nil
	e.store.err = fault.Integrity("target tree damaged")
	if _, err := e.svc.Rollback(context.Background(), RollbackRequest{Ref: string(target.ID())}); !errors.Is(err, fault.ErrIntegrity) {
		t.Errorf("damaged target: %v", err)
	}
	if len(e.j.writes) != 0 || len(e.r.applies) != 0 {
		t.Error("workspace touched although the target cannot be read")
	}
}

func TestOpenContent(t *testing.T) {
	e := newSvcEnv(t)
	f := fe("a", "stored")
	e.store.blobs[f.Hash] = []byte("stored")
	e.snap.content["a"] = []byte("live")
	read := func(live bool) string {
		rc, err := e.svc.OpenContent(f, live)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, _ := io.ReadAll(rc)
		return string(b)
	}
	if read(false) != "stored" || read(true) != "live" {
		t.Error("OpenContent read the wrong side")
	}
	if _, err := e.svc.OpenContent(de("d"), false); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("directory: %v", err)
	}
	if _, err := e.svc.OpenContent(le("l", "a"), true); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("symlink: %v", err)
	}
}

func TestCount(t *testing.T) {
	f1, f2, l1, d1 := fe("p", "1"), fe("p", "2"), le("p", "x"), de("p")
	cases := []struct {
		name string
		c    tree.Change
		want port.ChangeCounts
	}{
		{"file added", tree.Change{Type: tree.Added, To: &f1}, port.ChangeCounts{Added: 1}},
		{"symlink added", tree.Change{Type: tree.Added, To: &l1}, port.ChangeCounts{Added: 1}},
		{"dir added", tree.Change{Type: tree.Added, To: &d1}, port.ChangeCounts{}},
		{"file deleted", tree.Change{Type: tree.Deleted, From: &f1}, port.ChangeCounts{Deleted: 1}},
		{"dir deleted", tree.Change{Type: tree.Deleted, From: &d1}, port.ChangeCounts{}},
		{"file modified", tree.Change{Type: tree.Modified, From: &f1, To: &f2}, port.ChangeCounts{Modified: 1}},
		{"dir mode", tree.Change{Type: tree.Modified, From: &d1, To: &d1}, port.ChangeCounts{}},
		{"file to symlink", tree.Change{Type: tree.TypeChanged, From: &f1, To: &l1}, port.ChangeCounts{Modified: 1}},
		{"file to dir", tree.Change{Type: tree.TypeChanged, From: &f1, To: &d1}, port.ChangeCounts{Deleted: 1}},
		{"dir to symlink", tree.Change{Type: tree.TypeChanged, From: &d1, To: &l1}, port.ChangeCounts{Added: 1}},
	}
	var all []tree.Change
	var sum port.ChangeCounts
	for _, c := range cases {
		if got := Count([]tree.Change{c.c}); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		all = append(all, c.c)
		sum.Added += c.want.Added
		sum.Modified += c.want.Modified
		sum.Deleted += c.want.Deleted
	}
	if got := Count(all); got != sum {
		t.Errorf("all: %+v, want %+v", got, sum)
	}
	if got := Count(nil); got != (port.ChangeCounts{}) {
		t.Errorf("nil: %+v", got)
	}
}

// The restore mode travels in the journal: a files-only rollback finished by recovery still leaves
// the decision states alone, and a rollback journaled before modes existed restores both.
func TestRollbackModeSurvivesRecovery(t *testing.T) {
	for _, tc := range []struct {
		detail   string
		reverted int
	}{{`{"mode":"files"}`, 0}, {`{"mode":"both"}`, 2}, {``, 2}} {
		e := newUseCaseEnv(t)
		p := ranABC(t, e)
		b, _ := p.Decision("b")
		target := latestOf(b).CheckpointID
		op := port.Operation{ID: "0123456789abcdef01234567", Kind: kindRollback, TargetCheckpoint: target, Detail: []byte(tc.detail)}
		if err := e.ops.finishRollback(context.Background(), op); err != nil {
			t.Fatal(err)
		}
		rec, err := e.history.Get(context.Background(), op.ID)
		if err != nil || len(rec.Reverted) != tc.reverted {
			t.Fatalf("detail %q: reverted %v, %v; want %d", tc.detail, rec.Reverted, err, tc.reverted)
		}
	}
}

func TestParseRestoreMode(t *testing.T) {
	for in, want := range map[string]RestoreMode{"": RestoreBoth, "both": RestoreBoth, "files": RestoreFiles, "state": RestoreState} {
		if got, err := ParseRestoreMode(in); err != nil || got != want {
			t.Errorf("%q: %q, %v", in, got, err)
		}
	}
	if _, err := ParseRestoreMode("all"); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("all: %v", err)
	}
}

// Found by the hostile suite (MCP rewind with dry_run): a dry run of a rollback reported no
// decisions to revert where the rollback then reverted some. It reports what the rollback does.
func TestRollbackDryRunReportsTheDecisionsItWouldRevert(t *testing.T) {
	e := newUseCaseEnv(t)
	p := ranABC(t, e)
	b, _ := p.Decision("b")
	ref := string(latestOf(b).CheckpointID)
	for _, mode := range []RestoreMode{RestoreBoth, RestoreState} {
		dry, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: ref, Mode: mode, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(dry.RevertedDecisions, []string{"b", "c"}) {
			t.Fatalf("%s: the dry run would revert %v", mode, dry.RevertedDecisions)
		}
	}
	if dry, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: ref, Mode: RestoreFiles, DryRun: true}); err != nil || len(dry.RevertedDecisions) != 0 {
		t.Fatalf("files only: %v %v", dry.RevertedDecisions, err)
	}
	real, err := e.cps.Rollback(context.Background(), RollbackRequest{Ref: ref})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(real.RevertedDecisions, []string{"b", "c"}) {
		t.Fatalf("the rollback reverted %v", real.RevertedDecisions)
	}
}
