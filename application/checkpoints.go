package application

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/tree"
)

// HistoryRecord is one finished workspace operation (a rollback or a correction's revert step).
type HistoryRecord struct {
	ID               string
	Kind             string
	TargetCheckpoint string
	BackupCheckpoint string
	StartedAt        time.Time
	FinishedAt       time.Time
	Added            int
	Modified         int
	Deleted          int
	Reverted         []string
}

// History records finished operations. Has makes finishers idempotent.
type History interface {
	Record(ctx context.Context, r HistoryRecord) error
	Has(ctx context.Context, id string) (bool, error)
	// Get returns one record; fault.ErrNotFound when there is none.
	Get(ctx context.Context, id string) (HistoryRecord, error)
	List(ctx context.Context) ([]HistoryRecord, error)
}

// DecisionReverter marks the decisions executed after a checkpoint as reverted, inside the caller's
// unit of work, and returns their IDs. The plan use cases provide it; without plans it is nil.
type DecisionReverter interface {
	RevertAfter(ctx context.Context, cp *checkpoint.Checkpoint, operationID string) ([]string, error)
}

// CheckpointService is the checkpoint use cases: create, list, show, delete, diff and rollback.
type CheckpointService struct {
	repo      checkpoint.Repository
	snap      Snapshotter
	store     TreeStore
	guard     *Guard
	tx        Transactor
	history   History
	clock     Clock
	git       GitProbe
	metrics   Metrics
	reverter  DecisionReverter
	protector Protector
}

// CheckpointDeps are CheckpointService's collaborators.
type CheckpointDeps struct {
	Repo        checkpoint.Repository
	Snapshotter Snapshotter
	Store       TreeStore
	Guard       *Guard
	Tx          Transactor
	History     History
	Clock       Clock
	Git         GitProbe
	Metrics     Metrics
}

// NewCheckpointService returns the service and registers its rollback finisher with the guard.
func NewCheckpointService(d CheckpointDeps) *CheckpointService {
	s := &CheckpointService{
		repo: d.Repo, snap: d.Snapshotter, store: d.Store, guard: d.Guard, tx: d.Tx,
		history: d.History, clock: d.Clock, git: d.Git, metrics: d.Metrics,
	}
	d.Guard.Register(kindRollback, s.finishRollback)
	d.Guard.RegisterRecorder(s.recordBeforeRecovery)
	return s
}

// recordBeforeRecovery records the live workspace as a pre_recover checkpoint; the guard calls it
// under the lock when recovery would otherwise overwrite work done after a crash.
func (s *CheckpointService) recordBeforeRecovery(ctx context.Context, note string) (string, error) {
	cp, err := s.create(ctx, CreateRequest{Type: checkpoint.PreRecover, Note: note})
	if err != nil {
		return "", err
	}
	return string(cp.ID()), nil
}

// SetDecisionReverter connects the plan use cases, which are built after this service.
func (s *CheckpointService) SetDecisionReverter(r DecisionReverter) { s.reverter = r }

// Protector names the checkpoints that something still needs (a live decision's pre_decision
// checkpoint, an unfinished correction's), with the reason.
type Protector interface {
	Protected(ctx context.Context) (map[checkpoint.ID]string, error)
}

// SetProtector connects the maintenance use cases, which are built after this service.
func (s *CheckpointService) SetProtector(p Protector) { s.protector = p }

// Guard returns the workspace guard shared with the other services.
func (s *CheckpointService) Guard() *Guard { return s.guard }

// CreateRequest describes a checkpoint to take.
type CreateRequest struct {
	Type       checkpoint.Type
	Note       string
	DecisionID string
	Progress   Progress
	// Warn receives what the snapshot skipped (special files); nil discards it.
	Warn func(msg string)
}

// Create records the live workspace as a new checkpoint.
func (s *CheckpointService) Create(ctx context.Context, req CreateRequest) (*checkpoint.Checkpoint, error) {
	ctx, release, err := s.guard.Enter(ctx, "checkpoint create")
	if err != nil {
		return nil, err
	}
	defer release()
	return s.create(ctx, req)
}

func (s *CheckpointService) create(ctx context.Context, req CreateRequest) (*checkpoint.Checkpoint, error) {
	cp, err := s.take(ctx, req)
	if err != nil && s.metrics != nil && !errors.Is(err, fault.ErrInvalid) {
		// Counted for `plan stats`; the failure itself is returned, never swallowed.
		_ = s.metrics.RecordCheckpointFailure(context.WithoutCancel(ctx), s.clock.Now(), err.Error())
	}
	return cp, err
}

