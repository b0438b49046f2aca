package cli

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/infrastructure/bootstrap"
)

//go:embed demodata/plan.yaml
var demoPlan []byte

// demo runs the main job end to end on a fresh temporary workspace, through the same commands a
// user types: run a plan, find the wrong decision, correct it, check the archive, undo and redo.
func (h *handler) demoCommand() *ucli.Command {
	return &ucli.Command{
		Name: "demo", Usage: "run a self-contained demonstration in a temporary directory",
		Flags:  []ucli.Flag{&ucli.BoolFlag{Name: "keep", Usage: "keep the demo workspace"}},
		Action: h.demo,
	}
}

func (h *handler) demo(c *ucli.Context) error {
	if err := needCgo(cgoBuilt); err != nil {
		return err
	}
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "plan-demo-")
	if err != nil {
		return err
	}
	keep := c.Bool("keep")
	// history is the demo workspace's state directory in the data directory, once its first step
	// made it: removed with the workspace, so that a demo leaves no history behind for
	// `plan workspaces` to list as gone.
	history := ""
	if !keep {
		defer func() {
			if history != "" {
				_ = os.RemoveAll(history)
			}
			_ = os.RemoveAll(dir)
		}()
	}
	if err := os.WriteFile(filepath.Join(dir, "plan.yaml"), demoPlan, 0o600); err != nil {
		return err
	}
	w := h.r.Stdout
	say := func(format string, args ...any) { _, _ = fmt.Fprintf(w, "\n# "+format+"\n", args...) }
	run := func(args ...string) (string, error) {
		_, _ = fmt.Fprintf(w, "$ plan %s\n", strings.Join(quoteAll(args), " "))
		var out strings.Builder
		stdout := io.MultiWriter(w, &out)
		if args[0] == "--json" {
			stdout = &out // machine-readable step: the next step shows it for people
		}
		sub := &Runner{Stdout: stdout, Stderr: w, Stdin: strings.NewReader(""), Version: h.r.Version, Getenv: h.r.Getenv}
		code := sub.Run(c.Context, append([]string{"plan", "-C", dir}, args...))
		if l, err := bootstrap.LayoutAt(dir); history == "" && err == nil && l.Outside() {
			history = l.Home()
		}
		if code != 0 {
			// Interrupted, the demo exits as interrupted (130), not as an internal error.
			err := fmt.Errorf("demo step `plan %s` exited %d", strings.Join(args, " "), code)
			if cerr := c.Err(); cerr != nil {
				err = fmt.Errorf("%w: %w", err, cerr)
			}
			return out.String(), err
		}
		return out.String(), nil
	}
	jsonField := func(doc, field string) string {
		i := strings.Index(doc, `"`+field+`": "`)
		if i < 0 {
			return ""
		}
		rest := doc[i+len(field)+5:]
		return rest[:strings.IndexByte(rest, '"')]
	}

	say("A workspace in %s with a three-decision plan (plan.yaml).", dir)
	say("1. Run it. plan checkpoints the workspace before every decision and records what each one changed.")
	if _, err := run("run", "plan.yaml"); err != nil {
		return err
	}
	say("2. The 'configure' decision was wrong: it deleted about.html and set env=production.")
	if _, err := run("correct", "--decision", "configure", "--reason", "deleted a page and set production", "--dry-run"); err != nil {
		return err
	}
	say("3. Correct it: archive what configure and build produced, roll back atomically, re-run with a fixed command.")
	out, err := run("--json", "correct", "--yes", "--decision", "configure",
		"--reason", "deleted a page and set production",
		"--run", `printf 'env=development\nminify=false\n' > site.conf`)
	if err != nil {
		return err
	}
	safety, archive := jsonField(out, "safety_checkpoint_id"), jsonField(out, "archive_dir")
	if _, err := run("correction", "show", jsonField(out, "correction_id")); err != nil {
		return err
	}
	say("The workspace now holds what the corrected plan produces; about.html is back.")
	if _, err := run("status"); err != nil {
		return err
	}
	conf, err := os.ReadFile(filepath.Join(dir, "site.conf"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "out", "pages", "about.html")); err != nil || !strings.Contains(string(conf), "development") {
		return fmt.Errorf("demo: the corrected workspace is not what the corrected plan produces")
	}
	say("4. Nothing was lost: the wrong outputs are archived, with a manifest of their hashes.")
	if b, err := os.ReadFile(filepath.Join(archive, "configure", "site.conf")); err == nil {
		_, _ = fmt.Fprintf(w, "%s/configure/site.conf:\n%s", archive, b)
	} else {
		return fmt.Errorf("demo: archive is missing the wrong config: %w", err)
	}
	say("5. Even the correction can be undone: roll back to its safety checkpoint, then compare.")
	if _, err := run("rollback", "--yes", "--to-checkpoint", safety); err != nil {
		return err
	}
	if _, err := run("diff", safety); err != nil {
		return err
	}
	say("No differences: the workspace is exactly as it was before the correction.")
	if keep {
		say("The workspace is kept in %s (--keep).", dir)
	}
	return nil
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellJoin([]string{a})
	}
	return out
}

// needCgo is what the demo says first of a binary built without cgo (built is false), instead of
// the SQLite driver's stub message halfway through: the one thing to install.
func needCgo(built bool) error {
	if built {
		return nil
	}
	return errors.New("this binary was built without cgo, and plan needs cgo: install a C compiler (Debian/Ubuntu: apt-get install gcc; macOS: xcode-select --install), " +
		"then build again with CGO_ENABLED=1 (the SQLite driver plan keeps its history in is C)")
}
