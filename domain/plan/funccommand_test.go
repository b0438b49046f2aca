package plan_test

import (
	"errors"
	"math/rand/v2"
	"regexp"
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

// ParseFuncCommand reads exactly what the regular expression it replaced matched.
func TestParseFuncCommandMatchesTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`^go-func:([a-z0-9][a-z0-9_.-]{0,63})@(\S{1,128})$`)
	parts := []string{"go-func:", "go-func:", "a", "z9", ".", "_", "-", "@", "@", " ", "\t", "\n", "\f", "\r", "\v", "é", "\xff", "H", "x",
		strings.Repeat("n", 63), strings.Repeat("h", 127), "€"}
	rng := rand.New(rand.NewPCG(3, 4))
	try := func(run string) {
		t.Helper()
		name, host, ok := plan.ParseFuncCommand(run)
		m := re.FindStringSubmatch(run)
		if ok != (m != nil) || (ok && (name != m[1] || host != m[2])) {
			t.Fatalf("ParseFuncCommand(%q) = %q, %q, %v; the regexp says %q", run, name, host, ok, m)
		}
	}
	try("go-func:" + strings.Repeat("n", 64) + "@h")
	try("go-func:n@" + strings.Repeat("é", 128))
	try("go-func:n@" + strings.Repeat("é", 129))
	for range 50000 {
		var b strings.Builder
		b.WriteString("go-func:")
		for range rng.IntN(8) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		try(b.String())
		try(strings.TrimPrefix(b.String(), "go-func:"))
	}
}
