package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Every plan process the bench runs gets an explicit PLAN_DATA_DIR, a directory of the bench run
// (0700, as plan requires of a data directory): a new workspace keeps its history in the data
// directory, and without it the bench would write into the user's own ~/.local/share/plan. Each
// run directory (a subject's dir, a prune workload's, ...) has its own, <dir>/data, so that the
// workspaces of one phase never find another's history; b.r, the runner of everything else, has
// <base>/data.

// envDataDir is the variable plan reads its data directory from.
const envDataDir = "PLAN_DATA_DIR"

// makeDataDir makes dir (and its parents) and a private data directory in it.
func makeDataDir(dir string) (string, error) {
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	if err := os.Mkdir(data, 0o700); err != nil && !os.IsExist(err) {
		return "", err
	}
	// A umask cannot widen 0700, but an existing directory may be wider: plan refuses one open to
	// others.
	if err := os.Chmod(data, 0o700); err != nil { // #nosec G302 -- a directory: 0700 is owner-only
		return "", err
	}
	return data, nil
}

// runnerWithData is a runner whose plan processes keep their history in the data directory data.
func (b *bench) runnerWithData(data string) *runner {
	return &runner{ctx: b.ctx, env: []string{envDataDir + "=" + data}}
}

// runnerFor is the runner of the plan processes of the run directory dir: its data directory is
// dir/data.
func (b *bench) runnerFor(dir string) (*runner, error) {
	data, err := makeDataDir(dir)
	if err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	return b.runnerWithData(data), nil
}

// historyDir is where the workspace ws keeps its history: the state_dir its .plan/config.yaml
// names (the data directory's <data>/workspaces/<ID>), or .plan/ itself for a workspace made with
// `plan init --store workspace` (or by a plan binary from before the data directory).
func historyDir(ws string) string {
	inside := filepath.Join(ws, ".plan")
	b, err := os.ReadFile(filepath.Join(inside, "config.yaml")) // #nosec G304 -- the bench's own workspace
	if err != nil {
		return inside
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "state_dir:"); ok {
			v = strings.Trim(strings.TrimSpace(v), `"'`)
			if filepath.IsAbs(v) {
				return filepath.Clean(v)
			}
		}
	}
	return inside
}

// removeWorkspaceState removes the workspace ws's .plan/ and, when it is kept in a data directory
// under base (the bench's own), its history, so that the next `plan init` starts a new history
// rather than re-attaching the old one (what init does for a directory that lost its .plan/).
func removeWorkspaceState(base, ws string) error {
	if h := historyDir(ws); h != filepath.Join(ws, ".plan") {
		if !within(h, base) {
			return fmt.Errorf("the history of %s is kept in %s, outside the bench directory %s: not removing it", ws, h, base)
		}
		if err := os.RemoveAll(h); err != nil {
			return err
		}
	}
	return os.RemoveAll(filepath.Join(ws, ".plan"))
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && filepath.IsLocal(rel)
}
