package features

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/cucumber/godog"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/tests/testkit/treetest"
)

func (s *scenario) registerWorkspaceSteps(sc *godog.ScenarioContext) {
	// Setting up.
	sc.Step(`^a workspace$`, s.aWorkspace)
	sc.Step(`^an initialised workspace$`, s.anInitialisedWorkspace)
	sc.Step(`^a file "([^"]*)" containing "(.*)"$`, s.aFileContaining)
	sc.Step(`^a file "([^"]*)" with:$`, s.aFileWith)
	sc.Step(`^an executable file "([^"]*)" containing "(.*)"$`, s.anExecutableFileContaining)
	sc.Step(`^a file "([^"]*)" of (\d+) bytes of random data$`, s.aFileOfRandomData)
	sc.Step(`^a symlink "([^"]*)" pointing to "([^"]*)"$`, s.aSymlink)
	sc.Step(`^an empty directory "([^"]*)"$`, s.anEmptyDirectory)
	sc.Step(`^a \.planignore with:$`, s.aPlanignoreWith)
	sc.Step(`^a FIFO "([^"]*)"$`, s.aFIFO)

	// Changing the workspace.
	sc.Step(`^I delete "([^"]*)"$`, s.iDelete)
	sc.Step(`^I change "([^"]*)" to "(.*)"$`, s.iChange)
	sc.Step(`^I change the mode of "([^"]*)" to "([0-7]{3,4})"$`, s.iChangeTheMode)
	sc.Step(`^I replace "([^"]*)" with a file containing "(.*)"$`, s.iReplaceWithAFile)
	sc.Step(`^I replace "([^"]*)" with a symlink to "([^"]*)"$`, s.iReplaceWithASymlink)
	sc.Step(`^I make "([^"]*)" immutable$`, s.iMakeImmutable)
	sc.Step(`^I flip a byte in the middle of every pack file$`, s.iCorruptEveryPack)
	sc.Step(`^another process holds the workspace lock$`, s.anotherProcessHoldsTheLock)

	// Remembering and comparing states.
	sc.Step(`^I remember the workspace as "([^"]*)"$`, s.iRememberTheWorkspace)
	sc.Step(`^the workspace equals "([^"]*)"$`, s.theWorkspaceEquals)

	// Looking at single paths.
	sc.Step(`^the file "([^"]*)" contains "(.*)"$`, s.theFileContains)
	sc.Step(`^"([^"]*)" exists$`, s.exists)
	sc.Step(`^"([^"]*)" does not exist$`, s.doesNotExist)
	sc.Step(`^"([^"]*)" is a directory$`, s.isADirectory)
	sc.Step(`^"([^"]*)" is a symlink to "([^"]*)"$`, s.isASymlinkTo)
	sc.Step(`^the mode of "([^"]*)" is "([0-7]{3,4})"$`, s.theModeIs)
	sc.Step(`^the outside directory is empty$`, s.theOutsideDirectoryIsEmpty)
}

// path resolves a workspace-relative path; scenarios name no path outside the workspace but their
// own others (<outside>/copy).
func (s *scenario) path(rel string) (string, error) {
	if s.ws == "" {
		return "", errors.New("no workspace yet: start the scenario with `Given a workspace`")
	}
	if placeholder.MatchString(rel) {
		// <outside>/copy, say: a path of the scenario's own, outside the workspace.
		p, err := s.expand(rel)
		if err != nil {
			return "", err
		}
		if r, err := filepath.Rel(s.root, p); filepath.IsAbs(p) && (err != nil || !filepath.IsLocal(r)) {
			return "", fmt.Errorf("path %q is outside the scenario's directory", p)
		}
		if filepath.IsAbs(p) {
			return p, nil
		}
		rel = p
	}
	if filepath.IsAbs(rel) || !filepath.IsLocal(filepath.FromSlash(rel)) {
		return "", fmt.Errorf("path %q is not inside the workspace", rel)
	}
	return filepath.Join(s.ws, filepath.FromSlash(rel)), nil
}

// historyDir is the directory the workspace keeps its history in (plan.db, objects/, journal.json,
// archive/, logs/, lock): the state directory its .plan/config.yaml names, in the scenario's data
// directory (dataDir), or .plan/ itself for a workspace made with `--store workspace` (or not
// made yet). A step names it `<history>`.
func (s *scenario) historyDir() (string, error) {
	if s.ws == "" {
		return "", errors.New("no workspace yet: start the scenario with `Given a workspace`")
	}
	return historyOf(s.ws)
}

// historyOf is historyDir of the workspace at root.
func historyOf(root string) (string, error) {
	l, err := bootstrap.LayoutAt(root)
	if err != nil {
		return "", err
	}
	return l.Home(), nil
}

// history is the path of a slash path in the workspace's history directory (historyDir).
func (s *scenario) history(rel string) (string, error) {
	dir, err := s.historyDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.FromSlash(rel)), nil
}

