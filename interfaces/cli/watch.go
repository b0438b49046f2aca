package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// daemonWait bounds how long `plan watch --daemon` waits for the service it started to answer.
const daemonWait = 30 * time.Second

func (h *handler) watchCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "watch",
		Usage: "run the change-tracking service of the workspace, so that checkpoints read only what changed (docs/watch.md)",
		Description: "Runs in the foreground until interrupted or `plan watch stop`; --daemon starts it in the background.\n" +
			"--every and --quiet also take periodic and idle checkpoints.",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "daemon", Usage: "start the service in the background and return once it answers"},
			&ucli.StringFlag{Name: "every", Usage: "take a `periodic` checkpoint after each `DURATION` of active work (skipped when nothing changed)"},
			&ucli.StringFlag{Name: "quiet", Usage: "take an `idle` checkpoint once the workspace has not changed for `DURATION` after a change"},
			&ucli.StringFlag{Name: "stop-after", Usage: "stop once nothing asked and nothing changed for `DURATION` (how the agents' hooks start it)"},
		},
		Action: h.watchCmd,
		Subcommands: []*ucli.Command{
			{Name: "stop", Usage: "stop the workspace's service (and remove a stale socket)", Action: h.watchSub(h.watchStop)},
			{Name: "status", Usage: "show whether the service runs, and what it did", Action: h.watchSub(h.watchStatus)},
		},
	}
}

// watchSub is the action of `plan watch stop|status`: fn on the workspace's layout.
func (h *handler) watchSub(fn func(context.Context, bootstrap.Layout) error) ucli.ActionFunc {
	return func(c *ucli.Context) error {
		if err := noExtraArgs(c, 0); err != nil {
			return err
		}
		l, err := h.watchLayout()
		if err != nil {
			return err
		}
		return fn(c.Context, l)
	}
}

// watchLayout is the layout of the initialised workspace the command runs in.
func (h *handler) watchLayout() (bootstrap.Layout, error) {
	root, err := h.workspaceRoot()
	if err != nil {
		return bootstrap.Layout{}, err
	}
	l, err := bootstrap.NewLayout(root)
	if err != nil {
		return bootstrap.Layout{}, err
	}
	return l, l.RequireInitialized()
}

func (h *handler) watchCmd(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	every, err := watchDuration(c, "every")
	if err != nil {
		return err
	}
	quiet, err := watchDuration(c, "quiet")
	if err != nil {
		return err
	}
	stopAfter, err := watchDuration(c, "stop-after")
	if err != nil {
		return err
	}
	opts := bootstrap.WatchOptions{Every: every, Quiet: quiet, StopAfter: stopAfter}
	l, err := h.watchLayout()
	if err != nil {
		return err
	}
	if c.Bool("daemon") {
		return h.watchDaemon(c, l, opts)
	}
	return h.watchForeground(c.Context, opts)
}

// watchArgs are the arguments of a `plan watch` in the background with opts.
func watchArgs(opts bootstrap.WatchOptions) []string {
	args := []string{"watch"}
	for _, o := range []struct {
		flag string
		d    time.Duration
	}{{"--every", opts.Every}, {"--quiet", opts.Quiet}, {"--stop-after", opts.StopAfter}} {
		if o.d > 0 {
			args = append(args, o.flag, o.d.String())
		}
	}
	return args
}

// spawnWatch starts `plan watch` with args for workspace l as a process of its own session, its
// output appended to watch.log in the workspace's logs (beside its history), and returns it
// without waiting.
func spawnWatch(l bootstrap.Layout, args []string) (*exec.Cmd, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("find the plan binary: %w", err)
	}
	if err := os.MkdirAll(l.Logs(), 0o700); err != nil {
		return nil, "", fault.Conflict("make %s: %v", l.Logs(), err)
	}
	logPath := filepath.Join(l.Logs(), "watch.log")
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600) // #nosec G304 -- plan's own log
	if err != nil {
		return nil, "", fault.Conflict("open %s: %v", logPath, err)
	}
	defer func() { _ = logf.Close() }()
	cmd := exec.Command(exe, args...) // #nosec G204 -- this binary, with flags it parsed itself
	cmd.Dir = l.Root
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start plan watch: %w", err)
	}
	return cmd, logPath, nil
}

// watchDuration parses --every, --quiet or --stop-after: a Go duration of at least a second.
func watchDuration(c *ucli.Context, name string) (time.Duration, error) {
	if !c.IsSet(name) {
		return 0, nil
	}
	s := c.String(name)
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Second {
		return 0, fault.Invalid("--%s %q is not a duration of at least 1s such as 30s or 4h", name, s)
	}
	return d, nil
}

