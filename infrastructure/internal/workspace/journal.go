package workspace

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/fsx"
	"github.com/planhq/plan/infrastructure/internal/timing"
)

// Journal keeps the pending operation in .plan/journal.json, replaced atomically.
//
// The file's format is this adapter's: journalRecord below, one JSON object. Hashes are lower-case
// hex; a record that does not parse, or whose hashes or direction are malformed, is damage
// (fault.ErrIntegrity), found here once rather than by every use of the operation.
type Journal struct{ path string }

// journalRecord is the stored form of an application.Operation. Never rename a field: a journal
// written by one version must be recovered by the next.
type journalRecord struct {
	ID               string            `json:"id"`
	Kind             string            `json:"kind"`
	Direction        port.Direction    `json:"direction"`
	Source           tree.Hash         `json:"source_tree"`
	Target           tree.Hash         `json:"target_tree"`
	TargetCheckpoint string            `json:"target_checkpoint"`
	BackupCheckpoint string            `json:"backup_checkpoint"`
	StartedAt        time.Time         `json:"started_at"`
	Counts           port.ChangeCounts `json:"counts"`
	Detail           []byte            `json:"detail,omitempty"`
}

// NewJournal returns the journal of the workspace in l.
func NewJournal(l Layout) *Journal { return &Journal{path: l.JournalFile()} }

var _ port.Journal = (*Journal)(nil)

// Write records op durably.
func (j *Journal) Write(op port.Operation) error {
	defer timing.Span("journal")()
	b, err := json.MarshalIndent(journalRecord{
		ID: op.ID, Kind: op.Kind, Direction: op.Direction, Source: op.Source, Target: op.Target,
		TargetCheckpoint: string(op.TargetCheckpoint), BackupCheckpoint: string(op.BackupCheckpoint),
		StartedAt: op.StartedAt, Counts: op.Counts, Detail: op.Detail,
	}, "", "  ")
	if err != nil {
		return err
	}
	return fsx.Replace(j.path, append(b, '\n'), true)
}

// Pending returns the recorded operation or nil.
func (j *Journal) Pending() (*port.Operation, error) {
	b, err := os.ReadFile(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r journalRecord
	err = json.Unmarshal(b, &r)
	switch {
	case err != nil:
		return nil, fault.Wrap(fault.ErrIntegrity, err, "the operation journal %s is damaged; run `plan doctor`", j.path)
	case r.ID == "" || r.Source.IsZero() || r.Target.IsZero():
		return nil, fault.Integrity("the operation journal %s is damaged (no operation or trees); run `plan doctor`", j.path)
	case r.Direction != port.Forward && r.Direction != port.Backward:
		return nil, fault.Integrity("the operation journal %s names an unknown direction %q; run `plan doctor`", j.path, r.Direction)
	}
	return &port.Operation{
		ID: r.ID, Kind: r.Kind, Direction: r.Direction, Source: r.Source, Target: r.Target,
		TargetCheckpoint: checkpoint.ID(r.TargetCheckpoint), BackupCheckpoint: checkpoint.ID(r.BackupCheckpoint),
		StartedAt: r.StartedAt, Counts: r.Counts, Detail: r.Detail,
	}, nil
}

// Clear removes the record durably.
func (j *Journal) Clear() error {
	defer timing.Span("journal")()
	if err := os.Remove(j.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return fsx.SyncDir(dirOf(j.path))
}
