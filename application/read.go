package application

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
	"github.com/planhq/plan/domain/tree"
)

// Reading a checkpoint without restoring it: the files of `plan ls`, the content of `plan cat`, and
// a copy of a checkpoint (or some of its paths) in another directory, `plan restore --target`.
// None of these touches the workspace, its decisions or its history; they read the store only, as
// diff does, so they take no lock.

// ReadService reads checkpoints without restoring them.
type ReadService struct {
	ops *Operations
	// The parts of the shared core this service uses, taken from it when it is built.
	checkpoints checkpoint.Repository
	store       port.TreeStore
	exp         port.Exporter
}

// NewReadService returns the service.
func NewReadService(ops *Operations, exp port.Exporter) *ReadService {
	return &ReadService{ops: ops, exp: exp, checkpoints: ops.checkpoints, store: ops.store}
}

// Entries returns checkpoint ref's entry at path and everything under it, in tree order; path ""
// is the whole checkpoint. A path the checkpoint does not hold is a not-found error.
func (s *ReadService) Entries(ctx context.Context, ref, path string) (*checkpoint.Checkpoint, []tree.Entry, error) {
	cp, err := s.ops.resolve(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	if sub, ok := s.store.(subtreeReader); ok && path != "" {
		if err := tree.ValidatePath(path); err != nil {
			return nil, nil, err
		}
		sel, found, err := sub.Subtree(cp.Root(), path)
		return pathEntries(cp, path, sel, found, err)
	}
	all, err := s.ops.entries(cp)
	if err != nil {
		return nil, nil, err
	}
	if path == "" {
		return cp, all, nil
	}
	if err := tree.ValidatePath(path); err != nil {
		return nil, nil, err
	}
	sel := under(all, path)
	if len(sel) == 0 {
		return nil, nil, fault.NotFound("checkpoint %s has no %s", cp.ID(), path)
	}
	return cp, sel, nil
}

// subtreeReader is a TreeStore that reads one path of a tree without listing all of it (the object
// store does): `plan cat` then costs the depth of the path, not the size of the checkpoint.
type subtreeReader interface {
	Subtree(root tree.Hash, path string) (entries []tree.Entry, found bool, err error)
}

// Children is Entries without what lies deeper than path's direct content: the entry at path and,
// when it is a directory, the entries it holds itself; path "" is the checkpoint's top level, its
// entries alone. With a store that reads one directory's tree (childrenReader, as the object store
// does), `plan ls PATH` costs that directory, not everything under it.
func (s *ReadService) Children(ctx context.Context, ref, path string) (*checkpoint.Checkpoint, []tree.Entry, error) {
	cr, ok := s.store.(childrenReader)
	if !ok {
		cp, all, err := s.Entries(ctx, ref, path)
		if err != nil {
			return nil, nil, err
		}
		return cp, direct(all, path), nil
	}
	cp, err := s.ops.resolve(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	if path != "" {
		if err := tree.ValidatePath(path); err != nil {
			return nil, nil, err
		}
	}
	sel, found, err := cr.Children(cp.Root(), path)
	return pathEntries(cp, path, sel, found, err)
}

// pathEntries is what a store's lookup of path in checkpoint cp gives a caller: its entries, or the
// error (a path the checkpoint does not hold is not found).
func pathEntries(cp *checkpoint.Checkpoint, path string, sel []tree.Entry, found bool, err error) (*checkpoint.Checkpoint, []tree.Entry, error) {
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("read checkpoint %s: %w", cp.ID(), err)
	case !found:
		return nil, nil, fault.NotFound("checkpoint %s has no %s", cp.ID(), path)
	}
	return cp, sel, nil
}

// childrenReader is a TreeStore that lists one directory of a tree alone.
type childrenReader interface {
	Children(root tree.Hash, path string) (entries []tree.Entry, found bool, err error)
}

// direct keeps of entries (path and all under it, as Entries lists them) path itself and what it
// holds directly.
func direct(entries []tree.Entry, path string) []tree.Entry {
	prefix := ""
	if path != "" {
		prefix = path + "/"
	}
	var out []tree.Entry
	for _, e := range entries {
		if e.Path == path || !strings.Contains(strings.TrimPrefix(e.Path, prefix), "/") {
			out = append(out, e)
		}
	}
	return out
}

// under returns the entry at path and those below it.
func under(all []tree.Entry, path string) []tree.Entry {
	var sel []tree.Entry
	for _, e := range all {
		if e.Path == path || strings.HasPrefix(e.Path, path+"/") {
			sel = append(sel, e)
		}
	}
	return sel
}

// Open returns the entry at path in checkpoint ref and, for a regular file, its content (verified
// against its hash as it is read). A symlink has no content to open: its target is the entry's
// Target, and the reader is nil. A directory is invalid input.
func (s *ReadService) Open(ctx context.Context, ref, path string) (*checkpoint.Checkpoint, tree.Entry, io.ReadCloser, error) {
	if path == "" {
		return nil, tree.Entry{}, nil, fault.Invalid("name a file of the checkpoint")
	}
	cp, sel, err := s.Entries(ctx, ref, path)
	if err != nil {
		return nil, tree.Entry{}, nil, err
	}
	e := sel[0]
	switch e.Kind {
	case tree.KindDir:
		return nil, tree.Entry{}, nil, fault.Invalid("%s is a directory in checkpoint %s (plan ls lists it)", path, cp.ID())
	case tree.KindSymlink:
		return cp, e, nil, nil
	}
	rc, err := s.store.OpenBlob(e.Hash)
	if err != nil {
		return nil, tree.Entry{}, nil, fmt.Errorf("read %s of checkpoint %s: %w", path, cp.ID(), err)
	}
	return cp, e, rc, nil
}

// RestoreToRequest asks for a copy of a checkpoint in another directory.
type RestoreToRequest struct {
	Ref      string
	Target   string   // absolute; must not exist or be an empty directory
	Paths    []string // checkpoint-relative paths to copy (with what is under them); none means all
	Progress port.Progress
}

// RestoreToResult is what a copy wrote.
type RestoreToResult struct {
	Checkpoint *checkpoint.Checkpoint
	Target     string
	Paths      []string
	Stats      port.ExportStats
}

// RestoreTo copies checkpoint ref, or the given paths of it (each with the directories above it, so
// the copy keeps the checkpoint's layout), into req.Target. The workspace is not touched.
func (s *ReadService) RestoreTo(ctx context.Context, req RestoreToRequest) (RestoreToResult, error) {
	cp, all, err := s.Entries(ctx, req.Ref, "")
	if err != nil {
		return RestoreToResult{}, err
	}
	entries := all
	if len(req.Paths) > 0 {
		if entries, err = selectPaths(cp, all, req.Paths); err != nil {
			return RestoreToResult{}, err
		}
	}
	stats, err := s.exp.Export(ctx, entries, req.Target, req.Progress)
	if err != nil {
		return RestoreToResult{}, err
	}
	return RestoreToResult{Checkpoint: cp, Target: req.Target, Paths: req.Paths, Stats: stats}, nil
}

// selectPaths returns, in tree order, the entries at or under each path and the directories above
// them.
func selectPaths(cp *checkpoint.Checkpoint, all []tree.Entry, paths []string) ([]tree.Entry, error) {
	keep := map[string]bool{}
	for _, p := range paths {
		if err := tree.ValidatePath(p); err != nil {
			return nil, err
		}
		sel := under(all, p)
		if len(sel) == 0 {
			return nil, fault.NotFound("checkpoint %s has no %s", cp.ID(), p)
		}
		for _, e := range sel {
			keep[e.Path] = true
		}
		for dir := parentOf(p); dir != ""; dir = parentOf(dir) {
			keep[dir] = true
		}
	}
	var out []tree.Entry
	for _, e := range all {
		if keep[e.Path] {
			out = append(out, e)
		}
	}
	return out, nil
}

// DecisionChanges is what one attempt of a decision changed: the tree before it (its pre_decision
// checkpoint) against the tree it left.
type DecisionChanges struct {
	Plan     *plan.Plan
	Decision string
	Attempt  plan.Attempt
	Before   *checkpoint.Checkpoint
	Changes  []tree.Change
}

// Decision compares attempt number attempt (0: the latest) of decision id of the plan called
// planName ("" is the current plan) with the state before it. An attempt run without checkpoints,
// or whose result was not recorded (it was killed, or recorded before results were kept), has
// nothing to compare with: a not-found error that says so.
func (s *ReadService) Decision(ctx context.Context, planName, id string, attempt int) (DecisionChanges, error) {
	p, err := s.ops.namedPlan(ctx, planName)
	if err != nil {
		return DecisionChanges{}, err
	}
	a, err := pickAttempt(p, id, attempt)
	if err != nil {
		return DecisionChanges{}, err
	}
	if a.CheckpointID == "" {
		return DecisionChanges{}, fault.NotFound("attempt %d of decision %q ran without a checkpoint before it: there is nothing to compare it with", a.Number, id)
	}
	if a.ResultTree.IsZero() {
		return DecisionChanges{}, fault.NotFound("the state attempt %d of decision %q left was not recorded (it is running, or it was interrupted)", a.Number, id)
	}
	before, err := s.checkpoints.Get(ctx, a.CheckpointID)
	if err != nil {
		return DecisionChanges{}, fmt.Errorf("the checkpoint before decision %q: %w", id, err)
	}
	changes, err := s.store.DiffTrees(before.Root(), a.ResultTree)
	if err != nil {
		return DecisionChanges{}, err
	}
	return DecisionChanges{Plan: p, Decision: id, Attempt: a, Before: before, Changes: changes}, nil
}

// Pending is what changed in the live workspace since its head (the checkpoint its files were last
// made equal to or recorded as): what a checkpoint taken now would record, and what a rollback
// would take away. Latest is the head, nil when there is none yet, and every live path is then
// added.
type Pending struct {
	Latest  *checkpoint.Checkpoint
	Changes []tree.Change
	// Unreadable are the live paths a checkpoint could not read (permission denied): left out of
	// it, left alone by a rollback, and not among Changes.
	Unreadable []string
}

// Pending compares the live workspace with its head (a walk of the workspace, as a
// checkpoint takes; nothing is stored).
func (s *ReadService) Pending(ctx context.Context, p port.Progress) (Pending, error) {
	latest, err := s.ops.head(ctx)
	if err != nil {
		return Pending{}, err
	}
	changes, unreadable, err := s.ops.liveChangesReadable(ctx, latest, p)
	if err != nil {
		return Pending{}, err
	}
	return Pending{Latest: latest, Changes: changes, Unreadable: unreadable}, nil
}

// liveChanges compares checkpoint cp (nil: none, so everything live is added) with the live
// workspace, walking it as a checkpoint does and storing nothing.
func (o *Operations) liveChanges(ctx context.Context, cp *checkpoint.Checkpoint, p port.Progress) ([]tree.Change, error) {
	changes, _, err := o.liveChangesReadable(ctx, cp, p)
	return changes, err
}

// liveChangesReadable is liveChanges that also returns the live paths the walk could not read
// (when the snapshotter says: ReadableScanner), and leaves the changes at or under them out: a
// checkpoint taken now would not record them, nor would a rollback touch them.
func (o *Operations) liveChangesReadable(ctx context.Context, cp *checkpoint.Checkpoint, p port.Progress) ([]tree.Change, []string, error) {
	var old []tree.Entry
	if cp != nil {
		var err error
		if old, err = o.entries(cp); err != nil {
			return nil, nil, err
		}
	}
	var live []tree.Entry
	var unreadable []string
	var err error
	if rs, ok := o.snap.(port.ReadableScanner); ok {
		live, unreadable, err = rs.ScanReadable(ctx, p)
	} else {
		live, err = o.snap.Scan(ctx, p)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("scan the workspace: %w", err)
	}
	changes := tree.Diff(old, live)
	if len(unreadable) == 0 {
		return changes, nil, nil
	}
	kept := changes[:0]
	for _, ch := range changes {
		if !underAny(ch.Path, unreadable) {
			kept = append(kept, ch)
		}
	}
	return kept, unreadable, nil
}

// underAny reports whether p is one of paths or inside one.
func underAny(p string, paths []string) bool {
	for _, q := range paths {
		if p == q || strings.HasPrefix(p, q+"/") {
			return true
		}
	}
	return false
}

func parentOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}
