//go:build !linux

package workspace

import "errors"

// startWatcher: watching is implemented for Linux (inotify) only; elsewhere every tracked snapshot
// walks the whole workspace, as an untracked one does.
func startWatcher(string) (watcher, error) {
	return nil, errors.New("watching the workspace is not supported on this platform")
}
