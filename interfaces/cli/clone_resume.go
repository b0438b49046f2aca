package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// cloneMarkerName is the file a clone writes in DIR's state directory before it adopts anything,
// and removes once DIR is materialised: `plan recover` finds it and finishes the clone, whatever
// step it was cut at (before the adoption, between it and the journaled rollback, or in that
// rollback).
const cloneMarkerName = "clone.json"

// cloneMarker is what an interrupted clone needs to be finished.
type cloneMarker struct {
	SourceWorkspace  string    `json:"source_workspace"`
	SourceCheckpoint string    `json:"source_checkpoint"`
	Root             tree.Hash `json:"root"`
}

func (m cloneMarker) note() string {
	return fmt.Sprintf("cloned from workspace %s, checkpoint %s", m.SourceWorkspace, m.SourceCheckpoint)
}

// writeCloneMarker records m durably in the state directory state.
func writeCloneMarker(state string, m cloneMarker) error {
	b, err := json.Marshal(m)
	if err == nil {
		err = bootstrap.ReplaceFile(filepath.Join(state, cloneMarkerName), b, true)
	}
	if err != nil {
		return fmt.Errorf("record the clone in %s: %w", state, err)
	}
	return nil
}

// readCloneMarker returns the marker of an interrupted clone in state; ok is false when there is
// none.
func readCloneMarker(state string) (m cloneMarker, ok bool, err error) {
	p := filepath.Join(state, cloneMarkerName)
	b, err := os.ReadFile(p) // #nosec G304 -- the workspace's own state
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return m, false, nil
	case err != nil:
		return m, false, fmt.Errorf("read the interrupted clone's record: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Root.IsZero() {
		return m, false, fault.Integrity("%s, the record of an interrupted clone, is damaged: run the clone again into a new directory", p)
	}
	return m, true, nil
}

// clearCloneMarker removes the marker: the clone is done.
func clearCloneMarker(state string) error {
	p := filepath.Join(state, cloneMarkerName)
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the clone is done, but its record %s stays: %w", p, err)
	}
	return nil
}

// finishClone finishes the interrupted clone m records: it adopts the checkpoint again when the
// clone was cut short before that, rolls the workspace to it unless a rollback to it is recorded
// already (journal recovery may just have finished it), and removes the marker. It returns the
// rollback's operation ID ("" when none was needed).
func (h *handler) finishClone(ctx context.Context, app *bootstrap.App, m cloneMarker) (string, error) {
	svc := app.Services.Checkpoints
	cps, err := svc.List(ctx)
	if err != nil {
		return "", err
	}
	var cp *checkpoint.Checkpoint
	for _, c := range cps {
		if c.Type() == checkpoint.Clone {
			cp = c
		}
	}
	if cp == nil {
		if cp, err = svc.Adopt(ctx, application.AdoptRequest{Root: m.Root, Note: m.note()}); err != nil {
			return "", fmt.Errorf("finish the clone of checkpoint %s of workspace %s: %w", m.SourceCheckpoint, m.SourceWorkspace, err)
		}
	}
	id := ""
	if cp.RollbackCount() == 0 {
		res, err := svc.Rollback(ctx, application.RollbackRequest{Ref: string(cp.ID()), Progress: h.progress(), Warn: h.warn, NeverUndo: true})
		if err != nil {
			return "", fmt.Errorf("finish the clone of checkpoint %s of workspace %s: %w", m.SourceCheckpoint, m.SourceWorkspace, err)
		}
		id = res.OperationID
	}
	return id, clearCloneMarker(app.Services.Layout.State())
}
