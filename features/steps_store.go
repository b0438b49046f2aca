package features

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cucumber/godog"
)

func (s *scenario) registerStoreSteps(sc *godog.ScenarioContext) {
	sc.Step(`^(\d+) checkpoints "([^"]*)" of a changing tree$`, s.checkpointsOfAChangingTree)
	sc.Step(`^I (flip a byte in the middle of|delete|truncate to half its size) the pack checkpoint "([^"]*)" wrote$`, s.iDamageThePackOf)
	sc.Step(`^the database is overwritten with junk$`, s.theDatabaseIsOverwrittenWithJunk)
	sc.Step(`^the database is truncated to zero bytes$`, s.theDatabaseIsTruncated)
	sc.Step(`^I empty every pack index file$`, s.iEmptyEveryPackIndex)
	sc.Step(`^I flip a byte in every record$`, s.iFlipAByteInEveryRecord)
}

// checkpointsOfAChangingTree takes n checkpoints named prefix1 … prefixN, remembering each one's ID
// and workspace. Between them the tree changes: data.bin gets new random content (so what older
// checkpoints stored becomes garbage once they are pruned), counter.txt is rewritten, a file is
// added under history/ and, every third time, the previous one is deleted.
func (s *scenario) checkpointsOfAChangingTree(n int, prefix string) error {
	for i := 1; i <= n; i++ {
		data := make([]byte, 16<<10)
		if _, err := rand.Read(data); err != nil {
			return err
		}
		if err := s.writeFile("data.bin", data, 0o644); err != nil {
			return err
		}
		if err := s.writeFile("counter.txt", []byte(strconv.Itoa(i)+"\n"), 0o644); err != nil {
			return err
		}
		if err := s.writeFile(fmt.Sprintf("history/%02d.txt", i), []byte(fmt.Sprintf("entry %d\n", i)), 0o644); err != nil {
			return err
		}
		if i%3 == 0 {
			if err := s.iDelete(fmt.Sprintf("history/%02d.txt", i-1)); err != nil {
				return err
			}
		}
		if err := s.aCheckpoint(prefix + strconv.Itoa(i)); err != nil {
			return err
		}
	}
	return nil
}

// iDamageThePackOf damages the pack files the checkpoint named wrote (its new objects), and no other.
func (s *scenario) iDamageThePackOf(how, name string) error {
	packs, ok := s.packs[name]
	if !ok {
		return fmt.Errorf("no checkpoint remembered as %q by `a checkpoint`", name)
	}
	if len(packs) == 0 {
		return fmt.Errorf("checkpoint %q wrote no pack file (it stored nothing new)", name)
	}
	for _, p := range packs {
		var err error
		switch how {
		case "flip a byte in the middle of":
			err = flipMiddleByte(p)
		case "delete":
			err = os.Remove(p)
		case "truncate to half its size":
			err = rewriteKeepingMode(p, func(f *os.File, size int64) error { return f.Truncate(size / 2) })
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// theDatabaseIsOverwrittenWithJunk replaces the workspace's plan.db with random bytes (and removes SQLite's
// side files), as a disk fault or a stray write would leave it.
// theDatabaseIsTruncated leaves a zero-byte plan.db (and no WAL), as a failed copy or a full
// disk can.
func (s *scenario) theDatabaseIsTruncated() error {
	db, err := s.history("plan.db")
	if err != nil {
		return err
	}
	if err := os.Truncate(db, 0); err != nil {
		return err
	}
	for _, side := range []string{"-wal", "-shm", "-journal"} {
		if err := os.Remove(db + side); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

func (s *scenario) theDatabaseIsOverwrittenWithJunk() error {
	db, err := s.history("plan.db")
	if err != nil {
		return err
	}
	if _, err := os.Stat(db); err != nil {
		return err
	}
	junk := make([]byte, 64<<10)
	if _, err := rand.Read(junk); err != nil {
		return err
	}
	if err := os.WriteFile(db, junk, 0o600); err != nil {
		return err
	}
	for _, side := range []string{"-wal", "-shm", "-journal"} {
		if err := os.Remove(db + side); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// iEmptyEveryPackIndex truncates every .idx file of the store to zero bytes, as a crash between
// creating and writing an index could leave it.
func (s *scenario) iEmptyEveryPackIndex() error {
	packs, err := s.history("objects/packs")
	if err != nil {
		return err
	}
	idx, err := filepath.Glob(filepath.Join(packs, "*.idx"))
	if err != nil {
		return err
	}
	if len(idx) == 0 {
		return errors.New("no index files in the store (objects/packs)")
	}
	for _, p := range idx {
		if err := rewriteKeepingMode(p, func(f *os.File, _ int64) error { return f.Truncate(0) }); err != nil {
			return err
		}
	}
	return nil
}

// iFlipAByteInEveryRecord damages every committed record of the store (objects/records).
func (s *scenario) iFlipAByteInEveryRecord() error {
	records, err := s.history("objects/records")
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(records)
	if err != nil {
		return err
	}
	n := 0
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(records, e.Name())
		if err := rewriteKeepingMode(p, func(f *os.File, size int64) error {
			b := make([]byte, 1)
			if _, err := f.ReadAt(b, size/2); err != nil {
				return err
			}
			b[0] ^= 0x01
			_, err := f.WriteAt(b, size/2)
			return err
		}); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return errors.New("no records in the store (objects/records)")
	}
	return nil
}
