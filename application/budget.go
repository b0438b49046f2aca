package application

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
)

// A disk budget bounds the store: past it, the oldest checkpoints nothing needs are pruned and gc
// runs, after the command that took the store past it; from budgetWarnPercent on, every command
// warns. The newest checkpoint is never pruned to save disk, nor a pinned one, the pre_decision
// checkpoint of a live decision, a checkpoint an unfinished correction needs, or the safety
// checkpoint of the newest operation `plan undo` would undo: when only those are left, the store
// stays over its budget and the warning says why. On a shared store the budget (max_bytes) only
// warns, since its gc frees space after a grace period and other workspaces count too; a
// per-workspace quota (workspace_max_bytes) bounds what this workspace's checkpoints reference
// instead, and prunes as above.

// budgetWarnPercent is the share of the budget from which every command warns.
const budgetWarnPercent = 80

// sharedHeld is why a budget does not prune on a shared store.
const sharedHeld = "a shared store is not pruned by store.max_bytes (its gc frees space only after the grace period, and other workspaces' checkpoints count too): set store.workspace_max_bytes, or prune with `plan checkpoint prune`, then `plan gc`"

// BudgetStatus is the store's size against its budget.
type BudgetStatus struct {
	// MaxBytes is the budget (0: none configured); UsedBytes what the store's packs take.
	MaxBytes, UsedBytes int64
	// Pruned are the checkpoints EnforceBudget deleted, oldest first; GC what its gc did.
	Pruned []checkpoint.ID
	GC     *port.GCReport
	// Held says, when the store is still over its budget and nothing can be pruned, what keeps it
	// there; Prunable counts the checkpoints a budget may prune (once something is stored).
	Held     string
	Prunable int
	// Quota says the budget is a shared store's per-workspace quota: UsedBytes is then what this
	// workspace's checkpoints reference.
	Quota bool
}

// what names what the budget measures, and its key.
func (b BudgetStatus) what() (subject, key string) {
	if b.Quota {
		return "this workspace's checkpoints take", "store.workspace_max_bytes"
	}
	return "the store takes", "store.max_bytes"
}

// Percent is UsedBytes as a share of MaxBytes (0 without a budget).
func (b BudgetStatus) Percent() float64 {
	if b.MaxBytes <= 0 {
		return 0
	}
	return 100 * float64(b.UsedBytes) / float64(b.MaxBytes)
}

// Over says whether the store is past its budget.
func (b BudgetStatus) Over() bool { return b.MaxBytes > 0 && b.UsedBytes > b.MaxBytes }

// Warning is what a command says on stderr about the budget: "" below budgetWarnPercent.
func (b BudgetStatus) Warning() string {
	switch {
	case b.MaxBytes <= 0 || b.Percent() < budgetWarnPercent:
		return ""
	case b.Over():
		subject, key := b.what()
		msg := fmt.Sprintf("%s %s, over its budget of %s (%s in .plan/config.yaml)",
			subject, sizeText(b.UsedBytes), sizeText(b.MaxBytes), key)
		switch {
		case b.Held != "":
			msg += ": " + b.Held
		case b.Prunable > 0:
			msg += fmt.Sprintf(": the next command that stores something prunes the oldest of the %d checkpoint(s) nothing needs (or run `plan checkpoint prune` and `plan gc`)", b.Prunable)
		}
		return msg
	}
	subject, key := b.what()
	return fmt.Sprintf("%s %s, %.0f%% of its budget of %s (%s in .plan/config.yaml): past it, the oldest checkpoints nothing needs are pruned",
		subject, sizeText(b.UsedBytes), b.Percent(), sizeText(b.MaxBytes), key)
}

