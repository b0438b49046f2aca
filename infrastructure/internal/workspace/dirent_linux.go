package workspace

import (
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"
)

// readNames lists a directory's entry names (without "." and "..") into l, parsing getdents64
// records in place: no string is made for a name the walk finds unchanged.
func readNames(fd int, l *nameList) error {
	bp := getDirentBuf()
	defer direntBufs.Put(bp)
	for {
		n, err := unix.Getdents(fd, *bp)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		b := (*bp)[:n]
		for len(b) >= 19 {
			// struct linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name[].
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return errors.New("malformed directory entry")
			}
			name := b[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			if len(name) > 0 && !dots(name) {
				l.add(name)
			}
			b = b[reclen:]
		}
	}
}

// dots reports whether name is "." or "..".
func dots(name []byte) bool {
	return name[0] == '.' && (len(name) == 1 || (len(name) == 2 && name[1] == '.'))
}