func (s *scenario) aWorkspace() error {
	if s.ws != "" {
		return nil
	}
	ws := filepath.Join(s.root, "ws")
	if err := os.Mkdir(ws, 0o750); err != nil {
		return err
	}
	s.ws = ws
	return nil
}

func (s *scenario) anInitialisedWorkspace() error {
	if err := s.aWorkspace(); err != nil {
		return err
	}
	if err := s.run("plan init", runOptions{}); err != nil {
		return err
	}
	return s.itSucceeds()
}

// writeFile writes content at rel with exactly mode (not filtered by the umask), creating parents.
func (s *scenario) writeFile(rel string, content []byte, mode fs.FileMode) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	if err := s.mkdirs(filepath.Dir(p)); err != nil {
		return err
	}
	if err := os.WriteFile(p, content, 0o600); err != nil {
		return err
	}
	return os.Chmod(p, mode) // #nosec G302 -- scenarios need the modes users have
}

// mkdirs creates dir and its missing parents with mode 0755.
func (s *scenario) mkdirs(dir string) error {
	if dir == s.ws || dir == "." {
		return nil
	}
	if fi, err := os.Lstat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if err := s.mkdirs(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o755) // #nosec G302 -- the usual directory mode, whatever the umask
}

func (s *scenario) aFileContaining(rel, text string) error {
	return s.writeFile(rel, []byte(unescape(text)), 0o644)
}

func (s *scenario) aFileWith(rel string, doc *godog.DocString) error {
	return s.writeFile(rel, []byte(doc.Content+"\n"), 0o644)
}

func (s *scenario) anExecutableFileContaining(rel, text string) error {
	return s.writeFile(rel, []byte(unescape(text)), 0o755)
}

func (s *scenario) aFileOfRandomData(rel string, n int) error {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	return s.writeFile(rel, b, 0o644)
}

func (s *scenario) aSymlink(rel, target string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	if target, err = s.expand(target); err != nil {
		return err
	}
	if err := s.mkdirs(filepath.Dir(p)); err != nil {
		return err
	}
	return os.Symlink(target, p)
}

func (s *scenario) anEmptyDirectory(rel string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	return s.mkdirs(p)
}

func (s *scenario) aPlanignoreWith(doc *godog.DocString) error {
	return s.writeFile(".planignore", []byte(doc.Content+"\n"), 0o644)
}

func (s *scenario) aFIFO(rel string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	return syscall.Mkfifo(p, 0o600)
}

func (s *scenario) iDelete(rel string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(p); err != nil {
		return fmt.Errorf("cannot delete %q: %w", rel, err)
	}
	return os.RemoveAll(p)
}

// iChange rewrites an existing file in place, keeping its mode.
func (s *scenario) iChange(rel, text string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("cannot change %q: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("cannot change %q: not a regular file", rel)
	}
	return os.WriteFile(p, []byte(unescape(text)), fi.Mode().Perm())
}

func (s *scenario) iChangeTheMode(rel, mode string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	m, err := parseMode(mode)
	if err != nil {
		return err
	}
	return os.Chmod(p, m) // #nosec G302 -- the mode the scenario asks for
}

func (s *scenario) iReplaceWithAFile(rel, text string) error {
	if err := s.iDelete(rel); err != nil {
		return err
	}
	return s.aFileContaining(rel, text)
}

func (s *scenario) iReplaceWithASymlink(rel, target string) error {
	if err := s.iDelete(rel); err != nil {
		return err
	}
	return s.aSymlink(rel, target)
}

// iMakeImmutable sets the immutable attribute: not even root may then change, rename or remove the
// file, which is how a scenario makes a rollback fail half-way on purpose.
func (s *scenario) iMakeImmutable(rel string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	if _, err := exec.LookPath("chattr"); err != nil {
		return fmt.Errorf("this scenario needs chattr (e2fsprogs) to make %q immutable: %w", rel, err)
	}
	if out, err := exec.Command("chattr", "+i", p).CombinedOutput(); err != nil {
		return fmt.Errorf("chattr +i %s (needs root and a file system with attributes, such as ext4): %w: %s", rel, err, out)
	}
	s.immutable[p] = struct{}{}
	// Prove it took: a write must now be refused.
	if f, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
		_ = f.Close()
		return fmt.Errorf("chattr +i %s had no effect: the file is still writable", rel)
	}
	return nil
}

// iCorruptEveryPack flips one byte in the middle of every pack: past the 12-byte pack header, inside
// the records, where the store must notice the damage when it reads.
func (s *scenario) iCorruptEveryPack() error {
	packs, err := s.packFiles()
	if err != nil {
		return err
	}
	if len(packs) == 0 {
		return errors.New("no pack files in the store (objects/packs)")
	}
	for _, p := range packs {
		if err := flipMiddleByte(p); err != nil {
			return err
		}
	}
	return nil
}

