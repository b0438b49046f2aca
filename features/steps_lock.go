package features

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cucumber/godog"
	"github.com/gofrs/flock"
)

// registerLockSteps adds steps that hold the workspace lock the way another plan process would:
// an flock on the lock file in the workspace's history directory through a separate open file description (flock conflicts between those
// even inside one process), with the holder's description beside it.
func (s *scenario) registerLockSteps(sc *godog.ScenarioContext) {
	sc.Step(`^another plan process holds the workspace lock as "([^"]*)"$`, s.holdLock)
	sc.Step(`^the other process releases the workspace lock$`, s.releaseLock)
}

func (s *scenario) holdLock(holder string) error {
	lockPath, err := s.history("lock")
	if err != nil {
		return err
	}
	fl := flock.New(lockPath)
	ok, err := fl.TryLock()
	if err != nil {
		return fmt.Errorf("take the workspace lock for the test: %w", err)
	}
	if !ok {
		return fmt.Errorf("the workspace lock is already held")
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(lockPath), "lock.owner"), []byte(holder+"\n"), 0o600); err != nil {
		_ = fl.Unlock()
		return err
	}
	s.heldLock = fl
	return nil
}

func (s *scenario) releaseLock() error {
	if s.heldLock == nil {
		return fmt.Errorf("no lock is held")
	}
	err := s.heldLock.Unlock()
	s.heldLock = nil
	return err
}