func (s *CheckpointService) take(ctx context.Context, req CreateRequest) (*checkpoint.Checkpoint, error) {
	if req.Type == "" {
		req.Type = checkpoint.Manual
	}
	if _, err := checkpoint.ParseType(string(req.Type)); err != nil {
		return nil, err
	}
	if len(req.Note) > checkpoint.MaxNoteLength {
		return nil, fault.Invalid("note is %d bytes; at most %d", len(req.Note), checkpoint.MaxNoteLength)
	}
	began := time.Now()
	now := s.clock.Now()
	snap, err := s.snap.Snapshot(ctx, req.Progress)
	if err != nil {
		return nil, fmt.Errorf("snapshot the workspace: %w", err)
	}
	if err := s.guard.hit("checkpoint.stored"); err != nil {
		return nil, err
	}
	if req.Warn != nil {
		for _, w := range snap.Warnings {
			req.Warn(w)
		}
	}
	var parent checkpoint.ID
	switch latest, err := s.repo.Latest(ctx); {
	case err == nil:
		parent = latest.ID()
	case !errors.Is(err, fault.ErrNotFound):
		return nil, err
	}
	commit, ok := s.git.Head()
	if !ok {
		commit = ""
	}
	cp, err := checkpoint.New(checkpoint.Params{
		ID: ident.New(now), Type: req.Type, CreatedAt: now, Note: req.Note,
		DecisionID: req.DecisionID, ParentID: parent, GitCommit: commit, Root: snap.Root,
		Stats: checkpoint.Stats{
			Files: snap.Files, Bytes: snap.Bytes, StoredBytes: snap.StoredBytes,
			Duration: time.Since(began),
		},
	})
	if err != nil {
		return nil, err
	}
	if err := s.repo.Add(ctx, cp); err != nil {
		return nil, fmt.Errorf("record checkpoint: %w", err)
	}
	return cp, nil
}

// List returns every checkpoint, newest first.
func (s *CheckpointService) List(ctx context.Context) ([]*checkpoint.Checkpoint, error) {
	return s.repo.List(ctx)
}

// Resolve finds a checkpoint by full ID or unique prefix.
func (s *CheckpointService) Resolve(ctx context.Context, ref string) (*checkpoint.Checkpoint, error) {
	if err := ident.ValidateRef("checkpoint", ref); err != nil {
		return nil, err
	}
	return s.repo.Resolve(ctx, ref)
}

// Entries returns the checkpoint's tree as an ordered entry list.
func (s *CheckpointService) Entries(_ context.Context, cp *checkpoint.Checkpoint) ([]tree.Entry, error) {
	entries, err := s.store.Flatten(cp.Root())
	if err != nil {
		return nil, fmt.Errorf("read checkpoint %s: %w", cp.ID(), err)
	}
	return entries, nil
}

// Delete removes a checkpoint's record. Its data stays in the store until gc. A checkpoint that a
// live decision or an unfinished correction needs is refused unless force is set: deleting it would
// make that decision impossible to correct.
func (s *CheckpointService) Delete(ctx context.Context, ref string, force bool) (*checkpoint.Checkpoint, error) {
	ctx, release, err := s.guard.Enter(ctx, "checkpoint delete")
	if err != nil {
		return nil, err
	}
	defer release()
	cp, err := s.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	if s.protector != nil && !force {
		protected, err := s.protector.Protected(ctx)
		if err != nil {
			return nil, err
		}
		if why, ok := protected[cp.ID()]; ok {
			return nil, fault.Conflict("checkpoint %s is the %s; pass --force to delete it anyway", cp.ID(), why)
		}
	}
	if err := s.repo.Delete(ctx, cp.ID()); err != nil {
		return nil, err
	}
	return cp, nil
}

// DiffResult is the difference between a checkpoint and another checkpoint or the live workspace.
type DiffResult struct {
	From    *checkpoint.Checkpoint
	To      *checkpoint.Checkpoint // nil for the live workspace
	Changes []tree.Change
}

