package application

import (
	"context"
	"errors"
	"slices"

	"github.com/planhq/plan/domain/ident"
)

// OperationReplacer is an OperationLog that can also write an entry whole under its ID, inserting
// it or replacing the one there. A log that has it lets a command fold its entry into its own last
// transaction (see OpenOperation); a log without it gets each entry in a write of its own.
type OperationReplacer interface {
	Replace(ctx context.Context, op LoggedOperation) error
}

// OpenOperation is the operation log entry of a command that is still running. A use case whose
// last change is one transaction (checkpoint create) writes the entry in that same transaction, as
// it will stand if the command ends well: the checkpoint and its log entry are then one durable
// write, committed together or not at all, so a kill -9 at any point leaves both or neither.
// HistoryService.Finish then writes nothing more when the command did end as folded, and replaces
// the entry when it did not (it failed afterwards, printing its result).
type OpenOperation struct {
	entry LoggedOperation
	// folded is the entry as the fold wrote it, nil until then, and log the log it was written to.
	folded *LoggedOperation
	log    OperationReplacer
}

// NewOpenOperation returns the open entry of a command about to run: Kind, Args, Plan, StartedAt,
// and the checkpoints it uses (Checkpoints, UndoCheckpoint) as far as they are known.
func NewOpenOperation(op LoggedOperation) *OpenOperation { return &OpenOperation{entry: op} }

type openOperationKey struct{}

// WithOpenOperation returns ctx carrying o, for the use case that runs in it to fold o into its
// last transaction.
func WithOpenOperation(ctx context.Context, o *OpenOperation) context.Context {
	return context.WithValue(ctx, openOperationKey{}, o)
}

func openOperationIn(ctx context.Context) *OpenOperation {
	o, _ := ctx.Value(openOperationKey{}).(*OpenOperation)
	return o
}

// foldError is a failure to write the folded entry: the change it rode along with is then made
// without it, and the entry is written after the command, as a log without Replace gets it.
type foldError struct{ err error }

func (e *foldError) Error() string { return "operation log: " + e.err.Error() }

// commitLogged runs change in one transaction with the open operation of ctx, when there is one
// and the log can take it (see OpenOperation); otherwise change runs alone. The entry names every
// checkpoint created since the command started, as the log entry written after the command does.
func (o *Operations) commitLogged(ctx context.Context, change func(ctx context.Context) error) error {
	open := openOperationIn(ctx)
	replacer, ok := o.oplog.(OperationReplacer)
	if open == nil || !ok {
		return change(ctx)
	}
	err := o.tx.Do(ctx, func(ctx context.Context) error {
		if err := change(ctx); err != nil {
			return err
		}
		created, err := o.checkpoints.ListSince(ctx, open.entry.StartedAt)
		if err != nil {
			return &foldError{err}
		}
		e := open.entry
		if e.ID == "" {
			e.ID = ident.New(o.clock.Now())
		}
		e.Checkpoints = slices.Clone(e.Checkpoints)
		for _, c := range created {
			if !slices.Contains(e.Checkpoints, c.ID()) {
				e.Checkpoints = append(e.Checkpoints, c.ID())
			}
		}
		e.Outcome, e.FinishedAt = "ok", o.clock.Now()
		if err := replacer.Replace(ctx, e); err != nil {
			return &foldError{err}
		}
		open.folded, open.log = &e, replacer
		return nil
	})
	if fe := (*foldError)(nil); errors.As(err, &fe) {
		// Nothing committed: the change alone, and the entry after the command.
		open.folded = nil
		return change(ctx)
	}
	if err != nil {
		open.folded = nil
	}
	return err
}

// Finish logs the command of open as it ended (final: its outcome, the checkpoints it created and
// used). When its last transaction already wrote exactly that entry, nothing more is written; when
// it wrote another (the command failed after it), the entry is replaced; when none was folded,
// final is recorded as Record records it.
func (s *HistoryService) Finish(ctx context.Context, open *OpenOperation, final LoggedOperation) (LoggedOperation, error) {
	if open == nil || open.folded == nil {
		return s.Record(ctx, final)
	}
	folded := *open.folded
	final.ID = folded.ID
	if final.FinishedAt.IsZero() {
		final.FinishedAt = folded.FinishedAt
	}
	if sameEntry(folded, final) {
		return folded, nil
	}
	final.FinishedAt = s.ops.clock.Now()
	return final, open.log.Replace(ctx, final)
}

// sameEntry says whether a and b log the same thing (their finishing times aside).
func sameEntry(a, b LoggedOperation) bool {
	return a.ID == b.ID && a.Kind == b.Kind && slices.Equal(a.Args, b.Args) && a.Plan == b.Plan &&
		a.StartedAt.Equal(b.StartedAt) && a.Outcome == b.Outcome && slices.Equal(a.Checkpoints, b.Checkpoints) &&
		a.UndoCheckpoint == b.UndoCheckpoint && a.UndoneBy == b.UndoneBy
}
