package fsx

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFSFlushes: syncfs(2) makes every write on the file system durable in one call.
const syncFSFlushes = true

// syncFS flushes one file system: syncfs(2).
func syncFS(f *os.File) error {
	return unix.Syncfs(int(f.Fd())) // #nosec G115 -- a descriptor fits in int
}
