//go:build !linux

package workspace

import (
	"errors"

	"golang.org/x/sys/unix"
)

// readNames lists a directory's entry names (without "." and "..") into l.
func readNames(fd int, l *nameList) error {
	bp := getDirentBuf()
	defer direntBufs.Put(bp)
	var names []string
	for {
		n, err := unix.ReadDirent(fd, *bp)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent((*bp)[:n], -1, names[:0])
		for _, name := range names {
			l.add([]byte(name))
		}
	}
	return nil
}
