package application

import (
	"context"
	"fmt"
	"io"

	"github.com/planhq/plan/application/internal/kernel"
	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
)

// stateOnly says whether op is a rollback that went through and changed decision states only
// (`--mode state`, `rewind --state`): the one kind of standing rollback without a safety
// checkpoint.
func stateOnly(op port.LoggedOperation) bool {
	return op.Kind == "rollback" && op.Outcome == OutcomeOK && op.UndoCheckpoint == "" && op.UndoneBy == ""
}

// undoable says whether `plan undo` may pick op: a workspace change with a safety checkpoint that
// went through and was not undone already. Undo entries themselves are not undone (undo walks back
// through the log, as jj's does).
func undoable(op port.LoggedOperation) bool {
	switch op.Kind {
	case "correct", "revert", "rollback":
		// Its safety checkpoint is logged only once it went through (the correction is recorded,
		// the rollback applied), so it stands whatever failed after: a re-execution, a replacement,
		// a validation, writing the output. Skipping it would undo the operation before it instead,
		// going back past it.
		return op.UndoCheckpoint != "" && op.UndoneBy == ""
	case "decision":
		// A decision that failed changed the workspace too: undo takes it back all the same.
		return op.UndoCheckpoint != "" && op.UndoneBy == ""
	default:
		return false
	}
}

// HistoryService keeps the operation log and undoes operations from it.
type HistoryService struct {
	ops *Operations
	// The parts of the shared core this service uses, taken from it when it is built.
	guard       *kernel.Guard
	clock       port.Clock
	checkpoints checkpoint.Repository
	history     port.History
	log         port.OperationLog
}

// NewHistoryService returns the service. When ops was built without an operation log
// (OperationsParams.Log), it records the services' operations in log from now on.
func NewHistoryService(ops *Operations, log port.OperationLog) *HistoryService {
	if ops.oplog == nil {
		ops.oplog = log
	}
	return &HistoryService{ops: ops, log: log, guard: ops.guard, clock: ops.clock, checkpoints: ops.checkpoints, history: ops.history}
}

// Record appends op to the log, giving it an ID when it has none.
func (s *HistoryService) Record(ctx context.Context, op port.LoggedOperation) (port.LoggedOperation, error) {
	op = s.ops.stamp(op)
	return op, s.log.Add(ctx, op)
}

// stamp gives op an ID and an end when it has none.
func (o *Operations) stamp(op port.LoggedOperation) port.LoggedOperation {
	if op.ID == "" {
		op.ID = ident.New(o.clock.Now())
	}
	if op.FinishedAt.IsZero() {
		op.FinishedAt = o.clock.Now()
	}
	return op
}

// record appends op to the operation log.
func (o *Operations) record(ctx context.Context, op port.LoggedOperation) error {
	return o.oplog.Add(ctx, o.stamp(op))
}

// List returns the log newest first (limit 0: all), only plan's operations when plan is not "".
func (s *HistoryService) List(ctx context.Context, limit int, plan string) ([]port.LoggedOperation, error) {
	if limit < 0 {
		return nil, fault.Invalid("--limit must be zero (all) or more")
	}
	return s.log.List(ctx, limit, plan)
}

// ValidationFailedError reports a --validate command that failed after a rollback or a correction
// had changed the workspace. The change stands (the workspace is left restored); Undo names the
// checkpoint that takes it back.
type ValidationFailedError struct {
	Command  string
	ExitCode *int
	Undo     checkpoint.ID
	// Log is the validation's log, relative to the state directory.
	Log string
	// Err is why it could not run at all, when it could not.
	Err error
}

func (e *ValidationFailedError) Error() string {
	what := "failed"
	switch {
	case e.Err != nil:
		what = "could not run: " + e.Err.Error()
	case e.ExitCode != nil:
		what = fmt.Sprintf("failed with exit code %d", *e.ExitCode)
	}
	return fmt.Sprintf("validation %q %s; the change stands; `plan undo` takes it back, files and decision states (its safety checkpoint is %s; output in .plan/%s)",
		e.Command, what, e.Undo, e.Log)
}

func (e *ValidationFailedError) Unwrap() error { return e.Err }

// validate runs a --validate command in the workspace after a restore whose safety checkpoint is
// undo; a failure is a *ValidationFailedError.
func (o *Operations) validate(ctx context.Context, cmd string, undo checkpoint.ID, live io.Writer) error {
	id := ident.New(o.clock.Now())
	logPath := "logs/validate-" + id + ".log"
	res, err := o.exec.Execute(ctx, port.Command{Script: cmd, LogPath: logPath, Token: "validate-" + id}, live)
	switch {
	case err != nil:
		return &ValidationFailedError{Command: cmd, Undo: undo, Log: logPath, Err: err}
	case res.Interrupted:
		return fmt.Errorf("validation %q: %w", cmd, context.Canceled)
	case res.ExitCode != 0 || res.TimedOut:
		code := res.ExitCode
		return &ValidationFailedError{Command: cmd, ExitCode: &code, Undo: undo, Log: logPath}
	}
	return nil
}
