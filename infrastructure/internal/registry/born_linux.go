package registry

import "golang.org/x/sys/unix"

// born is when the directory at p was made (statx's birth time, in Unix nanoseconds), or 0 when
// the file system does not keep one. With the inode it tells a directory from another made at
// the same path since: an inode number is reused as soon as it is free.
func born(p string) int64 {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, 0, unix.STATX_BTIME, &st); err != nil || st.Mask&unix.STATX_BTIME == 0 {
		return 0
	}
	return st.Btime.Sec*1e9 + int64(st.Btime.Nsec)
}
