//go:build darwin || freebsd

package registry

import (
	"os"
	"syscall"
)

// born is when the directory at p was made (its birth time, in Unix nanoseconds), or 0 when it
// cannot be read. With the inode it tells a directory from another made at the same path since.
func born(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	return st.Birthtimespec.Nano()
}
