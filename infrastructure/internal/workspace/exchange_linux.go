package workspace

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exchange swaps the staged entry (dir and name inside staging) with the workspace entry name in
// the directory wd (both open through the workspace's os.Root), atomically: renameat2 with
// RENAME_EXCHANGE. It reports unsupported when the file system cannot exchange (the caller then
// renames), and what was swapped out as its stat.
func exchange(sd *os.File, sname string, wd *os.File, name string) (swapped unix.Stat_t, unsupported bool, err error) {
	err = renameExchange(int(sd.Fd()), sname, int(wd.Fd()), name) // #nosec G115 -- descriptors fit in int
	switch {
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP):
		return swapped, true, nil
	case err != nil:
		return swapped, false, err
	}
	if err := unix.Fstatat(int(sd.Fd()), sname, &swapped, unix.AT_SYMLINK_NOFOLLOW); err != nil { // #nosec G115
		return swapped, false, errors.Join(err, unswap(sd, sname, wd, name))
	}
	return swapped, false, nil
}

// renameExchange is renameat2 with RENAME_EXCHANGE (tests replace it to play a file system
// without it).
var renameExchange = func(olddirfd int, oldpath string, newdirfd int, newpath string) error {
	return unix.Renameat2(olddirfd, oldpath, newdirfd, newpath, unix.RENAME_EXCHANGE)
}

// unswap puts back what exchange swapped.
func unswap(sd *os.File, sname string, wd *os.File, name string) error {
	return unix.Renameat2(int(sd.Fd()), sname, int(wd.Fd()), name, unix.RENAME_EXCHANGE) // #nosec G115
}

// isDir reports whether a stat is a directory's.
func isDir(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }
