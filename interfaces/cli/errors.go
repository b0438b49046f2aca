package cli

import (
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

// exitCode maps an error to the contract's exit code and the kind name printed with --json: the
// CLI's own errors here, any other by the name application.Outcome gives it (outcomeCodes).
func exitCode(err error) (int, string) {
	switch {
	case err == nil:
		return ExitOK, ""
	case errors.As(err, new(*usageError)):
		return ExitUsage, application.OutcomeUsage
	case errors.As(err, new(*declinedError)):
		return ExitDeclined, "declined"
	}
	var child *childExit
	if errors.As(err, &child) {
		return child.code, application.Outcome(err)
	}
	name := application.Outcome(err)
	return outcomeCodes[name], name
}

// ExitCode is the exit code a command failing with err exits with, and the kind its --json error
// document names: what an in-process caller (plan mcp) reports for a failure it finds itself.
func ExitCode(err error) (code int, kind string) { return exitCode(err) }

// outcomeCodes maps each name application.Outcome returns (application.Outcomes) to its exit
// code: a fault kind's own (kindCodes), 0 and 130 for ok and interrupted, 1 for every other (a
// validation or a decision that failed, an internal error).
var outcomeCodes = outcomeTable()

// kindCodes are the fault kinds with an exit code of their own. A shared store or database out of
// reach (fault.ErrUnavailable) has none: exit 1 like any failure the user cannot fix by changing
// the request, with its own kind name so scripts can retry.
var kindCodes = map[error]int{
	fault.ErrIntegrity: ExitIntegrity,
	fault.ErrInvalid:   ExitInvalid,
	fault.ErrNotFound:  ExitNotFound,
	fault.ErrConflict:  ExitConflict,
	// The server refused the credentials or a permission: retrying cannot help, so not exit 1.
	fault.ErrDenied: ExitDenied,
}

func outcomeTable() map[string]int {
	codes := map[string]int{}
	for _, name := range application.Outcomes() {
		codes[name] = ExitInternal
	}
	for _, k := range fault.Kinds() {
		if code, ok := kindCodes[k]; ok {
			codes[fault.Name(k)] = code
		}
	}
	codes[application.OutcomeOK] = ExitOK
	codes[application.OutcomeInterrupted] = ExitInterrupted
	return codes
}
