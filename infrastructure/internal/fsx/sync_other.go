//go:build !linux

package fsx

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFSFlushes is false: sync(2) schedules the writes but need not wait for them (macOS does not),
// so durability takes an fsync of each path.
const syncFSFlushes = false

// syncFS has no per-file-system call here: sync(2) flushes every file system. f is still opened
// by the caller so a missing directory is reported the same way on every platform.
func syncFS(*os.File) error {
	unix.Sync()
	return nil
}
