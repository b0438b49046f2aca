package application

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/planhq/plan/application/internal/kernel"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/tree"
)

// CheckpointService is the checkpoint use cases: create, list, show, delete, diff and rollback.
type CheckpointService struct {
	ops *Operations
	// The parts of the shared core this service uses, taken from it when it is built.
	guard       *kernel.Guard
	clock       port.Clock
	checkpoints checkpoint.Repository
	store       port.TreeStore
	snap        port.Snapshotter
	trees       port.TreeWriter
}

// NewCheckpointService returns the service.
func NewCheckpointService(ops *Operations) *CheckpointService {
	return &CheckpointService{ops: ops, guard: ops.guard, clock: ops.clock, checkpoints: ops.checkpoints, store: ops.store, snap: ops.snap, trees: ops.trees}
}

// CreateRequest describes a checkpoint to take.
type CreateRequest struct {
	Type       checkpoint.Type
	Note       string
	DecisionID string
	Progress   port.Progress
	// Warn receives what the snapshot skipped (special files); nil discards it.
	Warn func(msg string)
	// Unreadable, when set, receives the paths the snapshot could not read (permission denied,
	// sorted; called only when there are some): left out of the checkpoint, and left alone by a
	// rollback to it. Warn names them too.
	Unreadable func(paths []string)
	// AlsoExclude names a tree whose .planignore rules apply on top of the live ones: the target of
	// the rollback this checkpoint is the safety net of, so that nothing either side excludes is
	// stored, and so that undoing the rollback cannot delete it.
	AlsoExclude tree.Hash
	// Check, when set, validates the workspace under the lock before it is recorded: a failure is
	// a *NotValidError and nothing is recorded (checkpoint create --validate).
	Check *CheckRequest
	// Labels tag the checkpoint (KEY=VALUE, see checkpoint.ValidateLabels).
	Labels map[string]string
	// logged says the checkpoint is the command's last change: its transaction also writes the
	// command's open operation log entry, if the context carries one (see OpenOperation).
	logged bool
	// with, when set, runs in the checkpoint's own transaction, after its row is written: what
	// must be durable with the checkpoint commits with it, in one durable write (an agent's hook
	// records its tool call so), and neither stands without the other.
	with func(ctx context.Context, cp *checkpoint.Checkpoint) error
}

// SetPinned pins (or unpins) the checkpoint ref names: a pinned checkpoint is never pruned, by
// `checkpoint prune` or a retention policy.
func (s *CheckpointService) SetPinned(ctx context.Context, ref string, pinned bool) (_ *checkpoint.Checkpoint, err error) {
	kind := "pin"
	if !pinned {
		kind = "unpin"
	}
	ctx, done := s.ops.begin(ctx, kind, "", ref)
	defer done(&err)
	if err := checkName(ref); err != nil {
		return nil, err
	}
	ctx, release, err := s.guard.Enter(ctx, "checkpoint pin")
	if err != nil {
		return nil, err
	}
	defer release()
	cp, err := s.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	var out *checkpoint.Checkpoint
	err = s.checkpoints.Update(ctx, cp.ID(), func(c *checkpoint.Checkpoint) error {
		c.SetPinned(pinned)
		out = c
		return nil
	})
	return out, err
}

// Create records the live workspace as a new checkpoint.
func (s *CheckpointService) Create(ctx context.Context, req CreateRequest) (_ *checkpoint.Checkpoint, err error) {
	ctx, done := s.ops.begin(ctx, "checkpoint", "")
	defer done(&err)
	if err := checkpoint.ValidateLabels(req.Labels); err != nil {
		return nil, err // refused before waiting for the lock or reading the workspace
	}
	ctx, release, err := s.guard.Enter(ctx, "checkpoint create")
	if err != nil {
		return nil, err
	}
	defer release()
	if err := s.ops.checkBeforeCreate(ctx, req); err != nil {
		return nil, err
	}
	req.logged = true
	return s.ops.create(ctx, req)
}

// AdoptRequest names a tree another workspace recorded in the shared store.
type AdoptRequest struct {
	Root tree.Hash
	Note string
}

// Adopt records a tree that another workspace recorded in the same shared store as a checkpoint of
// type clone of this workspace, without touching the live workspace: the start of a clone's
// history, which a rollback to it then materialises. The tree must be held whole.
func (s *CheckpointService) Adopt(ctx context.Context, req AdoptRequest) (*checkpoint.Checkpoint, error) {
	if s.trees == nil {
		return nil, errors.New("adopting a tree is not wired: Operations has no TreeWriter")
	}
	ctx, release, err := s.guard.Enter(ctx, "clone")
	if err != nil {
		return nil, err
	}
	defer release()
	began := s.clock.Now()
	files, bytes, err := s.trees.Adopt(req.Root)
	if err != nil {
		return nil, fmt.Errorf("the checkpoint to clone: %w", err)
	}
	var parent checkpoint.ID
	switch head, err := s.ops.head(ctx); {
	case err != nil:
		return nil, err
	case head != nil:
		parent = head.ID()
	}
	now := s.clock.Now()
	cp, err := checkpoint.New(checkpoint.Params{
		ID: ident.New(now), Type: checkpoint.Clone, CreatedAt: now, Note: req.Note, ParentID: parent, Root: req.Root,
		Stats: checkpoint.Stats{Files: files, Bytes: bytes, Duration: now.Sub(began)},
	})
	if err != nil {
		return nil, err
	}
	if err := s.checkpoints.Add(ctx, cp); err != nil {
		return nil, fmt.Errorf("record checkpoint: %w", err)
	}
	return cp, nil
}

