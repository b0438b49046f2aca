package features

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cucumber/godog"

	"github.com/planhq/plan"
)

func (s *scenario) registerEmbedSteps(sc *godog.ScenarioContext) {
	sc.Step(`^a host program "([^"]*)" ran the Go decisions? "([^"]*)"$`, s.aHostRanGoDecisions)
}

// aHostRanGoDecisions opens the workspace as a Go host program does (plan.Open, in this process)
// and runs each decision of the comma-separated ids as a Go function: decision ID writes ID.txt
// ("written by ID") and deletes the file the decision before it wrote.
func (s *scenario) aHostRanGoDecisions(host, ids string) error {
	if s.ws == "" {
		return errors.New("no workspace yet: start the scenario with `Given a workspace`")
	}
	ctx := context.Background()
	app, err := plan.Open(ctx, plan.Config{Root: s.ws, Init: true, Host: host, Getenv: s.getenv})
	if err != nil {
		return err
	}
	var runErr error
	prev := ""
	for _, id := range strings.Split(ids, ",") {
		before := prev
		fn := plan.Func(func(_ context.Context, dir string, d plan.DecisionCall) error {
			if before != "" {
				if err := os.Remove(filepath.Join(dir, before+".txt")); err != nil {
					return err
				}
			}
			_, _ = fmt.Fprintf(d.Log, "writing %s.txt\n", d.ID)
			return os.WriteFile(filepath.Join(dir, d.ID+".txt"), []byte("written by "+d.ID+"\n"), 0o600)
		})
		if _, runErr = app.Services.Plans.Exec(ctx, plan.ExecRequest{ID: id, Func: fn}); runErr != nil {
			break
		}
		prev = id
	}
	return errors.Join(runErr, app.Close())
}
