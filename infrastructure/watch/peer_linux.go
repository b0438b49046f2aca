package watch

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// supported says the service can run here (inotify).
func supported() bool { return true }

// samePeer checks that the process at the other end of c is of this user: a socket another user
// made (or took over) is never trusted, nor one whose peer cannot be told.
func samePeer(c *net.UnixConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		cred, gerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) // #nosec G115 -- a descriptor
	}); err != nil {
		return err
	}
	if gerr != nil {
		return fmt.Errorf("peer credentials: %w", gerr)
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("the socket's peer is another user (uid %d)", cred.Uid)
	}
	return nil
}
