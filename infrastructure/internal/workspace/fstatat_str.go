//go:build !(linux && (amd64 || arm64 || riscv64))

package workspace

import "golang.org/x/sys/unix"

// lstatAt is fstatat(fd, name, AT_SYMLINK_NOFOLLOW) for a NUL-terminated name.
func lstatAt(fd int, namez []byte, st *unix.Stat_t) error {
	return unix.Fstatat(fd, string(namez[:len(namez)-1]), st, unix.AT_SYMLINK_NOFOLLOW)
}