// packFiles lists the pack files of the workspace's store, sorted.
func (s *scenario) packFiles() ([]string, error) {
	dir, err := s.history("objects/packs")
	if err != nil {
		return nil, err
	}
	packs, err := filepath.Glob(filepath.Join(dir, "*.pack"))
	sort.Strings(packs)
	return packs, err
}

// packHeader is the size of a pack file's header; damage past it lands in the records.
const packHeader = 12

// flipMiddleByte inverts the byte in the middle of pack p (past its header), keeping p's mode.
func flipMiddleByte(p string) error {
	return rewriteKeepingMode(p, func(f *os.File, size int64) error {
		if size <= packHeader+1 {
			return fmt.Errorf("pack %s has only %d bytes", p, size)
		}
		off := max(size/2, packHeader+1)
		b := []byte{0}
		if _, err := f.ReadAt(b, off); err != nil {
			return err
		}
		b[0] ^= 0xff
		_, err := f.WriteAt(b, off)
		return err
	})
}

// rewriteKeepingMode opens p for writing (store files are read-only), lets change modify it and puts
// its mode back.
func rewriteKeepingMode(p string, change func(f *os.File, size int64) error) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if err := os.Chmod(p, 0o600); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = change(f, fi.Size())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Chmod(p, fi.Mode().Perm()) // #nosec G302 -- put the store file's mode back
}

// anotherProcessHoldsTheLock takes the flock on the workspace's lock file as a concurrent plan would. flock(2) locks
// belong to an open file description, so plan conflicts with it even when it runs in this process.
func (s *scenario) anotherProcessHoldsTheLock() error {
	p, err := s.history("lock")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil { // #nosec G115 -- a file descriptor fits in int
		_ = f.Close()
		return fmt.Errorf("lock %s: %w", p, err)
	}
	s.held = append(s.held, f)
	return nil
}

// snapshot is a remembered workspace: every path but .plan/ and .git/ at its root (see package
// treetest, which the unit tests share).
type snapshot = []tree.Entry

func takeSnapshot(dir string) (snapshot, error) { return treetest.Read(dir, nil) }

func (s *scenario) iRememberTheWorkspace(name string) error {
	if s.ws == "" {
		return errors.New("no workspace yet")
	}
	snap, err := takeSnapshot(s.ws)
	if err != nil {
		return err
	}
	s.snapshots[name] = snap
	return nil
}

func (s *scenario) theWorkspaceEquals(name string) error {
	want, ok := s.snapshots[name]
	if !ok {
		return fmt.Errorf("no workspace state remembered as %q", name)
	}
	got, err := takeSnapshot(s.ws)
	if err != nil {
		return err
	}
	diffs := treetest.Diff(want, got)
	if len(diffs) > 0 {
		return fmt.Errorf("the workspace differs from %q:\n  %s", name, treetest.Summary(diffs))
	}
	return nil
}

func (s *scenario) theFileContains(rel, text string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if want := unescape(text); string(b) != want {
		return fmt.Errorf("%s holds %q, want %q", rel, b, want)
	}
	return nil
}

func (s *scenario) exists(rel string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	_, err = os.Lstat(p)
	return err
}

func (s *scenario) doesNotExist(rel string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	if fi, err := os.Lstat(p); err == nil {
		return fmt.Errorf("%s exists (%s)", rel, fi.Mode().Type())
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (s *scenario) isADirectory(rel string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is a %v, not a directory", rel, fi.Mode().Type())
	}
	return nil
}

func (s *scenario) isASymlinkTo(rel, target string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	if target, err = s.expand(target); err != nil {
		return err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return fmt.Errorf("%s is not a symlink (%v)", rel, fi.Mode())
	}
	got, err := os.Readlink(p)
	if err != nil {
		return err
	}
	if got != target {
		return fmt.Errorf("%s points to %q, want %q", rel, got, target)
	}
	return nil
}

func (s *scenario) theModeIs(rel, mode string) error {
	p, err := s.path(rel)
	if err != nil {
		return err
	}
	want, err := parseMode(mode)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if got := fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky); got != want {
		return fmt.Errorf("%s has mode %04o, want %04o", rel, got, want)
	}
	return nil
}

// parseMode reads an octal permission mode such as 0755; the special bits are not supported.
func parseMode(s string) (fs.FileMode, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		return 0, err
	}
	if m > 0o777 {
		return 0, fmt.Errorf("mode %s: only permission bits (up to 0777) are supported", s)
	}
	return fs.FileMode(m), nil // #nosec G115 -- at most 0777, checked above
}

func (s *scenario) theOutsideDirectoryIsEmpty() error {
	entries, err := os.ReadDir(s.outside)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return fmt.Errorf("the directory outside the workspace holds %s", strings.Join(names, ", "))
	}
	return nil
}
