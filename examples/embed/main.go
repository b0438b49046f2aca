// Command embed is a host program that embeds plan the simplest way, plan.Open: it runs two
// decisions as Go functions (one registered by name, one passed directly), finds the second one
// wrong and reverts it from Go with CorrectionService.RevertDecisions, then checks the workspace,
// the archive and the operation log. The workspace (and the archive it prints) is kept, so the
// CLI can look at it afterwards: `plan -C DIR history`, `plan -C DIR undo`. `make examples` runs it.
//
// Usage: go run ./examples/embed [DIR]   (default: a new temporary directory)
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/planhq/plan"
)

// writeNotes is a decision written in Go: it changes the workspace rooted at dir.
func writeNotes(_ context.Context, dir string, d plan.DecisionCall) error {
	_, _ = fmt.Fprintf(d.Log, "writing notes.txt (attempt %d)\n", d.Attempt)
	return os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep me\n"), 0o600)
}

// cleanup is the wrong decision: it deletes the notes and leaves a broken file.
func cleanup(_ context.Context, dir string, _ plan.DecisionCall) error {
	if err := os.Remove(filepath.Join(dir, "notes.txt")); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "broken.txt"), []byte("oops\n"), 0o600)
}

func main() {
	dir := ""
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := run(context.Background(), dir); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, dir string) (err error) {
	if dir == "" {
		if dir, err = os.MkdirTemp("", "plan-embed-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	app, err := plan.Open(ctx, plan.Config{Root: dir, Init: true, Host: "embed-example"})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, app.Close()) }()
	svc := app.Services

	// A function registered by name, then run by that name; another passed directly.
	if err := svc.Plans.Register("write-notes", plan.Func(writeNotes)); err != nil {
		return err
	}
	if _, err := svc.Plans.Exec(ctx, plan.ExecRequest{ID: "notes", FuncName: "write-notes"}); err != nil {
		return err
	}
	if _, err := svc.Plans.Exec(ctx, plan.ExecRequest{ID: "cleanup", Func: plan.Func(cleanup)}); err != nil {
		return err
	}

	res, err := svc.Corrections.RevertDecisions(ctx, plan.CorrectRequest{
		DecisionID: "cleanup", Reason: "deleted the notes it should keep",
	})
	if err != nil {
		return err
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "keep me\n" {
		return fmt.Errorf("notes.txt was not restored: %q, %w", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "broken.txt")); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("broken.txt should be gone from the workspace: %w", err)
	}
	archive := res.Correction.Params().ArchiveDir
	if b, err := os.ReadFile(filepath.Join(archive, "cleanup", "broken.txt")); err != nil || string(b) != "oops\n" {
		return fmt.Errorf("the archive should hold broken.txt as the decision wrote it: %q, %w", b, err)
	}

	// The operation log has the host's operations as it has the CLI's: newest first, the
	// correction, then each exec's decision and the exec itself.
	ops, err := svc.History.List(ctx, 0, "")
	if err != nil {
		return err
	}
	var kinds []string
	for _, op := range ops {
		kinds = append(kinds, op.Kind)
	}
	if fmt.Sprint(kinds) != "[correct decision exec decision exec]" {
		return fmt.Errorf("the operation log holds %v", kinds)
	}

	fmt.Printf("workspace %s: decisions notes and cleanup ran as Go functions; correction %s reverted %v\n",
		dir, res.Correction.ID(), res.Correction.RevertedDecisions())
	fmt.Printf("archive kept in %s\n", archive)
	fmt.Printf("see it from the CLI: plan -C %s history; plan -C %s undo takes the correction back\n", dir, dir)
	return nil
}
