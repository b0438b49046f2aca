//go:build unix

package registry

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByMe reports whether the file belongs to the user this process runs as.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// fileID is the file's device and inode.
func fileID(fi fs.FileInfo) (dev, ino uint64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return uint64(st.Dev), st.Ino //nolint:unconvert // #nosec G115 -- Dev is uint64 on Linux, int32 on darwin; never negative
}
