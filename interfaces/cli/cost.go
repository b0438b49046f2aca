package cli

import "github.com/planhq/plan/infrastructure/timing"

// startTimings turns on the measurement of the command's phases when PLAN_TIMINGS asks for it
// (see package timing) and returns what prints them on stderr once the command has ended.
func (h *handler) startTimings() (report func()) {
	if v := h.getenv(timing.EnvVar); v == "" || v == "0" {
		return func() {}
	}
	timing.Enable(true)
	end := timing.Span("total")
	return func() {
		end()
		_ = timing.Write(h.r.Stderr)
		timing.Enable(false)
	}
}