// List returns every checkpoint, newest first.
func (s *CheckpointService) List(ctx context.Context) ([]*checkpoint.Checkpoint, error) {
	return s.checkpoints.List(ctx)
}

// Resolve finds a checkpoint by full ID or unique prefix.
func (s *CheckpointService) Resolve(ctx context.Context, ref string) (*checkpoint.Checkpoint, error) {
	return s.ops.resolve(ctx, ref)
}

// Entries returns the checkpoint's tree as an ordered entry list.
func (s *CheckpointService) Entries(_ context.Context, cp *checkpoint.Checkpoint) ([]tree.Entry, error) {
	return s.ops.entries(cp)
}

// Delete removes a checkpoint's record. Its data stays in the store until gc. A checkpoint that a
// live decision or an unfinished correction needs is refused unless force is set: deleting it would
// make that decision impossible to correct.
func (s *CheckpointService) Delete(ctx context.Context, ref string, force bool) (_ *checkpoint.Checkpoint, err error) {
	ctx, done := s.ops.begin(ctx, "delete", "", ref)
	defer done(&err)
	ctx, release, err := s.guard.Enter(ctx, "checkpoint delete")
	if err != nil {
		return nil, err
	}
	defer release()
	cp, err := s.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !force {
		protected, err := s.ops.protected(ctx)
		if err != nil {
			return nil, err
		}
		if why, ok := protected[cp.ID()]; ok {
			return nil, fault.Conflict("checkpoint %s is the %s; pass --force to delete it anyway", cp.ID(), why)
		}
	}
	if err := s.checkpoints.Delete(ctx, cp.ID()); err != nil {
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
func (s *CheckpointService) Diff(ctx context.Context, fromRef, toRef string, p port.Progress) (DiffResult, error) {
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
	res.Changes, err = s.ops.liveChanges(ctx, from, p)
	return res, err
}

const kindRollback = "rollback"

// RollbackRequest describes a rollback.
type RollbackRequest struct {
	Ref string
	// At, when set instead of Ref, picks the newest checkpoint created at or before it. Any time is
	// a time to look for, the zero time included (nil, not a zero value, means "by Ref").
	At   *time.Time
	Mode RestoreMode // "" is RestoreBoth
	// Paths, when given, restores only these workspace-relative paths (and what lies under them),
	// leaving everything else and the decision states as they are.
	Paths []string
	// Validate, when set, runs after the restore (see ValidationFailedError); Live receives its
	// output.
	Validate string
	Live     io.Writer
	DryRun   bool
	Progress port.Progress
	Warn     func(msg string)
	// NeverUndo is for a clone's materialisation into the empty directory it made: a failure once
	// the rollback is journaled leaves it to be finished by `plan recover` (or the next mutating
	// command) instead of undoing it, as there is nothing to put back.
	NeverUndo bool
}

// RestoreMode says what a rollback restores.
type RestoreMode string

// The restore modes.
const (
	RestoreBoth  RestoreMode = "both"  // the workspace, and decisions executed since become reverted
	RestoreFiles RestoreMode = "files" // the workspace only; decision states stay
	RestoreState RestoreMode = "state" // decision states only; the workspace stays
)

// ParseRestoreMode validates a mode name.
func ParseRestoreMode(s string) (RestoreMode, error) {
	switch m := RestoreMode(s); m {
	case RestoreBoth, RestoreFiles, RestoreState:
		return m, nil
	case "":
		return RestoreBoth, nil
	}
	return "", fault.Invalid("--mode must be both, files or state, not %q", s)
}

// rollbackDetail is what a rollback's journal entry carries for its finisher.
type rollbackDetail struct {
	Mode  RestoreMode `json:"mode"`
	Paths []string    `json:"paths,omitempty"`
	// Log, for the rollback of an undo or a redo, is its operation-log step (see logstep.go).
	Log *logStep `json:"log,omitempty"`
}

// RollbackResult says what a rollback did (or, dry, would do).
type RollbackResult struct {
	// OperationID names the rollback in the history (what the attempts it reverted name).
	OperationID       string
	Mode              RestoreMode
	Target            *checkpoint.Checkpoint
	Backup            *checkpoint.Checkpoint // nil on a dry run
	Changes           []tree.Change          // live workspace → target
	Counts            port.ChangeCounts
	RevertedDecisions []string
	DryRun            bool
	// Kept lists paths the target has that were left alone because they hold ignored data.
	Kept []string
}

// Count tallies changes the way the contract reports them: files and symlinks only, a type change
// counting as a modification (or as an addition/deletion when a directory is involved).
func Count(changes []tree.Change) port.ChangeCounts {
	var c port.ChangeCounts
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
func (s *CheckpointService) Rollback(ctx context.Context, req RollbackRequest) (out RollbackResult, err error) {
	if req.Mode == "" {
		req.Mode = RestoreBoth
	}
	if _, err := ParseRestoreMode(string(req.Mode)); err != nil {
		return RollbackResult{}, err
	}
	if req.At == nil {
		if err := checkName(req.Ref); err != nil {
			return RollbackResult{}, err // bad input is refused before waiting for the lock
		}
	}
	if len(req.Paths) > 0 {
		if req.Mode == RestoreState {
			return RollbackResult{}, fault.Invalid("--mode state restores no files: it takes no paths")
		}
		// Decision states describe the whole workspace: a per-path restore leaves them alone.
		req.Mode = RestoreFiles
		for _, p := range req.Paths {
			if err := validRestorePath(p); err != nil {
				return RollbackResult{}, err
			}
		}
	}
	if req.DryRun {
		target, err := s.target(ctx, req)
		if err != nil {
			return RollbackResult{}, err
		}
		if req.Mode == RestoreState {
			return s.ops.restore(ctx, restoreSpec{target: target, req: req})
		}
		if len(req.Paths) > 0 {
			res, err := s.ops.previewPaths(ctx, target, req)
			res.Mode = req.Mode
			return res, err
		}
		res, err := s.ops.previewRollback(ctx, target, req.Progress)
		res.Mode = req.Mode
		if err == nil && req.Mode != RestoreFiles {
			// What the rollback would mark reverted, as it would name it.
			res.RevertedDecisions, err = s.ops.wouldRevert(ctx, target)
		}
		return res, err
	}
	ctx, done := s.ops.begin(ctx, "rollback", "", append([]string{req.Ref}, req.Paths...)...)
	defer func() {
		note(ctx, func(op *port.LoggedOperation) {
			// A command that rolls back as one of its steps (clone) keeps its own ID and has no undo.
			if out.Target == nil || op.Kind != "rollback" {
				return
			}
			op.ID = out.OperationID
			noteUse(op, out.Target.ID())
			// Only a rollback that went through (it has an operation ID) is undoable: whatever
			// fails after it (its validation) leaves it standing.
			if out.Backup != nil && out.OperationID != "" {
				op.UndoCheckpoint = out.Backup.ID()
			}
		})
		done(&err)
	}()
	ctx, release, err := s.guard.Enter(ctx, "rollback")
	if err != nil {
		return RollbackResult{}, err
	}
	defer release()
	// Resolved under the lock: a checkpoint deleted (or pruned) while this command waited is not
	// found, rather than rolled back to and then missing when the rollback is recorded.
	target, err := s.target(ctx, req)
	if err != nil {
		return RollbackResult{}, err
	}
	if req.Mode == RestoreState {
		return s.ops.restore(ctx, restoreSpec{target: target, req: req})
	}
	detail, err := json.Marshal(rollbackDetail{Mode: req.Mode, Paths: req.Paths})
	if err != nil {
		return RollbackResult{}, err
	}
	op := &port.Operation{Kind: kindRollback, Detail: detail}
	res, err := s.ops.restore(ctx, restoreSpec{target: target, req: req, op: op})
	res.Mode = req.Mode
	if err != nil || req.Validate == "" {
		return res, err
	}
	return res, s.ops.validate(ctx, req.Validate, res.Backup.ID(), req.Live)
}

// validRestorePath checks a per-path restore's path: workspace-relative, clean, and not plan's
// own state or the workspace's git directory (neither is ever in a checkpoint).
func validRestorePath(p string) error {
	if err := tree.ValidatePath(p); err != nil {
		return fault.Invalid("%s: paths to restore are relative to the workspace and stay inside it", err.Error())
	}
	if first, _, _ := strings.Cut(p, "/"); first == ".plan" || first == ".git" {
		return fault.Invalid("%s is never in a checkpoint: plan does not restore %s/", p, first)
	}
	return nil
}

// target is the checkpoint a rollback request names: by ID or prefix, or the newest created at or
// before req.At.
func (s *CheckpointService) target(ctx context.Context, req RollbackRequest) (*checkpoint.Checkpoint, error) {
	if req.At == nil {
		return s.Resolve(ctx, req.Ref)
	}
	cps, err := s.checkpoints.List(ctx) // newest first
	if err != nil {
		return nil, err
	}
	for _, cp := range cps {
		if !cp.CreatedAt().After(*req.At) {
			return cp, nil
		}
	}
	// The time as it was asked for (its zone and offset): a local time stays local.
	return nil, fault.NotFound("no checkpoint was created at or before %s", req.At.Format("2006-01-02 15:04:05 -0700"))
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
