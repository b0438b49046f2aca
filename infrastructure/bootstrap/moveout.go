package bootstrap

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/config"
	"github.com/planhq/plan/infrastructure/internal/failpoint"
	"github.com/planhq/plan/infrastructure/internal/fsx"
	"github.com/planhq/plan/infrastructure/internal/registry"
	"github.com/planhq/plan/infrastructure/internal/watch"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// movingMarker, in a state directory, says a move-out is copying into it and has not committed:
// while the workspace's configuration does not name that directory, it is a copy in progress,
// never the history.
const movingMarker = ".moving"

// movedParts are what a move-out carries from .plan/ to the state directory: everything of the
// history. The watch service's socket and lock, the staging and trash of restores, the binding
// (home) and the configuration stay: they belong with the workspace's files.
var movedParts = []string{"plan.db", "plan.db-wal", "objects", "archive", "logs", "statcache"}

// leftParts are what a finished move-out removes from .plan/ besides movedParts: caches, made
// again where they now belong.
var leftParts = []string{"plan.db-shm", "cache", "statcache.tmp"}

// MoveResult is what MoveOut did.
type MoveResult struct {
	WorkspaceID string `json:"workspace_id"`
	From        string `json:"from"`
	To          string `json:"to"`
	Files       int    `json:"files"`
	Bytes       int64  `json:"bytes"`
	// Already says the history was outside already (a finished move's leftovers, if any, were
	// removed).
	Already bool `json:"already"`
	// Resumed says an earlier move that was cut short was finished (after its commit) or
	// started again (before it).
	Resumed bool `json:"resumed"`
}

// MoveOut moves the history of a workspace made with its state in .plan/ into the per-user data
// directory, crash-safely and resumably: it copies every part (each file fsync'd), reads every
// copied byte back against the original, and only then commits, by rewriting .plan/config.yaml
// to name the new state directory (one atomic, durable replace). The old copy goes after the
// commit. Killed before the commit, the workspace is as it was and the next MoveOut starts the
// copy again; killed after it, the workspace already uses the new copy and the next MoveOut
// removes what is left of the old one. It holds the workspace's lock throughout, and refuses
// while an operation is pending or the change-tracking service runs.
func MoveOut(ctx context.Context, root string, getenv func(string) string) (MoveResult, error) {
	s, err := Resolve(Config{Root: root, Getenv: getenv})
	if err != nil {
		return MoveResult{}, err
	}
	l := s.Layout
	res := MoveResult{WorkspaceID: s.WorkspaceID, From: l.State()}
	if l.Outside() {
		res.To, res.Already = l.Data, true
		// Committed: a marker the move left is no longer anything's.
		marker := !errors.Is(os.Remove(filepath.Join(l.Data, movingMarker)), fs.ErrNotExist)
		cleaned, err := removeOld(workspace.Layout{Root: l.Root})
		cleaned = cleaned || marker
		res.Resumed = cleaned
		return res, err
	}
	if s.WorkspaceID == "" {
		// A workspace made before workspaces had an ID: its database holds one.
		app, err := Open(ctx, Config{Root: root, Getenv: getenv})
		if err != nil {
			return res, err
		}
		s.WorkspaceID, res.WorkspaceID = app.WorkspaceID(), app.WorkspaceID()
		if err := app.Close(); err != nil {
			return res, err
		}
	}
	// The service keeps the database open where it is: it stops (the hooks, or `plan watch`,
	// start it again, on the new state directory).
	if _, err := watch.Stop(ctx, l, 10*time.Second); err != nil {
		return res, fault.Conflict("stop the change-tracking service of %s first (`plan watch stop`): %v; nothing was moved", l.Root, err)
	}
	unlock, err := workspace.NewLocker(l).Lock(ctx, "store move-out")
	if err != nil {
		return res, err
	}
	defer func() { _ = unlock() }()
	if _, err := os.Stat(l.JournalFile()); err == nil {
		return res, fault.Conflict("an interrupted operation is pending in %s: run `plan recover` first; nothing was moved", l.Root)
	}
	reg, err := s.registry(true)
	if err != nil {
		return res, err
	}
	to := reg.StateDir(s.WorkspaceID)
	res.To = to
	if _, err := os.Stat(filepath.Join(to, movingMarker)); err == nil {
		// A move cut short before its commit: what it copied is no history; copy again.
		if err := os.RemoveAll(to); err != nil {
			return res, err
		}
		res.Resumed = true
	}
	if _, err := os.Lstat(to); err == nil {
		return res, fault.Conflict("the data directory already holds a workspace %s (%s): two workspaces cannot claim one ID; nothing was moved", s.WorkspaceID, to)
	}
	if err := os.Mkdir(to, 0o700); err != nil {
		return res, fmt.Errorf("make %s: %w", to, err)
	}
	if err := fsx.CreateDurable(filepath.Join(to, movingMarker), []byte(l.Root+"\n"), 0o600); err != nil {
		return res, err
	}
	if err := fsx.SyncDir(filepath.Dir(to)); err != nil {
		return res, err
	}
	for _, p := range movedParts {
		n, b, err := copyPart(filepath.Join(l.State(), p), filepath.Join(to, p))
		if err != nil {
			return res, fmt.Errorf("copy %s into %s (nothing was moved: the workspace still uses %s): %w", p, to, l.State(), err)
		}
		res.Files, res.Bytes = res.Files+n, res.Bytes+b
		if err := ctx.Err(); err != nil {
			return res, err
		}
	}
	if err := failpoint.Hit("move.copied"); err != nil {
		return res, err
	}
	for _, p := range movedParts {
		if err := samePart(filepath.Join(l.State(), p), filepath.Join(to, p)); err != nil {
			return res, fault.Integrity("the copy of %s in %s does not read back as the original (%v): nothing was moved; the workspace still uses %s", p, to, err, l.State())
		}
	}
	if err := failpoint.Hit("move.verified"); err != nil {
		return res, err
	}
	e, err := newEntry(s.WorkspaceID, l.Root)
	if err != nil {
		return res, err
	}
	if err := reg.Save(e); err != nil {
		return res, err
	}
	f := s.File
	f.WorkspaceID, f.StateDir = s.WorkspaceID, to
	if err := config.Save(filepath.Join(to, registry.ConfigCopy), f); err != nil {
		return res, err
	}
	// The commit: from here on the workspace's configuration names the new state directory.
	if err := config.Save(config.Path(l.State()), f); err != nil {
		return res, err
	}
	if err := failpoint.Hit("move.committed"); err != nil {
		return res, err
	}
	_ = os.Remove(filepath.Join(to, movingMarker))
	_, err = removeOld(l)
	return res, err
}

