package workspace

import (
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// RefuseReads makes every scan answer "permission denied" for the workspace names in denied (a
// directory it opens, a name it stats, a file it opens), as the system would for a user who may not
// read them, until restore is called. It is for tests, which run as root, whom no permission
// refuses; it is not safe while a scan runs.
func RefuseReads(denied ...string) (restore func()) {
	is := func(name string) bool { return slices.Contains(denied, name) }
	openDir, stat, open := openSubdir, statAt, openFile
	openSubdir = func(fd int, name string, flags int, mode uint32) (int, error) {
		if is(name) {
			return -1, unix.EACCES
		}
		return openDir(fd, name, flags, mode)
	}
	statAt = func(fd int, namez []byte, st *unix.Stat_t) error {
		if is(string(namez[:len(namez)-1])) {
			return unix.EACCES
		}
		return stat(fd, namez, st)
	}
	openFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		if is(filepath.Base(name)) {
			return nil, &os.PathError{Op: "open", Path: name, Err: unix.EACCES}
		}
		return open(name, flag, perm)
	}
	return func() { openSubdir, statAt, openFile = openDir, stat, open }
}
