package executor

import "syscall"

// procAttr puts the decision in a process group of its own (so the whole group can be stopped)
// and, on Linux, has the kernel kill it if plan itself dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
