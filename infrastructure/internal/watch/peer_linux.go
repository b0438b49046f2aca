package watch

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// supported says the service can run here (inotify).
func supported() bool { return true }

// samePeer checks that the process at the other end of c is of this user: a socket another user
// made (or took over) is never trusted, nor one whose peer cannot be told.
func samePeer(c *net.UnixConn) error {
	_, err := peer(c)
	return err
}

// serviceAt checks that the process at the other end of c is the workspace's service: of this
// user, and the process that holds the watch lock at lockPath (whose pid the lock file holds). A
// process that merely listens on the socket's path is not.
func serviceAt(c *net.UnixConn, lockPath string) error {
	pid, err := peer(c)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(lockPath) // #nosec G304 -- plan's own state file
	if err != nil {
		return fmt.Errorf("no service holds the watch lock: %w", err)
	}
	holder, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || holder != pid {
		return fmt.Errorf("the process on the socket (pid %d) is not the one that holds the watch lock (%q)", pid, strings.TrimSpace(string(b)))
	}
	f, err := os.Open(lockPath) // #nosec G304 -- plan's own state file
	if err != nil {
		return fmt.Errorf("open the watch lock: %w", err)
	}
	defer func() { _ = f.Close() }()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil { // #nosec G115 -- a descriptor
		return fmt.Errorf("no process holds the watch lock (pid %d wrote it and is gone)", holder)
	}
	return nil
}

// peer is the pid at the other end of c, which must be a process of this user.
func peer(c *net.UnixConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		cred, gerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) // #nosec G115 -- a descriptor
	}); err != nil {
		return 0, err
	}
	if gerr != nil {
		return 0, fmt.Errorf("peer credentials: %w", gerr)
	}
	if int(cred.Uid) != os.Getuid() {
		return 0, fmt.Errorf("the socket's peer is another user (uid %d)", cred.Uid)
	}
	return int(cred.Pid), nil
}
