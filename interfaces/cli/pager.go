package cli

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
)

// pagedCommands are the commands whose text can run longer than a screen: on a terminal it goes
// through a pager, as git's does. JSON, and output that is not a terminal, never do.
var pagedCommands = map[string]bool{
	"diff": true, "show": true, "log": true, "history": true, "ls": true,
	"checkpoint list": true, "checkpoint show": true, "correction list": true, "plans": true,
}

// pager is a running pager process and the pipe to its input.
type pager struct {
	in  io.WriteCloser
	cmd *exec.Cmd
}

// startPager starts the pager the user chose (PLAN_PAGER, else PAGER, else less; "cat" means none)
// through the shell, as git runs GIT_PAGER, with LESS=FRX unless LESS is set: less then quits at
// once when the text fits a screen, keeps colours, and leaves the text on the screen. nil when
// there is no pager to start: the text is written directly.
func (h *handler) startPager() *pager {
	line := h.getenv("PLAN_PAGER")
	if line == "" {
		line = h.getenv("PAGER")
	}
	if line == "" {
		line = "less"
	}
	if line == "cat" {
		return nil
	}
	cmd := exec.Command("/bin/sh", "-c", line) // #nosec G204 -- the user's own pager setting, as git runs it
	cmd.Stdout, cmd.Stderr = h.r.Stdout, h.r.Stderr
	cmd.Env = os.Environ()
	if h.getenv("LESS") == "" {
		cmd.Env = append(cmd.Env, "LESS=FRX")
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil
	}
	if err := cmd.Start(); err != nil {
		_ = in.Close()
		return nil
	}
	return &pager{in: in, cmd: cmd}
}

// Write sends text to the pager. Once the user has quit it (the pipe is closed), the rest of the
// text is dropped rather than reported: quitting a pager early is not a failure of the command.
func (p *pager) Write(b []byte) (int, error) {
	if _, err := p.in.Write(b); err != nil && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, os.ErrClosed) {
		return 0, err
	}
	return len(b), nil
}

// wait closes the pager's input and waits until the user has left it.
func (p *pager) wait() {
	_ = p.in.Close()
	_ = p.cmd.Wait()
}
