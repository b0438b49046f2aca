package cli

import "github.com/planhq/plan/infrastructure/bootstrap"

// startTimings turns on the measurement of the command's phases when PLAN_TIMINGS asks for it
// and returns what prints them on stderr once the command has ended.
func (h *handler) startTimings() (report func()) { return bootstrap.StartTimings(h.getenv, h.r.Stderr) }
