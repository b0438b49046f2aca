package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/fault"
)

// The exit codes of the contract. Never renumber.
const (
	ExitOK          = 0
	ExitInternal    = 1
	ExitUsage       = 2
	ExitInvalid     = 3
	ExitNotFound    = 4
	ExitConflict    = 5
	ExitIntegrity   = 6
	ExitDenied      = 7
	ExitDeclined    = 8
	ExitInterrupted = 130
)

// usageError is a command-line mistake: unknown command or flag, missing argument, missing --yes.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// silentExit ends a command that did its job with a non-zero code and nothing to say: `plan diff
// --exit-code` found differences.
type silentExit struct{ code int }

func (e *silentExit) Error() string { return fmt.Sprintf("exit %d", e.code) }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// declinedError is a confirmation the user answered with no: nothing was changed, and a script
// that asked on a terminal can tell it from a mistake in its command line.
type declinedError struct{ what string }

func (e *declinedError) Error() string { return e.what + " cancelled: nothing was changed" }

// exitCode maps an error to the contract's exit code and the kind name printed with --json.
func exitCode(err error) (int, string) {
	var ue *usageError
	var df *application.DecisionFailedError
	switch {
	case err == nil:
		return ExitOK, ""
	case errors.As(err, &ue):
		return ExitUsage, "usage"
	case errors.As(err, new(*declinedError)):
		return ExitDeclined, "declined"
	case errors.Is(err, context.Canceled):
		return ExitInterrupted, "interrupted"
	}
	if k := fault.Kind(err); k != nil {
		for _, x := range kindCodes {
			if errors.Is(k, x.kind) {
				return x.code, x.name
			}
		}
	}
	var vf *application.ValidationFailedError
	var nv *application.NotValidError
	if errors.As(err, &vf) || errors.As(err, &nv) {
		return ExitInternal, "validation_failed"
	}
	if errors.As(err, &df) {
		return ExitInternal, "decision_failed"
	}
	return ExitInternal, "internal"
}

// kindCodes maps each fault kind to its exit code and JSON name.
var kindCodes = []struct {
	kind error
	code int
	name string
}{
	{fault.ErrIntegrity, ExitIntegrity, "integrity"},
	{fault.ErrInvalid, ExitInvalid, "invalid"},
	{fault.ErrNotFound, ExitNotFound, "not_found"},
	{fault.ErrConflict, ExitConflict, "conflict"},
	// The server refused the credentials or a permission: retrying cannot help, so not exit 1.
	{fault.ErrDenied, ExitDenied, "denied"},
	// A shared store or database out of reach: exit 1 like any failure the user cannot fix by
	// changing the request, with its own kind so scripts can retry.
	{fault.ErrUnavailable, ExitInternal, "unavailable"},
}
