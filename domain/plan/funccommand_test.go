package plan_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/plan"
)

func TestFuncCommandRoundTrips(t *testing.T) {
	run, err := plan.FuncCommand("write.notes", "my-agent")
	if err != nil || run != "go-func:write.notes@my-agent" {
		t.Fatalf("%q, %v", run, err)
	}
	name, host, ok := plan.ParseFuncCommand(run)
	if !ok || name != "write.notes" || host != "my-agent" {
		t.Errorf("parsed %q %q %v", name, host, ok)
	}
	for _, bad := range [][2]string{{"", "h"}, {"Bad", "h"}, {"n", ""}, {"n", "a host"}, {"n", strings.Repeat("h", 129)}} {
		if _, err := plan.FuncCommand(bad[0], bad[1]); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("FuncCommand(%q, %q): %v", bad[0], bad[1], err)
		}
	}
	for _, run := range []string{"make test", "go-func:n", "go-func:n@", "echo go-func:n@h", "go-func:n@h x"} {
		if _, _, ok := plan.ParseFuncCommand(run); ok {
			t.Errorf("%q parsed as a Go function", run)
		}
	}
}
