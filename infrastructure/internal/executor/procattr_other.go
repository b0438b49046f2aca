//go:build !linux

package executor

import "syscall"

// procAttr puts the decision in a process group of its own. There is no parent-death signal here:
// a decision a killed plan leaves running is found by its attempt token and stopped by Reap.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
