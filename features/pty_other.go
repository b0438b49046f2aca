//go:build !linux

package features

import (
	"errors"
	"os"
)

// openPTY is Linux-only here: the scenarios that answer a prompt on a terminal run on Linux.
func openPTY() (master, slave *os.File, err error) {
	return nil, nil, errors.New("pseudo-terminals are only opened on Linux by this suite")
}
