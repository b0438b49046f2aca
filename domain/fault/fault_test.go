package fault

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestKinds(t *testing.T) {
	cases := []struct {
		err  error
		kind error
	}{
		{NotFound("checkpoint %s", "x"), ErrNotFound},
		{Invalid("bad %d", 1), ErrInvalid},
		{Conflict("busy"), ErrConflict},
		{Integrity("damaged"), ErrIntegrity},
		{Unavailable("store %s unreachable", "s3://b"), ErrUnavailable},
		{errors.Join(Unavailable("down"), Conflict("busy")), ErrConflict},
		{Denied("store %s refused the credentials", "s3://b"), ErrDenied},
		{errors.Join(Unavailable("down"), Denied("refused")), ErrDenied},
		{Wrap(ErrIntegrity, io.ErrUnexpectedEOF, "read %s", "pack"), ErrIntegrity},
		{fmt.Errorf("outer: %w", Conflict("busy")), ErrConflict},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", NotFound("gone"))), ErrNotFound},
		{errors.New("plain"), nil},
		{nil, nil},
	}
	for _, c := range cases {
		if got := Kind(c.err); !errors.Is(got, c.kind) || (c.kind == nil) != (got == nil) {
			t.Errorf("Kind(%v) = %v, want %v", c.err, got, c.kind)
		}
		for _, k := range []error{ErrNotFound, ErrInvalid, ErrConflict, ErrIntegrity, ErrUnavailable, ErrDenied} {
			if errors.Is(c.err, k) != (k == c.kind) && !isJoin(c.err) {
				t.Errorf("errors.Is(%v, %v) = %v", c.err, k, errors.Is(c.err, k))
			}
		}
	}
}

func TestWrapKeepsCauseAndMessage(t *testing.T) {
	cause := io.ErrShortWrite
	err := Wrap(ErrConflict, cause, "write %s", "f")
	if err.Error() != "write f: short write" {
		t.Errorf("message %q", err.Error())
	}
	if !errors.Is(err, cause) || !errors.Is(err, ErrConflict) {
		t.Errorf("Wrap lost the cause or the kind: %v", err)
	}
	if Invalid("just %s", "this").Error() != "just this" {
		t.Error("message without cause changed")
	}
	// The kind of a wrapped classified cause does not leak through a different outer kind first.
	inner := NotFound("inner")
	outer := Wrap(ErrIntegrity, inner, "outer")
	if Kind(outer) != ErrNotFound && Kind(outer) != ErrIntegrity {
		t.Errorf("Kind(outer) = %v", Kind(outer))
	}
	if !errors.Is(outer, ErrIntegrity) || !errors.Is(outer, ErrNotFound) {
		t.Error("both kinds should be reachable through the chain")
	}
	var fe *Error
	if !errors.As(fmt.Errorf("x: %w", outer), &fe) || fe.Unwrap() != inner {
		t.Error("errors.As / Unwrap")
	}
}

func isJoin(err error) bool {
	_, ok := err.(interface{ Unwrap() []error })
	return ok
}