// Diff compares checkpoint fromRef with toRef, or with the live workspace when toRef is "".
func (s *CheckpointService) Diff(ctx context.Context, fromRef, toRef string, p Progress) (DiffResult, error) {
	from, err := s.Resolve(ctx, fromRef)
	if err != nil {
		return DiffResult{}, err
	}
	res := DiffResult{From: from}
	if toRef != "" {
		if res.To, err = s.Resolve(ctx, toRef); err != nil {
			return DiffResult{}, err
		}
		res.Changes, err = s.store.DiffTrees(from.Root(), res.To.Root())
		return res, err
	}
	old, err := s.Entries(ctx, from)
	if err != nil {
		return DiffResult{}, err
	}
	live, err := s.snap.Scan(ctx, p)
	if err != nil {
		return DiffResult{}, fmt.Errorf("scan the workspace: %w", err)
	}
	res.Changes = tree.Diff(old, live)
	return res, nil
}

const kindRollback = "rollback"

// RollbackRequest describes a rollback.
type RollbackRequest struct {
	Ref      string
	DryRun   bool
	Progress Progress
	Warn     func(msg string)
}

// RollbackResult says what a rollback did (or, dry, would do).
type RollbackResult struct {
	Target            *checkpoint.Checkpoint
	Backup            *checkpoint.Checkpoint // nil on a dry run
	Changes           []tree.Change          // live workspace → target
	Counts            ChangeCounts
	RevertedDecisions []string
	DryRun            bool
	// Kept lists paths the target has that were left alone because they hold ignored data.
	Kept []string
}

// ChangeCounts counts the files and symlinks a change set creates, modifies and deletes.
type ChangeCounts struct{ Added, Modified, Deleted int }

// Count tallies changes the way the contract reports them: files and symlinks only, a type change
// counting as a modification (or as an addition/deletion when a directory is involved).
func Count(changes []tree.Change) ChangeCounts {
	var c ChangeCounts
	isFile := func(e *tree.Entry) bool { return e != nil && e.Kind != tree.KindDir }
	for _, ch := range changes {
		switch {
		case isFile(ch.From) && isFile(ch.To):
			c.Modified++
		case isFile(ch.To):
			c.Added++
		case isFile(ch.From):
			c.Deleted++
		}
	}
	return c
}

// Rollback restores the workspace to the checkpoint ref names. It first records the current state
// as a pre_rollback checkpoint, then applies only the difference under the journal.
func (s *CheckpointService) Rollback(ctx context.Context, req RollbackRequest) (RollbackResult, error) {
	if req.DryRun {
		target, err := s.Resolve(ctx, req.Ref)
		if err != nil {
			return RollbackResult{}, err
		}
		return s.previewRollback(ctx, target, req.Progress)
	}
	if err := ident.ValidateRef("checkpoint", req.Ref); err != nil {
		return RollbackResult{}, err // bad input is refused before waiting for the lock
	}
	ctx, release, err := s.guard.Enter(ctx, "rollback")
	if err != nil {
		return RollbackResult{}, err
	}
	defer release()
	// Resolved under the lock: a checkpoint deleted (or pruned) while this command waited is not
	// found, rather than rolled back to and then missing when the rollback is recorded.
	target, err := s.Resolve(ctx, req.Ref)
	if err != nil {
		return RollbackResult{}, err
	}
	return s.rollback(ctx, target, req, nil)
}

// rollbackToID rolls back to a known checkpoint; the caller holds the guard.
func (s *CheckpointService) rollbackToID(ctx context.Context, id checkpoint.ID, req RollbackRequest) (RollbackResult, error) {
	target, err := s.repo.Get(ctx, id)
	if err != nil {
		return RollbackResult{}, err
	}
	return s.rollback(ctx, target, req, nil)
}

func (s *CheckpointService) previewRollback(ctx context.Context, target *checkpoint.Checkpoint, p Progress) (RollbackResult, error) {
	want, err := s.Entries(ctx, target)
	if err != nil {
		return RollbackResult{}, err
	}
	live, err := s.snap.Scan(ctx, p)
	if err != nil {
		return RollbackResult{}, fmt.Errorf("scan the workspace: %w", err)
	}
	changes := tree.Diff(live, want)
	return RollbackResult{Target: target, Changes: changes, Counts: Count(changes), DryRun: true}, nil
}

// rollback is the rollback step other use cases (corrections) compose: the caller already holds the
// guard. A non-nil op carries the kind and detail its finisher needs.
func (s *CheckpointService) rollback(ctx context.Context, target *checkpoint.Checkpoint, req RollbackRequest, op *Operation) (RollbackResult, error) {
	return s.rollbackWithBackup(ctx, target, req, op, nil)
}

