package workspace

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// statMode is st_mode, type bits included.
func statMode(st *unix.Stat_t) uint32 { return st.Mode }

// unixStatKey is the stat key of an fstatat result: size, mtime and ctime in nanoseconds, inode,
// device and mode.
func unixStatKey(st *unix.Stat_t) statKey {
	return statKey{Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Ino: st.Ino, Dev: st.Dev, Mode: st.Mode}
}

// syscallStatKey is unixStatKey for os.FileInfo's Sys(); Size is the caller's.
func syscallStatKey(st *syscall.Stat_t) statKey {
	return statKey{Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Ino: st.Ino, Dev: st.Dev, Mode: st.Mode}
}
