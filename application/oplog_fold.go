package application

import (
	"context"
	"errors"
	"slices"

	"github.com/planhq/plan/application/port"
)

// foldError is a failure to write the folded entry: the change it rode along with is then made
// without it, and the entry is written when the operation finishes, as a log without Replace gets it.
type foldError struct{ err error }

func (e *foldError) Error() string { return "operation log: " + e.err.Error() }

// commitLogged runs change in one transaction with the log entry of the operation ctx records (see
// Recording), written as it will stand if the operation ends well, when ctx records one and the
// log can Replace; otherwise change runs alone. The change and its entry are then one durable
// write: a kill -9 at any point leaves both or neither. Finishing the recording writes nothing more
// when the operation ended as folded, and replaces the entry when it did not (it failed afterwards,
// printing its result). An operation that logs its decisions too (run, exec) is not folded: its
// entry is only complete once they ran.
func (o *Operations) commitLogged(ctx context.Context, change func(ctx context.Context) error) error {
	r := recordingOf(ctx)
	replacer, ok := o.oplog.(port.OperationReplacer)
	if r == nil || !ok {
		return change(ctx)
	}
	entry, decisions, off := r.snapshot()
	if off || decisions {
		return change(ctx)
	}
	var folded port.LoggedOperation
	err := o.tx.Do(ctx, func(ctx context.Context) error {
		if err := change(ctx); err != nil {
			return err
		}
		e, _, err := o.entryAsEnded(ctx, entry, OutcomeOK)
		if err != nil {
			return &foldError{err}
		}
		folded = o.stamp(e)
		if err := replacer.Replace(ctx, folded); err != nil {
			return &foldError{err}
		}
		return nil
	})
	if fe := (*foldError)(nil); errors.As(err, &fe) {
		return change(ctx) // nothing committed: the change alone, and the entry at the finish
	}
	if err == nil {
		r.fold(folded, replacer)
	}
	return err
}

// sameEntry says whether a and b log the same thing (their finishing times aside).
func sameEntry(a, b port.LoggedOperation) bool {
	return a.ID == b.ID && a.Kind == b.Kind && slices.Equal(a.Args, b.Args) && a.Plan == b.Plan &&
		a.StartedAt.Equal(b.StartedAt) && a.Outcome == b.Outcome && slices.Equal(a.Checkpoints, b.Checkpoints) &&
		a.UndoCheckpoint == b.UndoCheckpoint && a.UndoneBy == b.UndoneBy
}
