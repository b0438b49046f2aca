// Command plan checkpoints a workspace before every decision, rolls it back atomically and runs
// corrections. See README.md and docs/.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/planhq/plan/interfaces/cli"
	"github.com/planhq/plan/interfaces/mcp"
)

// version, when set at build time with -ldflags "-X main.version=…", overrides what the binary
// knows of itself from its build information.
var version = ""

// softMemoryLimit keeps the first checkpoint of a 100,000-file tree near 120 MB of RSS instead of
// letting the heap double past its live size (measured: 138 MB without it). Later checkpoints stay
// well below it (no change: 68 MB, 1% changed: 89 MB; a run that keeps the tree in memory between
// decisions: 120 MB), so it costs them nothing. It is soft: a larger live heap only makes the
// collector work harder (the runtime caps that at half the CPU). GOMEMLIMIT in the environment
// overrides it.
const softMemoryLimit = 100 << 20

func main() {
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(softMemoryLimit)
	}
	paceGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	r := cli.DefaultRunner(cli.Version(version))
	r.MCP = mcp.Serve // plan mcp's server: interfaces/mcp imports the CLI, so the CLI cannot name it
	code := r.Run(ctx, os.Args)
	stop()
	os.Exit(code)
}
