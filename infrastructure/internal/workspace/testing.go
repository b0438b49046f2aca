package workspace

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRefuseReads makes every scan answer "permission denied" where a user who may not read the
// workspace names in denied would get it: opening them (a directory to list, a file to hash), as
// for a directory or file of another user's with mode 0700 or 0600. TestRefuseStats does the same
// for stating them, as inside a directory one may list but not search. Both last until the test
// ends. They are for tests, which run as root, whom no permission refuses; not for parallel tests.
func TestRefuseReads(t testing.TB, denied ...string) {
	openDir, open := openSubdir, openFile
	t.Cleanup(func() { openSubdir, openFile = openDir, open })
	openSubdir = func(fd int, name string, flags int, mode uint32) (int, error) {
		if slices.Contains(denied, name) {
			return -1, unix.EACCES
		}
		return openDir(fd, name, flags, mode)
	}
	openFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		if slices.Contains(denied, filepath.Base(name)) {
			return nil, &os.PathError{Op: "open", Path: name, Err: unix.EACCES}
		}
		return open(name, flag, perm)
	}
}

// TestRefuseStats is TestRefuseReads for stating the names in denied.
func TestRefuseStats(t testing.TB, denied ...string) {
	stat := statAt
	t.Cleanup(func() { statAt = stat })
	statAt = func(fd int, namez []byte, st *unix.Stat_t) error {
		if slices.Contains(denied, string(namez[:len(namez)-1])) {
			return unix.EACCES
		}
		return stat(fd, namez, st)
	}
}
