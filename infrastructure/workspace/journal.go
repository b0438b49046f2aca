package workspace

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/fault"
)

// Journal keeps the pending operation in .plan/journal.json, replaced atomically.
type Journal struct{ path string }

// NewJournal returns the journal of the workspace in l.
func NewJournal(l Layout) *Journal { return &Journal{path: l.JournalFile()} }

var _ application.Journal = (*Journal)(nil)

// Write records op durably.
func (j *Journal) Write(op application.Operation) error {
	b, err := json.MarshalIndent(op, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(j.path, append(b, '\n'))
}

// Pending returns the recorded operation or nil.
func (j *Journal) Pending() (*application.Operation, error) {
	b, err := os.ReadFile(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var op application.Operation
	if err := json.Unmarshal(b, &op); err != nil || op.ID == "" {
		return nil, fault.Integrity("the operation journal %s is damaged; run `plan doctor`", j.path)
	}
	return &op, nil
}

// Clear removes the record durably.
func (j *Journal) Clear() error {
	if err := os.Remove(j.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return syncDir(dirOf(j.path))
}
