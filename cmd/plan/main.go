// Command plan checkpoints a workspace before every decision, rolls it back atomically and runs
// corrections. See README.md and the contract in the repository's shared documentation.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/planhq/plan/interfaces/cli"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.DefaultRunner(version).Run(ctx, os.Args)
	stop()
	os.Exit(code)
}
