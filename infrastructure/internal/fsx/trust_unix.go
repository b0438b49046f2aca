//go:build unix

package fsx

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// Distrust says why plan must not act on what the file or directory fi describes holds, with what
// the user can do about it; why is "" when it belongs to the user this process runs as and nobody
// else may write it. Whoever can write a workspace's .plan/ or its config.yaml decides what plan
// runs as the user who runs it (validate.command, the decisions `plan correct` re-executes), so
// both are held to this rule, as OpenSSH holds ~/.ssh (StrictModes) and git a repository
// (safe.directory). plan never makes either writable by others itself.
func Distrust(fi fs.FileInfo) (why, remedy string) {
	uid := -1
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		uid = int(st.Uid)
	}
	if uid != os.Geteuid() {
		return fmt.Sprintf("belongs to another user (uid %d)", uid), "run plan as the user who owns it"
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Sprintf("is writable by users other than you (mode %s)", perm),
			"if you trust what it holds, make it writable by you alone (chmod go-w)"
	}
	return "", ""
}