// Budget reads the budget and what it measures; it changes nothing. On a shared store with a
// per-workspace quota, that is what this workspace's checkpoints reference (a walk of their
// trees); otherwise the store's packs.
func (s *MaintenanceService) Budget(ctx context.Context) (BudgetStatus, error) {
	var st BudgetStatus
	bs, ok := s.settings.(port.BudgetSettings)
	if !ok {
		return st, nil
	}
	// Without a budget nothing more is read: the store's usage loads its whole index, which every
	// command would otherwise pay before and after it ran.
	quota, qerr := bs.WorkspaceQuota()
	limit, lerr := bs.StoreBudget()
	if quota <= 0 && limit <= 0 && qerr == nil && lerr == nil {
		return st, nil
	}
	if wu, ok := s.store.(port.WorkspaceUsage); ok && s.store.Usage().Location != "" {
		if qerr != nil {
			return st, qerr
		}
		if quota > 0 {
			used, err := s.workspaceBytes(ctx, wu)
			st.MaxBytes, st.UsedBytes, st.Quota = quota, used, true
			return st, err
		}
	}
	if lerr != nil || limit <= 0 {
		return st, lerr
	}
	st.MaxBytes, st.UsedBytes = limit, s.store.Usage().StoredBytes
	return st, nil
}

// workspaceBytes is what this workspace's checkpoints and live results reference.
func (s *MaintenanceService) workspaceBytes(ctx context.Context, wu port.WorkspaceUsage) (int64, error) {
	roots, err := s.roots(ctx)
	if err != nil {
		return 0, err
	}
	return wu.WorkspaceBytes(roots)
}

// BudgetReport is Budget, and, when the store is over its budget, what can be pruned or else what
// keeps it there.
func (s *MaintenanceService) BudgetReport(ctx context.Context) (BudgetStatus, error) {
	st, err := s.Budget(ctx)
	if err != nil || !st.Over() {
		return st, err
	}
	if !st.Quota && s.store.Usage().Location != "" {
		st.Held = sharedHeld
		return st, nil
	}
	all, err := s.checkpoints.List(ctx)
	if err != nil {
		return st, err
	}
	held, err := s.needed(ctx, all)
	if err != nil {
		return st, err
	}
	for _, cp := range all {
		if _, ok := held[cp.ID()]; !ok {
			st.Prunable++
		}
	}
	if st.Prunable == 0 {
		st.Held = heldText(all, held)
	}
	return st, nil
}

// EnforceBudget brings a store past its budget back under it, if it can: it deletes the oldest
// checkpoints nothing needs, a few at a time (1, 2, 4, … of them), running gc after each batch,
// until the store fits. It never deletes the newest checkpoint. What it could not free is said in
// Held. Below its budget, or without one, it changes nothing.
func (s *MaintenanceService) EnforceBudget(ctx context.Context) (BudgetStatus, error) {
	st, err := s.Budget(ctx)
	if err != nil || !st.Over() {
		return st, err
	}
	if !st.Quota && s.store.Usage().Location != "" {
		// A shared store's gc frees nothing before its grace period, and other workspaces' content
		// counts too: measuring after each batch would prune every checkpoint it may.
		st.Held = sharedHeld
		return st, nil
	}
	ctx, release, err := s.guard.Enter(ctx, "budget")
	if err != nil {
		return st, err
	}
	defer release()
	all, err := s.checkpoints.List(ctx) // newest first
	if err != nil {
		return st, err
	}
	held, err := s.needed(ctx, all)
	if err != nil {
		return st, err
	}
	var candidates []*checkpoint.Checkpoint
	for i := len(all) - 1; i >= 0; i-- { // oldest first
		if _, ok := held[all[i].ID()]; !ok {
			candidates = append(candidates, all[i])
		}
	}
	for batch := 1; st.Over() && len(candidates) > 0; batch *= 2 {
		n := min(batch, len(candidates))
		for _, cp := range candidates[:n] {
			if err := s.checkpoints.Delete(ctx, cp.ID()); err != nil {
				return st, fmt.Errorf("budget: prune %s: %w", cp.ID(), err)
			}
			st.Pruned = append(st.Pruned, cp.ID())
		}
		candidates = candidates[n:]
		if wu, ok := s.store.(port.WorkspaceUsage); st.Quota && ok {
			// What the workspace references drops at once; the shared store's gc frees it after
			// its grace period, so it runs once, below.
			if st.UsedBytes, err = s.workspaceBytes(ctx, wu); err != nil {
				return st, err
			}
			continue
		}
		if err := s.collect(ctx, &st); err != nil {
			return st, err
		}
		st.UsedBytes = s.store.Usage().StoredBytes
	}
	if st.Quota && len(st.Pruned) > 0 {
		if err := s.collect(ctx, &st); err != nil {
			return st, err
		}
	}
	if st.Over() {
		st.Held = heldText(all, held)
	}
	return st, nil
}

