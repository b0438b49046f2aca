package executor

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// tagged lists the processes whose environment contains want, read from /proc: this also finds a
// process that left the decision's process group.
func (s *Shell) tagged(_ string, want []byte) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone, or not ours to read
		}
		if bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
