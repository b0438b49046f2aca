//go:build !linux

package main

// fsType names the file system dir is on; only Linux's statfs is read.
func fsType(string) string { return "unknown" }

// tmpfsDataDir: the placement (c) uses Linux's /dev/shm.
func tmpfsDataDir(string, int64) (dir, reason string) {
	return "", "a tmpfs at /dev/shm is Linux's; this system is not Linux"
}
