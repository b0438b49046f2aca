package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// ErrNotRunning says no service answers for the workspace.
var ErrNotRunning = errors.New("plan watch is not running for this workspace")

// Supported tells whether this system can run the service (inotify); elsewhere it declines and
// commands walk.
func Supported() bool { return supported() }

// Query returns the status of the workspace's running service: ErrNotRunning when no socket is
// there, another error when one is there and nothing (or not a service of this workspace)
// answers on it.
func Query(ctx context.Context, l workspace.Layout) (Status, error) {
	if !supported() {
		return Status{}, ErrNotRunning
	}
	var r reply
	if err := call(ctx, l, request{Op: opStatus, Workspace: l.Root}, &r); err != nil {
		if errors.Is(err, errNoService) {
			return Status{}, ErrNotRunning
		}
		return Status{}, err
	}
	if r.Status == nil {
		return Status{}, errors.New("an answer without a status")
	}
	return *r.Status, nil
}

// Stop asks the workspace's service to stop and waits (up to wait) until its socket is gone. A
// socket nobody answers on is removed (stale: the service was killed); it reports whether a
// service was running.
func Stop(ctx context.Context, l workspace.Layout, wait time.Duration) (bool, error) {
	path := SocketPath(l)
	var r reply
	err := errNoService
	if supported() {
		err = call(ctx, l, request{Op: opStop, Workspace: l.Root}, &r)
	}
	switch {
	case errors.Is(err, errNoService):
		return false, nil
	case err != nil:
		fi, lerr := os.Lstat(path)
		if lerr == nil && fi.Mode()&fs.ModeSocket != 0 {
			if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				return false, fmt.Errorf("remove the stale socket %s: %w", path, rerr)
			}
		}
		return false, nil
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return true, fmt.Errorf("plan watch was asked to stop but its socket %s is still there after %s", path, wait)
}
