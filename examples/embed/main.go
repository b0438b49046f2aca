// Command embed is a host program that embeds plan: it adds plan's fx module to its own fx graph,
// executes two decisions through PlanService, finds the second one wrong and reverts it from Go with
// CorrectionService.RevertDecisions, then checks the workspace and the archive. `make check` runs it.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"go.uber.org/fx"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// agent stands for the host's own component that decides what to do; it receives plan's services
// from the shared graph like any other dependency.
type agent struct {
	plans       *application.PlanService
	corrections *application.CorrectionService
	root        string
}

func newAgent(plans *application.PlanService, corrections *application.CorrectionService, cfg bootstrap.Config) *agent {
	return &agent{plans: plans, corrections: corrections, root: cfg.Root}
}

func (a *agent) work(ctx context.Context) error {
	if _, err := a.plans.Exec(ctx, application.ExecRequest{ID: "write-notes", Command: "echo 'keep me' > notes.txt"}); err != nil {
		return err
	}
	if _, err := a.plans.Exec(ctx, application.ExecRequest{ID: "cleanup", Command: "rm notes.txt && echo oops > broken.txt"}); err != nil {
		return err
	}
	res, err := a.corrections.RevertDecisions(ctx, application.CorrectRequest{
		DecisionID: "cleanup", Reason: "deleted the notes it should keep",
	})
	if err != nil {
		return err
	}
	notes, err := os.ReadFile(filepath.Join(a.root, "notes.txt"))
	if err != nil {
		return fmt.Errorf("notes.txt was not restored: %w", err)
	}
	if string(notes) != "keep me\n" {
		return fmt.Errorf("notes.txt was restored with the wrong content %q", notes)
	}
	if _, err := os.Stat(filepath.Join(a.root, "broken.txt")); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("broken.txt should be gone from the workspace: %w", err)
	}
	archived := filepath.Join(res.Correction.Params().ArchiveDir, "cleanup", "broken.txt")
	b, err := os.ReadFile(archived)
	if err != nil {
		return fmt.Errorf("the archive should hold broken.txt: %w", err)
	}
	if string(b) != "oops\n" {
		return fmt.Errorf("the archive holds broken.txt as %q, not as the decision wrote it", b)
	}
	fmt.Printf("correction %s reverted %v; workspace restored, artifacts archived in %s\n",
		res.Correction.ID(), res.Correction.RevertedDecisions(), res.Correction.Params().ArchiveDir)
	return nil
}

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "plan-embed-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()

	var a *agent
	app := fx.New(
		bootstrap.Module(bootstrap.Config{Root: dir, Init: true}),
		fx.Provide(newAgent),
		fx.Populate(&a),
		fx.NopLogger,
	)
	if err := app.Start(ctx); err != nil {
		return err
	}
	return errors.Join(a.work(ctx), app.Stop(ctx))
}
