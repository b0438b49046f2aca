//go:build !linux

package workspace

import (
	"os"

	"golang.org/x/sys/unix"
)

// exchange: renameat2 is Linux's; elsewhere a restore renames over the workspace entry.
func exchange(*os.File, string, *os.File, string) (unix.Stat_t, bool, error) {
	return unix.Stat_t{}, true, nil
}

func unswap(*os.File, string, *os.File, string) error { return nil }

func isDir(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }
