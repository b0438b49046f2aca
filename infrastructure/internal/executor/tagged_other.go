//go:build !linux

package executor

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// tagged lists what is left of the attempt's process group, found through the group the executor
// recorded when it started the decision (there is no /proc to search by environment here). A
// process that left the group (setsid) is not found; its parent's group is.
func (s *Shell) tagged(token string, _ []byte) ([]int, error) {
	b, err := os.ReadFile(s.groupFile(token))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pgid <= 1 {
		return nil, nil // a damaged record: nothing safe to signal
	}
	if syscall.Kill(-pgid, 0) != nil {
		_ = os.Remove(s.groupFile(token))
		return nil, nil // the group is gone
	}
	return []int{-pgid}, nil
}