// rollbackWithBackup rolls back using backup as the undo point when the caller already recorded the
// current state (a correction's pre_correction checkpoint); otherwise it takes a pre_rollback one.
func (s *CheckpointService) rollbackWithBackup(ctx context.Context, target *checkpoint.Checkpoint, req RollbackRequest, op *Operation, backup *checkpoint.Checkpoint) (RollbackResult, error) {
	if backup == nil {
		var err error
		backup, err = s.create(ctx, CreateRequest{
			Type: checkpoint.PreRollback, Progress: req.Progress, Warn: req.Warn,
			Note: "before rollback to " + string(target.ID()),
		})
		if err != nil {
			return RollbackResult{}, fmt.Errorf("record the current state before rolling back: %w", err)
		}
	}
	changes, err := s.store.DiffTrees(backup.Root(), target.Root())
	if err != nil {
		return RollbackResult{}, fmt.Errorf("compare with checkpoint %s: %w", target.ID(), err)
	}
	if op == nil {
		op = &Operation{Kind: kindRollback}
	}
	if op.ID == "" {
		op.ID = ident.New(s.clock.Now())
	}
	op.Source = backup.Root().String()
	op.Target = target.Root().String()
	op.TargetCheckpoint = string(target.ID())
	op.BackupCheckpoint = string(backup.ID())
	op.StartedAt = s.clock.Now()
	counts := Count(changes)
	op.Counts = counts
	stats, err := s.guard.run(ctx, *op, req.Progress)
	if err != nil {
		return RollbackResult{Target: target, Backup: backup}, fmt.Errorf("roll back to %s: %w", target.ID(), err)
	}
	rec, err := s.history.Get(ctx, op.ID)
	if err != nil {
		return RollbackResult{}, fmt.Errorf("read back rollback %s: %w", op.ID, err)
	}
	return RollbackResult{
		Target: target, Backup: backup, Changes: changes, Counts: counts,
		RevertedDecisions: rec.Reverted, Kept: stats.Kept,
	}, nil
}

// OpenContent opens the content of a file entry: from the store, or from the live workspace when
// live is true.
func (s *CheckpointService) OpenContent(e tree.Entry, live bool) (io.ReadCloser, error) {
	if e.Kind != tree.KindFile {
		return nil, fault.Invalid("%q is not a regular file", e.Path)
	}
	if live {
		return s.snap.OpenLive(e.Path)
	}
	return s.store.OpenBlob(e.Hash)
}

// finishRollback is the database side of a rollback: count it on the target, mark later decisions
// reverted and record it in the history, in one transaction. It is idempotent.
func (s *CheckpointService) finishRollback(ctx context.Context, op Operation) error {
	return s.tx.Do(ctx, func(ctx context.Context) error {
		done, err := s.history.Has(ctx, op.ID)
		if err != nil || done {
			return err
		}
		return s.recordRollback(ctx, op)
	})
}

// recordRollback is finishRollback's body for callers that already run a transaction and checked
// that op is not recorded yet.
func (s *CheckpointService) recordRollback(ctx context.Context, op Operation) error {
	var target *checkpoint.Checkpoint
	err := s.repo.Update(ctx, checkpoint.ID(op.TargetCheckpoint), func(c *checkpoint.Checkpoint) error {
		c.RecordRollback()
		target = c
		return nil
	})
	if err != nil {
		return err
	}
	var reverted []string
	if s.reverter != nil {
		if reverted, err = s.reverter.RevertAfter(ctx, target, op.ID); err != nil {
			return err
		}
	}
	return s.history.Record(ctx, HistoryRecord{
		ID: op.ID, Kind: op.Kind, TargetCheckpoint: op.TargetCheckpoint,
		BackupCheckpoint: op.BackupCheckpoint, StartedAt: op.StartedAt, FinishedAt: s.clock.Now(),
		Added: op.Counts.Added, Modified: op.Counts.Modified, Deleted: op.Counts.Deleted, Reverted: reverted,
	})
}

func parseHash(s string) (tree.Hash, error) {
	h, err := tree.ParseHash(strings.TrimSpace(s))
	if err != nil {
		return h, fault.Wrap(fault.ErrIntegrity, err, "journal names a malformed tree")
	}
	return h, nil
}
