package main

import (
	"fmt"
	"os"
	"syscall"
)

// shmDir is where Linux mounts a tmpfs for every user.
const shmDir = "/dev/shm"

// fsMagic names the file system types statfs reports that the report is likely to meet.
var fsMagic = map[int64]string{
	0xEF53:     "ext4",
	0x01021994: "tmpfs",
	0x58465342: "xfs",
	0x9123683E: "btrfs",
	0x794C7630: "overlay",
	0x2FC12FC1: "zfs",
	0x6969:     "nfs",
	0x65735546: "fuse",
}

// fsType names the file system dir is on ("ext4", "tmpfs"), or its magic number.
func fsType(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "unknown"
	}
	if name, ok := fsMagic[st.Type]; ok {
		return name
	}
	return fmt.Sprintf("0x%x", st.Type)
}

// tmpfsDataDir makes a private data directory on /dev/shm for the placement (c), when /dev/shm
// is a tmpfs, another file system than base's, writable and has need bytes free; otherwise it
// returns "" and why not.
func tmpfsDataDir(base string, need int64) (dir, reason string) {
	if t := fsType(shmDir); t != "tmpfs" {
		return "", fmt.Sprintf("%s is not a tmpfs (%s)", shmDir, t)
	}
	if avail, ok := freeSpace(shmDir); ok && avail < need {
		return "", fmt.Sprintf("%s has %s free, the history needs about %s", shmDir, humanBytes(avail), humanBytes(need))
	}
	if sameDevice(shmDir, base) {
		return "", fmt.Sprintf("the bench directory %s is on %s's file system itself: no other file system to compare with", base, shmDir)
	}
	dir, err := os.MkdirTemp(shmDir, "plan-bench-data-")
	if err != nil {
		return "", fmt.Sprintf("%s is not writable: %v", shmDir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil { // #nosec G302 -- a directory: 0700 is owner-only
		_ = os.RemoveAll(dir)
		return "", fmt.Sprintf("%s: %v", dir, err)
	}
	return dir, ""
}
