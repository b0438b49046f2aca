//go:build !linux

package watch

import (
	"errors"
	"net"
)

// supported says the service can run here: watching needs inotify, so not on this system.
func supported() bool { return false }

// samePeer is never reached where the service does not run.
func samePeer(*net.UnixConn) error { return errors.New("the watch service needs Linux") }

// serviceAt is never reached where the service does not run.
func serviceAt(*net.UnixConn, string) error { return errors.New("the watch service needs Linux") }
