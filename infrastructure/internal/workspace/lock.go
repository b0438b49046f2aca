package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
)

// Locker is the workspace lock: an flock on .plan/lock, which the kernel drops when the holder dies,
// so a crash never leaves a stale lock behind. The holder's description is kept beside it for the
// message the next process prints.
type Locker struct {
	path string
	// Wait is how long Lock waits for a busy lock before failing.
	Wait time.Duration
}

// NewLocker returns the lock of the workspace in l.
func NewLocker(l Layout) *Locker { return &Locker{path: l.LockFile(), Wait: 2 * time.Second} }

var _ port.Locker = (*Locker)(nil)

func (l *Locker) ownerPath() string { return l.path + ".owner" }

// Lock takes the lock or fails with fault.ErrConflict naming the holder.
func (l *Locker) Lock(ctx context.Context, purpose string) (func() error, error) {
	fl := flock.New(l.path)
	wctx, cancel := context.WithTimeout(ctx, l.Wait)
	defer cancel()
	ok, err := fl.TryLockContext(wctx, 25*time.Millisecond)
	if !ok {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		holder := "unknown process"
		if b, rerr := os.ReadFile(l.ownerPath()); rerr == nil && len(b) > 0 {
			holder = strings.TrimSpace(string(b))
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("lock %s: %w", l.path, err)
		}
		return nil, fault.Conflict("the workspace is busy: another plan process holds its lock (%s)", holder)
	}
	return l.held(fl, purpose), nil
}

// TryLock takes the lock only if it is free now.
func (l *Locker) TryLock(purpose string) (func() error, bool, error) {
	fl := flock.New(l.path)
	ok, err := fl.TryLock()
	if err != nil || !ok {
		return nil, false, err
	}
	return l.held(fl, purpose), true, nil
}

// held records the holder for others' messages and returns the release function.
func (l *Locker) held(fl *flock.Flock, purpose string) func() error {
	// Shown in another process's busy message: the local time with its offset, as plan's text
	// gives every time.
	owner := fmt.Sprintf("pid %d, plan %s, since %s", os.Getpid(), purpose, time.Now().Format("2006-01-02 15:04:05 -0700"))
	_ = os.WriteFile(l.ownerPath(), []byte(owner+"\n"), 0o600)
	return func() error {
		_ = os.Remove(l.ownerPath())
		return fl.Unlock()
	}
}

func dirOf(p string) string { return filepath.Dir(p) }
