package features

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cucumber/godog"
)

// Steps of prune.feature: histories whose files grow, and the store's size against a fresh one.
func (s *scenario) registerPruneSteps(sc *godog.ScenarioContext) {
	sc.Step(`^(\d+) checkpoints of (\d+) files that grow by appends$`, s.checkpointsOfGrowingFiles)
	sc.Step(`^the store's packs take at most ([0-9.]+) times those of a fresh store of the workspace$`, s.storeAtMostFresh)
}

// checkpointsOfGrowingFiles appends a few lines to every file, n times, checkpointing each time.
func (s *scenario) checkpointsOfGrowingFiles(n, files int) error {
	for c := range n {
		for i := range files {
			rel := fmt.Sprintf("logs/f%02d.log", i)
			p, err := s.path(rel)
			if err != nil {
				return err
			}
			old, err := os.ReadFile(p) // #nosec G304 -- a file of the scenario's workspace
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			var add bytes.Buffer
			for l := range 20 {
				fmt.Fprintf(&add, "checkpoint %d file %d line %d: %x\n", c, i, l, (c+1)*(i+7)*(l+13)*2654435761)
			}
			if err := s.writeFile(rel, append(old, add.Bytes()...), 0o644); err != nil {
				return err
			}
		}
		if err := s.run("plan checkpoint create --note append"+strconv.Itoa(c), runOptions{}); err != nil {
			return err
		}
		if err := s.itSucceeds(); err != nil {
			return err
		}
	}
	return nil
}

// storeAtMostFresh compares the workspace's packs with those of a new workspace holding one
// checkpoint of the same files.
func (s *scenario) storeAtMostFresh(factor float64) error {
	fresh := filepath.Join(s.root, "fresh")
	err := filepath.WalkDir(s.ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s.ws, p)
		switch {
		case rel == ".plan":
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(filepath.Join(fresh, rel), 0o750)
		}
		b, err := os.ReadFile(p) // #nosec G304 G122 -- a file of the scenario's own workspace, which nothing else changes
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(fresh, rel), b, 0o600)
	})
	if err != nil {
		return err
	}
	ws := s.ws
	s.ws = fresh
	for _, c := range []string{"plan init", "plan checkpoint create"} {
		if err = s.run(c, runOptions{}); err == nil {
			err = s.itSucceeds()
		}
		if err != nil {
			break
		}
	}
	s.ws = ws
	if err != nil {
		return err
	}
	ours, err := packBytes(ws)
	if err != nil {
		return err
	}
	want, err := packBytes(fresh)
	if err != nil {
		return err
	}
	if float64(ours) > factor*float64(want) {
		return fmt.Errorf("the store's packs take %d bytes, %.2f times the %d of a fresh store (want at most %g)",
			ours, float64(ours)/float64(want), want, factor)
	}
	return nil
}

// packBytes is the size of a workspace's pack and index files.
func packBytes(ws string) (int64, error) {
	dir, err := historyOf(ws)
	if err != nil {
		return 0, err
	}
	names, err := filepath.Glob(filepath.Join(dir, "objects", "packs", "*"))
	if err != nil {
		return 0, err
	}
	var n int64
	for _, name := range names {
		fi, err := os.Stat(name)
		if err != nil {
			return 0, err
		}
		n += fi.Size()
	}
	if n == 0 {
		return 0, fmt.Errorf("%s holds no pack", ws)
	}
	return n, nil
}
