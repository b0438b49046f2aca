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
func TestRefuseReads(t testing.TB, denied ...string) { t.Cleanup(refuse(denied, true)) }

// TestRefuseStats is TestRefuseReads for stating the names in denied.
func TestRefuseStats(t testing.TB, denied ...string) { t.Cleanup(refuse(denied, false)) }

func refuse(denied []string, opens bool) (restore func()) {
	is := func(name string) bool { return slices.Contains(denied, name) }
	openDir, stat, open := openSubdir, statAt, openFile
	if opens {
		openSubdir = func(fd int, name string, flags int, mode uint32) (int, error) {
			if is(name) {
				return -1, unix.EACCES
			}
			return openDir(fd, name, flags, mode)
		}
		openFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
			if is(filepath.Base(name)) {
				return nil, &os.PathError{Op: "open", Path: name, Err: unix.EACCES}
			}
			return open(name, flag, perm)
		}
	} else {
		statAt = func(fd int, namez []byte, st *unix.Stat_t) error {
			if is(string(namez[:len(namez)-1])) {
				return unix.EACCES
			}
			return stat(fd, namez, st)
		}
	}
	return func() { openSubdir, statAt, openFile = openDir, stat, open }
}
