package application

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/ident"
)

// Validation says whether the workspace is in a state worth checkpointing: no operation a crash
// interrupted is pending, no conflict a surgical revert left is unresolved, and the configured check
// command (validate.command in .plan/config.yaml), when there is one, succeeded.
type Validation struct {
	Pending   *port.Operation
	Conflicts []OpenConflict
	// Command is the configured check ("" when none is); it runs only when nothing above failed.
	Command string
	Ran     bool
	// ExitCode is the command's (nil when it did not run, could not start, or was timed out);
	// CommandError says why it could not start; Log is its output, relative to the state directory.
	ExitCode     *int
	CommandError string
	Log          string
}

// OK reports whether every check passed.
func (v Validation) OK() bool {
	return v.Pending == nil && len(v.Conflicts) == 0 && v.CommandError == "" && (!v.Ran || (v.ExitCode != nil && *v.ExitCode == 0))
}

// Problems lists, in words, what failed.
func (v Validation) Problems() []string {
	var out []string
	if v.Pending != nil {
		out = append(out, fmt.Sprintf("an interrupted %s (%s) is pending: plan recover finishes it", v.Pending.Kind, v.Pending.ID))
	}
	if n := len(v.Conflicts); n > 0 {
		paths := make([]string, 0, n)
		for _, c := range v.Conflicts {
			paths = append(paths, c.Conflict.Path)
		}
		out = append(out, fmt.Sprintf("%d unresolved conflict(s): %s (plan conflicts, plan resolve)", n, strings.Join(paths, ", ")))
	}
	switch {
	case v.CommandError != "":
		out = append(out, fmt.Sprintf("the check %q could not run: %s", v.Command, v.CommandError))
	case v.Ran && v.ExitCode == nil:
		out = append(out, fmt.Sprintf("the check %q timed out (output in .plan/%s)", v.Command, v.Log))
	case v.Ran && *v.ExitCode != 0:
		out = append(out, fmt.Sprintf("the check %q failed with exit code %d (output in .plan/%s)", v.Command, *v.ExitCode, v.Log))
	}
	return out
}

// NotValidError refuses a checkpoint whose workspace did not pass validation (kind
// validation_failed, exit 1). Nothing was recorded.
type NotValidError struct{ Validation Validation }

func (e *NotValidError) Error() string {
	return "the workspace did not validate; no checkpoint was taken: " + strings.Join(e.Validation.Problems(), "; ")
}

// validateWorkspace runs the checks of Validation; the check command's output goes to its log and
// to live. An interruption is an error; a failing check is not (the Validation says so).
func (o *Operations) validateWorkspace(ctx context.Context, command string, live io.Writer) (Validation, error) {
	v := Validation{Command: command}
	op, err := o.guard.Pending()
	if err != nil {
		return v, err
	}
	v.Pending = op
	cs, err := o.corrections.List(ctx)
	if err != nil {
		return v, err
	}
	for _, c := range cs {
		for _, x := range c.Unresolved() {
			v.Conflicts = append(v.Conflicts, OpenConflict{CorrectionID: c.ID(), DecisionID: c.Params().DecisionID, Conflict: x})
		}
	}
	if command == "" || v.Pending != nil || len(v.Conflicts) > 0 {
		return v, nil
	}
	id := ident.New(o.clock.Now())
	v.Log = "logs/check-" + id + ".log"
	v.Ran = true
	res, err := o.exec.Execute(ctx, port.Command{Script: command, LogPath: v.Log, Token: "check-" + id}, live)
	switch {
	case err != nil:
		v.CommandError = err.Error()
	case res.Interrupted:
		return v, fmt.Errorf("the check %q: %w", command, context.Canceled)
	case !res.TimedOut:
		code := res.ExitCode
		v.ExitCode = &code
	}
	return v, nil
}

// Validate reports whether the workspace is worth checkpointing (see Validation), running the
// configured check command. It takes no lock: it changes nothing plan records.
func (s *MaintenanceService) Validate(ctx context.Context, live io.Writer) (Validation, error) {
	cmd, err := s.settings.CheckCommand()
	if err != nil {
		return Validation{}, err
	}
	return s.ops.validateWorkspace(ctx, cmd, live)
}

// CheckCommand is the configured check command ("" when none is).
func (s *MaintenanceService) CheckCommand() (string, error) { return s.settings.CheckCommand() }

// checkBeforeCreate validates the workspace for a checkpoint that asked for it, under the lock the
// checkpoint is taken with: a failure is a *NotValidError and nothing is recorded.
func (o *Operations) checkBeforeCreate(ctx context.Context, req CreateRequest) error {
	if req.Check == nil {
		return nil
	}
	v, err := o.validateWorkspace(ctx, req.Check.Command, req.Check.Live)
	if err != nil {
		return err
	}
	if !v.OK() {
		return &NotValidError{Validation: v}
	}
	return nil
}

// CheckRequest asks a checkpoint to validate the workspace first (checkpoint create --validate).
type CheckRequest struct {
	Command string
	Live    io.Writer
}
