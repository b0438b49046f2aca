package workspace

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// On darwin the timestamps are Mtimespec/Ctimespec, the device is an int32 and the mode 16 bits.

// statMode is st_mode, type bits included.
func statMode(st *unix.Stat_t) uint32 { return uint32(st.Mode) }

// unixStatKey is the stat key of an fstatat result: size, mtime and ctime in nanoseconds, inode,
// device and mode.
func unixStatKey(st *unix.Stat_t) statKey {
	return statKey{
		Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(),
		Ino: st.Ino, Dev: uint64(uint32(st.Dev)), Mode: uint32(st.Mode), // #nosec G115 -- a device number's bits, kept
	}
}

// syscallStatKey is unixStatKey for os.FileInfo's Sys(); Size is the caller's.
func syscallStatKey(st *syscall.Stat_t) statKey {
	return statKey{
		Mtime: syscall.TimespecToNsec(st.Mtimespec), Ctime: syscall.TimespecToNsec(st.Ctimespec),
		Ino: st.Ino, Dev: uint64(uint32(st.Dev)), Mode: uint32(st.Mode), // #nosec G115 -- a device number's bits, kept
	}
}