func (h *handler) watchStatus(ctx context.Context, l bootstrap.Layout) error {
	st, err := bootstrap.WatchQuery(ctx, l)
	switch {
	case errors.Is(err, bootstrap.ErrWatchNotRunning):
		st = bootstrap.WatchStatus{Workspace: l.Root, Socket: bootstrap.WatchSocket(l)}
	case err != nil:
		h.warn(fmt.Sprintf("a socket is at %s but no service answers on it (%v): `plan watch stop` removes it", bootstrap.WatchSocket(l), err))
		st = bootstrap.WatchStatus{Workspace: l.Root, Socket: bootstrap.WatchSocket(l)}
	}
	return h.emit(st, func(w io.Writer) {
		if !st.Running {
			_, _ = fmt.Fprintf(w, "plan watch is not running for %s: commands walk the workspace\n", quote(l.Root))
			return
		}
		_, _ = fmt.Fprintf(w, "plan watch runs for %s (pid %d, since %s) on %s\n", quote(st.Workspace), st.PID,
			localTime(st.StartedAt), quote(st.Socket))
		_, _ = fmt.Fprintf(w, "events: %s; %d snapshots, %d of them full walks\n", st.Events, st.Snapshots, st.Walks)
		if st.Every != "" || st.Quiet != "" {
			_, _ = fmt.Fprintf(w, "checkpoints: every %s of work, after %s quiet: %d taken, %d skipped (nothing changed)\n",
				orNone(st.Every), orNone(st.Quiet), st.Checkpoints, st.Skipped)
		}
		if st.Merged > 0 {
			_, _ = fmt.Fprintf(w, "small packs merged between commands: %d\n", st.Merged)
		}
		if st.StopAfter != "" {
			_, _ = fmt.Fprintf(w, "stops after %s without a request or a change\n", st.StopAfter)
		}
		if st.LastError != "" {
			_, _ = fmt.Fprintf(w, "last failure: %s\n", scrub(st.LastError))
		}
	})
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (h *handler) watchStop(ctx context.Context, l bootstrap.Layout) error {
	was, err := bootstrap.WatchStop(ctx, l, 10*time.Second)
	if err != nil {
		return err
	}
	st := bootstrap.WatchStatus{Workspace: l.Root, Socket: bootstrap.WatchSocket(l)}
	return h.emit(st, func(w io.Writer) {
		if was {
			_, _ = fmt.Fprintf(w, "Stopped plan watch for %s\n", quote(l.Root))
		} else {
			_, _ = fmt.Fprintf(w, "plan watch was not running for %s\n", quote(l.Root))
		}
	})
}

// watchDaemon starts `plan watch` as a process of its own session (its output in
// the state directory's logs/watch.log) and waits until it answers.
func (h *handler) watchDaemon(c *ucli.Context, l bootstrap.Layout, opts bootstrap.WatchOptions) error {
	if st, err := bootstrap.WatchQuery(c.Context, l); err == nil {
		return fault.Conflict("plan watch already runs for this workspace (pid %d)", st.PID)
	}
	cmd, logPath, err := spawnWatch(l, watchArgs(opts))
	if err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(daemonWait)
	for {
		if st, err := bootstrap.WatchQuery(c.Context, l); err == nil && st.PID == cmd.Process.Pid {
			return h.emit(st, func(w io.Writer) {
				_, _ = fmt.Fprintf(w, "Started plan watch for %s (pid %d) on %s; its log is %s\n", quote(l.Root), st.PID, quote(st.Socket), quote(logPath))
			})
		}
		select {
		case err := <-exited:
			msg, _ := os.ReadFile(logPath) // #nosec G304 -- plan's own log
			return fmt.Errorf("plan watch exited at once (%w); its log %s ends with: %s", err, logPath, lastLine(string(msg)))
		case <-deadline:
			_ = cmd.Process.Kill()
			return fault.Unavailable("plan watch did not answer within %s (killed); see %s", daemonWait, logPath)
		case <-c.Done():
			_ = cmd.Process.Kill()
			return c.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func lastLine(s string) string {
	for len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}

// watchForeground runs the service until interrupted or stopped.
func (h *handler) watchForeground(ctx context.Context, opts bootstrap.WatchOptions) error {
	// The service stops when .plan/ goes (the workspace is being deleted, or re-attached by a
	// command that will start one again): it never makes .plan/ again itself.
	h.noKeepAttached = true
	return h.with(ctx, false, func(app *bootstrap.App) error {
		sv := app.Services
		opts := bootstrap.WatchOptions{
			Every: opts.Every, Quiet: opts.Quiet, StopAfter: opts.StopAfter,
			Checkpoint: func(ctx context.Context, typ checkpoint.Type, note string) error {
				_, err := sv.Checkpoints.Create(ctx, application.CreateRequest{
					Type: typ, Note: note, Labels: map[string]string{"watch": string(typ)}, Warn: h.warn,
				})
				return err
			},
			Merge: func(ctx context.Context) (int, error) {
				r, err := sv.Maintenance.Consolidate(ctx)
				return r.PacksMerged, err
			},
			Newest: func(ctx context.Context) (tree.Hash, bool, error) {
				cp, err := sv.Checkpoints.Resolve(ctx, "@")
				if errors.Is(err, fault.ErrNotFound) {
					return tree.ZeroHash, false, nil
				}
				if err != nil {
					return tree.ZeroHash, false, err
				}
				return cp.Root(), true, nil
			},
			Ready: func(socket string) {
				if !h.json {
					_, _ = fmt.Fprintf(h.r.Stderr, "plan watch: watching %s on %s (pid %d)\n", quote(sv.Layout.Root), quote(socket), os.Getpid())
				}
			},
			Log: h.warn,
		}
		err := app.ServeWatch(ctx, opts)
		if err != nil || h.json {
			return err
		}
		_, _ = fmt.Fprintf(h.r.Stderr, "plan watch: stopped\n")
		return nil
	})
}