// collect runs gc after the budget pruned, adding what it did to st.GC.
func (s *MaintenanceService) collect(ctx context.Context, st *BudgetStatus) error {
	roots, err := s.roots(ctx)
	if err != nil {
		return err
	}
	r, err := s.store.Collect(roots, nil)
	if err != nil {
		return fmt.Errorf("budget: gc after pruning %d checkpoint(s): %w", len(st.Pruned), err)
	}
	if st.GC == nil {
		st.GC = &port.GCReport{}
	}
	st.GC.PacksDeleted += r.PacksDeleted
	st.GC.PacksRewritten += r.PacksRewritten
	st.GC.BytesReclaimed += r.BytesReclaimed
	st.GC.ObjectsReencoded += r.ObjectsReencoded
	st.GC.LiveObjects = r.LiveObjects
	return nil
}

// needed maps the checkpoints a budget never prunes to why: the newest, the pinned, those a live
// decision or an unfinished correction needs, and the safety checkpoint of the newest operation
// `plan undo` would undo.
func (s *MaintenanceService) needed(ctx context.Context, all []*checkpoint.Checkpoint) (map[checkpoint.ID]string, error) {
	held, err := s.ops.protected(ctx)
	if err != nil {
		return nil, err
	}
	for _, cp := range all {
		if _, ok := held[cp.ID()]; !ok && cp.Pinned() {
			held[cp.ID()] = "pinned"
		}
	}
	if len(all) > 0 {
		if _, ok := held[all[0].ID()]; !ok {
			held[all[0].ID()] = "the newest checkpoint"
		}
	}
	if s.log != nil {
		ops, err := s.log.List(ctx, 0, "")
		if err != nil {
			return nil, err
		}
		for _, op := range ops {
			if !undoable(op) {
				continue
			}
			if _, ok := held[op.UndoCheckpoint]; !ok {
				held[op.UndoCheckpoint] = fmt.Sprintf("the safety checkpoint `plan undo` rolls back to (%s %s)", op.Kind, op.ID)
			}
			break
		}
	}
	return held, nil
}

// heldText says which checkpoints keep a store over its budget, by reason.
func heldText(all []*checkpoint.Checkpoint, held map[checkpoint.ID]string) string {
	exists := map[checkpoint.ID]bool{}
	for _, cp := range all {
		exists[cp.ID()] = true
	}
	byWhy := map[string]int{}
	for id, why := range held {
		if exists[id] {
			byWhy[budgetReason(why)]++
		}
	}
	var parts []string
	for why, n := range byWhy {
		parts = append(parts, fmt.Sprintf("%d %s", n, why))
	}
	slices.Sort(parts)
	return "nothing more can be freed without deleting a checkpoint that is still needed (" + strings.Join(parts, ", ") +
		"); the newest state is never given up to save disk: raise the budget, unpin, or finish the plan"
}

// budgetReason is the short form of a protection reason.
func budgetReason(why string) string {
	switch {
	case strings.HasPrefix(why, "pre_decision"):
		return "pre_decision checkpoint(s) of live decisions"
	case strings.Contains(why, "correction"):
		return "checkpoint(s) of an unfinished correction"
	case strings.HasPrefix(why, "the safety checkpoint"):
		return "safety checkpoint of the newest undo"
	case why == "pinned":
		return "pinned"
	}
	return why
}

// sizeText is a byte count for messages: 1.5 GiB, 300.0 MiB, 12 KiB.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
