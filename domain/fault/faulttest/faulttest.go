// Package faulttest holds the check every package's tests make of an error's kind. It lives in
// non-test files so that the tests of domain/ and of every outer layer share one copy, and it
// imports only the standard library and domain/fault, as a package of domain/ must.
package faulttest

import (
	"errors"

	"github.com/planhq/plan/domain/fault"
)

// TB is the part of testing.TB the helpers need.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Require fails t unless err is of kind: not nil, matching kind (errors.Is), and classified as
// kind by fault.Kind, so an error that also carries a graver kind does not pass. what names the
// call in the failure.
func Require(t TB, err, kind error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %v", what, kind)
		return
	}
	if !errors.Is(err, kind) {
		t.Fatalf("%s: error %q is not %v", what, err, kind)
		return
	}
	if k := fault.Kind(err); !errors.Is(k, kind) { // k is a sentinel: the same one, or another
		t.Fatalf("%s: fault.Kind = %v, want %v (error %q)", what, k, kind, err)
	}
}
