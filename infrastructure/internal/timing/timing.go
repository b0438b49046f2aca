// Package timing measures where one command's fixed cost goes: opening the store and the
// database, waiting for and taking the lock, committing. `PLAN_TIMINGS=1 plan …` prints the phases
// on stderr when the command ends (`make bench` reads them); otherwise nothing is measured and a
// span costs one atomic load.
//
// Invariants: measuring never changes what a command does or prints on stdout; phases of the same
// name add up (a command that commits twice reports the sum), and are reported in the order they
// first began.
package timing

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// EnvVar turns the measurement on when it is set to anything but "" or "0".
const EnvVar = "PLAN_TIMINGS"

var (
	on     atomic.Bool
	mu     sync.Mutex
	order  []string
	totals = map[string]time.Duration{}
)

// Enable starts measuring (or stops, with false) and forgets what was measured before.
func Enable(enable bool) {
	mu.Lock()
	order, totals = nil, map[string]time.Duration{}
	mu.Unlock()
	on.Store(enable)
}

// Span starts phase name and returns what ends it.
func Span(name string) (end func()) {
	if !on.Load() {
		return func() {}
	}
	start := time.Now()
	mu.Lock()
	if _, seen := totals[name]; !seen {
		order = append(order, name)
		totals[name] = 0
	}
	mu.Unlock()
	return func() {
		d := time.Since(start)
		mu.Lock()
		totals[name] += d
		mu.Unlock()
	}
}

// Phase is one measured phase.
type Phase struct {
	Name string
	Took time.Duration
}

// Phases returns what was measured, in the order the phases first began.
func Phases() []Phase {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Phase, 0, len(order))
	for _, n := range order {
		out = append(out, Phase{Name: n, Took: totals[n]})
	}
	return out
}

// Write prints the phases as one line: `plan: timings: {"open": 1.234, …}` (milliseconds), which
// scripts take after the prefix.
func Write(w io.Writer) error {
	phases := Phases()
	ms := make([]string, 0, len(phases))
	for _, p := range phases {
		name, _ := json.Marshal(p.Name)
		ms = append(ms, fmt.Sprintf("%s: %.3f", name, float64(p.Took.Microseconds())/1000))
	}
	line := "{"
	for i, m := range ms {
		if i > 0 {
			line += ", "
		}
		line += m
	}
	_, err := fmt.Fprintf(w, "plan: timings: %s}\n", line)
	return err
}
