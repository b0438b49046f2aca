// Package fault classifies errors into the few kinds a caller can act on.
//
// Every error that crosses a layer boundary MUST match (errors.Is) at most one of the kind sentinels
// below; the CLI maps kinds to exit codes and never inspects message text.
package fault

import (
	"errors"
	"fmt"
)

// The kinds. Compare with errors.Is.
var (
	// ErrNotFound: a checkpoint, decision, correction or workspace that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrInvalid: input that can never succeed: a malformed ID, plan file or path.
	ErrInvalid = errors.New("invalid input")
	// ErrConflict: the request is valid but the current state forbids it (busy, wrong status).
	ErrConflict = errors.New("conflict")
	// ErrIntegrity: stored data is corrupt or missing.
	ErrIntegrity = errors.New("integrity")
	// ErrUnavailable: a shared store or database could not be reached or did not answer in time
	// (network, a server down or frozen). Nothing was changed; the same request may succeed later.
	ErrUnavailable = errors.New("unavailable")
	// ErrDenied: the server answered and refused who we are or what we asked (credentials it
	// rejects, a permission the account lacks). Asking again cannot help; the account must change.
	ErrDenied = errors.New("denied")
)

// Error is an error of a known kind with a human message and an optional cause.
type Error struct {
	kind error
	msg  string
	err  error
}

func (e *Error) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

// Is reports whether target is this error's kind.
func (e *Error) Is(target error) bool { return target == e.kind }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.err }

// kinds are the kinds with their names, in precedence order: when an error carries several
// (errors.Join), integrity wins, then invalid input, not found, conflict, denied and unavailable:
// damage must never be reported as something milder. The names are the CLI's JSON kinds and the
// operation log's outcomes: never rename one.
var kinds = []struct {
	kind error
	name string
}{
	{ErrIntegrity, "integrity"},
	{ErrInvalid, "invalid"},
	{ErrNotFound, "not_found"},
	{ErrConflict, "conflict"},
	{ErrDenied, "denied"},
	{ErrUnavailable, "unavailable"},
}

// Kinds returns the kind sentinels, in precedence order (see Kind).
func Kinds() []error {
	out := make([]error, len(kinds))
	for i, k := range kinds {
		out[i] = k.kind
	}
	return out
}

// find is the index in kinds of err's kind, or -1 when it carries none.
func find(err error) int {
	for i, k := range kinds {
		if errors.Is(err, k.kind) {
			return i
		}
	}
	return -1
}

// Kind returns the kind sentinel of err, or nil when err carries none. When an error carries
// several (errors.Join), integrity wins, then invalid input, not found, conflict, denied and
// unavailable: damage must never be reported as something milder.
func Kind(err error) error {
	if i := find(err); i >= 0 {
		return kinds[i].kind
	}
	return nil
}

// Name returns the name of err's kind (Kind's precedence): "integrity", "invalid", "not_found",
// "conflict", "denied" or "unavailable", or "" when err carries none. A kind sentinel's name is
// Name(sentinel).
func Name(err error) string {
	if i := find(err); i >= 0 {
		return kinds[i].name
	}
	return ""
}

func newf(kind error, format string, args ...any) error {
	return &Error{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// NotFound returns an ErrNotFound error with a formatted message.
func NotFound(format string, args ...any) error { return newf(ErrNotFound, format, args...) }

// Invalid returns an ErrInvalid error with a formatted message.
func Invalid(format string, args ...any) error { return newf(ErrInvalid, format, args...) }

// Conflict returns an ErrConflict error with a formatted message.
func Conflict(format string, args ...any) error { return newf(ErrConflict, format, args...) }

// Integrity returns an ErrIntegrity error with a formatted message.
func Integrity(format string, args ...any) error { return newf(ErrIntegrity, format, args...) }

// Unavailable returns an ErrUnavailable error with a formatted message.
func Unavailable(format string, args ...any) error { return newf(ErrUnavailable, format, args...) }

// Denied returns an ErrDenied error with a formatted message.
func Denied(format string, args ...any) error { return newf(ErrDenied, format, args...) }

// Wrap classifies cause as kind, keeping it reachable through errors.Unwrap.
func Wrap(kind, cause error, format string, args ...any) error {
	return &Error{kind: kind, msg: fmt.Sprintf(format, args...), err: cause}
}
