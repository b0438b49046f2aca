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

// Each kind has exactly one name, and the names are those the CLI prints and the operation log
// stores: a rename would change both.
func TestEveryKindHasOneName(t *testing.T) {
	want := map[error]string{
		ErrIntegrity: "integrity", ErrInvalid: "invalid", ErrNotFound: "not_found",
		ErrConflict: "conflict", ErrDenied: "denied", ErrUnavailable: "unavailable",
	}
	ks := Kinds()
	if len(ks) != len(want) {
		t.Fatalf("Kinds() = %v, want the %d kinds", ks, len(want))
	}
	seen := map[string]error{}
	for _, k := range ks {
		name := Name(k)
		if name != want[k] {
			t.Errorf("Name(%v) = %q, want %q", k, name, want[k])
		}
		if other, dup := seen[name]; dup {
			t.Errorf("%v and %v are both named %q", other, k, name)
		}
		seen[name] = k
		if got := Name(Wrap(k, io.EOF, "wrapped")); got != name {
			t.Errorf("Name of an error of kind %v = %q, want %q", k, got, name)
		}
	}
	for _, err := range []error{nil, errors.New("plain"), io.EOF} {
		if got := Name(err); got != "" {
			t.Errorf("Name(%v) = %q, want none", err, got)
		}
	}
	// Kinds is a copy: changing it changes no classification.
	ks[0] = io.EOF
	if Kind(Integrity("x")) != ErrIntegrity || Kinds()[0] != ErrIntegrity {
		t.Error("Kinds() shares its table")
	}
}

// Kinds lists the kinds in Kind's precedence: of any two joined, the earlier one is the kind, and
// the name.
func TestKindsAreInPrecedenceOrder(t *testing.T) {
	ks := Kinds()
	for i, hi := range ks {
		for _, lo := range ks[i+1:] {
			err := errors.Join(Wrap(lo, nil, "milder"), Wrap(hi, nil, "graver"))
			if Kind(err) != hi || Name(err) != Name(hi) {
				t.Errorf("%v joined with %v: Kind %v, Name %q; want %v", lo, hi, Kind(err), Name(err), hi)
			}
		}
	}
}
