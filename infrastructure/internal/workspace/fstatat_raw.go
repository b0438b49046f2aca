//go:build linux && (amd64 || arm64 || riscv64)

package workspace

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// lstatAt is fstatat(fd, name, AT_SYMLINK_NOFOLLOW) for a NUL-terminated name, without the copy
// unix.Fstatat makes of every name to terminate it: the walk calls it once per entry.
func lstatAt(fd int, namez []byte, st *unix.Stat_t) error {
	// #nosec G103 -- the pointers are to live Go memory the call only reads (namez) or fills (st)
	_, _, errno := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(fd), uintptr(unsafe.Pointer(&namez[0])), // #nosec G103 -- as above
		uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0) // #nosec G103 -- as above
	if errno != 0 {
		return errno
	}
	return nil
}
