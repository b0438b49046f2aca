package planfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/planfile"
)

// The variables plan sets for every decision cannot be overridden by a plan: the attempt token is
// how a killed run's leftover processes are found, so a plan that set it could hide them, or make
// plan stop processes of another attempt.
func TestParseRefusesReservedEnv(t *testing.T) {
	for _, name := range []string{"PLAN_WORKSPACE", "PLAN_DECISION_ID", "PLAN_ATTEMPT", "PLAN_ATTEMPT_TOKEN"} {
		src := "name: s\ndecisions:\n  - id: a\n    run: x\n    env:\n      OK: 1\n      " + name + ": forged\n"
		f, err := planfile.Parse("p.yaml", []byte(src))
		if fault.Kind(err) != fault.ErrInvalid || !strings.HasPrefix(err.Error(), "p.yaml:7: decision 1: env name "+name+" is set by plan itself") {
			t.Errorf("%s: got %+v, %v; want invalid input at line 7", name, f, err)
		}
	}
	// A name that only resembles one is the user's.
	f, err := planfile.Parse("p.yaml", []byte("name: s\ndecisions:\n  - id: a\n    run: x\n    env: {PLAN_ATTEMPTS: 3}\n"))
	if err != nil || f.Decisions[0].Env["PLAN_ATTEMPTS"] != "3" {
		t.Fatalf("PLAN_ATTEMPTS: %+v, %v", f, err)
	}
}

// A plan file that exists but cannot be opened is not "missing": the cause is reported as it is,
// so `plan run` does not tell the user to create a file that is there.
func TestLoadUnopenableIsNotMissing(t *testing.T) {
	dir := t.TempDir()
	loop := filepath.Join(dir, "plan.yaml")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	_, err := planfile.Load(loop)
	if !errors.Is(err, syscall.ELOOP) || fault.Kind(err) == fault.ErrNotFound {
		t.Fatalf("Load of a symlink loop: %v (kind %v), want ELOOP, not not-found", err, fault.Kind(err))
	}
}