// removeOld removes from .plan/ the parts of a history that now lives outside it; it says
// whether there was anything to remove.
func removeOld(l workspace.Layout) (bool, error) {
	some := false
	for _, p := range append(append([]string{}, movedParts...), leftParts...) {
		path := filepath.Join(l.State(), p)
		if _, err := os.Lstat(path); err != nil {
			continue
		}
		some = true
		if err := failpoint.Hit("move.removing"); err != nil {
			return some, err
		}
		if err := os.RemoveAll(path); err != nil {
			return some, fmt.Errorf("remove the old copy %s (the workspace uses the new one; run `plan store move-out` again to finish): %w", path, err)
		}
	}
	_ = os.Remove(filepath.Join(l.State(), "lock"))
	_ = os.Remove(filepath.Join(l.State(), "lock.owner"))
	return some, nil
}

// copyPart copies the file or tree src to dst (absent src: nothing), each file and directory
// fsync'd; it returns the files and bytes copied. Only regular files and directories are plan's.
func copyPart(src, dst string) (int, int64, error) {
	files, n := 0, int64(0)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == src && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(out, 0o700)
		case d.Type().IsRegular():
			size, err := copyFile(p, out)
			files, n = files+1, n+size
			return err
		}
		return fmt.Errorf("%s is not a regular file (%s): plan's state holds none", p, d.Type())
	})
	if err != nil {
		return files, n, err
	}
	if files > 0 {
		return files, n, fsx.SyncTree(dst)
	}
	return files, n, nil
}

func copyFile(src, dst string) (int64, error) {
	in, err := os.Open(src) // #nosec G304 -- the workspace's own state
	if err != nil {
		return 0, err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600) // #nosec G304 -- the new state directory
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// samePart reads src and dst back and compares every file's bytes (by SHA-256) and the set of
// files.
func samePart(src, dst string) error {
	seen := 0
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == src && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(src, p)
		a, err := digest(p)
		if err != nil {
			return err
		}
		b, err := digest(filepath.Join(dst, rel))
		if err != nil {
			return err
		}
		if !bytes.Equal(a, b) {
			return fmt.Errorf("%s differs", rel)
		}
		seen++
		return nil
	})
	if err != nil {
		return err
	}
	copied := 0
	_ = filepath.WalkDir(dst, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			copied++
		}
		return nil
	})
	if copied != seen {
		return fmt.Errorf("%d files copied, %d in the original", copied, seen)
	}
	return nil
}

func digest(p string) ([]byte, error) {
	f, err := os.Open(p) // #nosec G304 -- plan's own state
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}
