package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// storeBytes is the store's size as a command starts (0 without a budget: nothing to compare).
func (h *handler) storeBytes(ctx context.Context, app *bootstrap.App) int64 {
	st, err := app.Services.Maintenance.Budget(ctx)
	if err != nil {
		return 0
	}
	return st.UsedBytes
}

// budget runs after every command that opened the workspace. A command that grew the store past
// its budget (store.max_bytes) is followed by pruning the oldest checkpoints nothing needs and a
// gc; from 80% of the budget on, every command warns on stderr, saying, when the store stays over,
// why nothing more could be freed. It never fails the command: what it could not do is a warning.
func (h *handler) budget(ctx context.Context, app *bootstrap.App, before int64) {
	ms := app.Services.Maintenance
	st, err := ms.BudgetReport(ctx)
	if err != nil {
		h.warn(err.Error())
		return
	}
	if st.Over() && st.UsedBytes > before && ctx.Err() == nil {
		enforced, err := ms.EnforceBudget(ctx)
		if err != nil {
			h.warn(fmt.Sprintf("the store is over its budget and pruning failed: %v", err))
			return
		}
		st = enforced
		if len(st.Pruned) > 0 {
			what := "the store went over its budget"
			if st.Quota {
				what = "this workspace went over its quota of the shared store"
			}
			h.warn(fmt.Sprintf("%s: pruned the %d oldest checkpoint(s) nothing needed and ran gc (%s reclaimed); it now takes %s of %s",
				what, len(st.Pruned), humanBytes(st.GC.BytesReclaimed), humanBytes(st.UsedBytes), humanBytes(st.MaxBytes)))
		}
	}
	if w := st.Warning(); w != "" {
		h.warn(w)
	}
}

// dataBudget runs after budget: from 80% of the data directory's budget (data_max_bytes in the
// per-user configuration) on, every command warns, naming what the workspaces whose directory is
// gone keep. It never deletes anything, and never fails the command.
func (h *handler) dataBudget() {
	u, err := bootstrap.DataBudget(h.getenv, time.Now())
	if err != nil {
		h.warn(err.Error())
		return
	}
	if w := u.Warning(humanBytes); w != "" {
		h.warn(w)
	}
}

// budgetView is the budget in `plan stats`.
type budgetView struct {
	MaxBytes  int64   `json:"max_bytes"`
	UsedBytes int64   `json:"used_bytes"`
	Percent   float64 `json:"percent"`
	Over      bool    `json:"over"`
	// Prunable counts the checkpoints a budget may prune; Held says, when the store is over its
	// budget and none is, what keeps it there.
	Prunable int    `json:"prunable"`
	Held     string `json:"held,omitempty"`
}

// budgetOf is st as stats shows it (nil without a budget).
func budgetOf(st application.BudgetStatus) *budgetView {
	if st.MaxBytes <= 0 {
		return nil
	}
	return &budgetView{MaxBytes: st.MaxBytes, UsedBytes: st.UsedBytes, Percent: st.Percent(), Over: st.Over(),
		Prunable: st.Prunable, Held: st.Held}
}

// consolidate runs after every command that opened the workspace, after the budget: once enough
// small packs have accumulated (a hook's checkpoint is one), it merges them, so later commands read
// few index files. It never fails the command: a consolidation that could not be done (damage, a
// store that cannot be listed) changed nothing, and is a warning; the next command tries again.
func (h *handler) consolidate(ctx context.Context, app *bootstrap.App) {
	if ctx.Err() != nil {
		return
	}
	if _, err := app.Services.Maintenance.Consolidate(ctx); err != nil {
		h.warn(fmt.Sprintf("could not merge the store's small packs (nothing was lost; the next command tries again; `plan verify` checks the store): %v", err))
	}
}
