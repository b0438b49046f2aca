// Package failpoint lets crash tests stop plan at a named step of a journaled operation.
//
// A failpoint is armed only through the PLAN_FAILPOINT environment variable ("name" or
// "name=action", action "kill" (default: SIGKILL to this process, exactly like a crash) or "error"
// (the step fails with an error)). With the variable unset every Hit is a no-op costing one map-free
// string compare, so failpoints stay compiled into the release binary and the crash test exercises
// the very code users run.
package failpoint

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
)

// EnvVar names the variable that arms a failpoint.
const EnvVar = "PLAN_FAILPOINT"

var (
	once   sync.Once
	armed  string
	action string
)

func load() {
	v := os.Getenv(EnvVar)
	armed, action, _ = strings.Cut(v, "=")
	if action == "" {
		action = "kill"
	}
}

// Hit triggers the failpoint name if it is armed.
func Hit(name string) error {
	once.Do(load)
	if armed == "" || armed != name {
		return nil
	}
	if action == "error" {
		return fmt.Errorf("failpoint %s: injected failure", name)
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL cannot be caught; never returns
}
