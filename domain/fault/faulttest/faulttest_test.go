package faulttest_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/fault/faulttest"
)

// recorder is a TB that keeps the first failure instead of stopping the test.
type recorder struct{ msg string }

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	if r.msg == "" {
		r.msg = fmt.Sprintf(format, args...)
	}
}

// Require passes an error of the kind, wrapped or not, and fails a nil error, an error of another
// kind, and one that also carries a graver kind, each with a message naming the call.
func TestRequire(t *testing.T) {
	conflict := fault.Conflict("busy")
	cases := []struct {
		name string
		err  error
		want string // "" for a pass, else a part of the failure
	}{
		{"the kind", conflict, ""},
		{"the kind, wrapped", fmt.Errorf("outer: %w", conflict), ""},
		{"nil", nil, "no error"},
		{"another kind", fault.NotFound("gone"), "is not conflict"},
		{"no kind", errors.New("plain"), "is not conflict"},
		{"a graver kind too", errors.Join(conflict, fault.Integrity("torn")), "fault.Kind = integrity"},
	}
	for _, c := range cases {
		var r recorder
		faulttest.Require(&r, c.err, fault.ErrConflict, "the call")
		if c.want == "" && r.msg != "" || c.want != "" && (!strings.Contains(r.msg, c.want) || !strings.HasPrefix(r.msg, "the call: ")) {
			t.Errorf("%s: failure %q, want %q", c.name, r.msg, c.want)
		}
	}
}
