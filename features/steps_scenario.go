package features

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cucumber/godog"
	"github.com/gofrs/flock"
)

// Harness is what the scenarios of one test run share: where the plan binary is.
type Harness struct {
	// Binary, when set, is the plan binary every command runs (PLAN_BINARY); empty means in-process.
	Binary string
	// BuildDir is where a binary is built, once, for the scenarios that need a real process.
	BuildDir string

	once     sync.Once
	built    string
	buildErr error

	mu    sync.Mutex // guards roots
	roots []string   // every scenario directory not yet removed
}

// processBinary returns a plan binary for steps that need a real process, building one if needed.
func (h *Harness) processBinary() (string, error) {
	if h.Binary != "" {
		return h.Binary, nil
	}
	h.once.Do(func() {
		out := filepath.Join(h.BuildDir, "plan")
		cmd := exec.Command("go", "build", "-o", out, "github.com/planhq/plan/cmd/plan")
		if b, err := cmd.CombinedOutput(); err != nil {
			h.buildErr = fmt.Errorf("build the plan binary: %w\n%s", err, b)
			return
		}
		h.built = out
	})
	return h.built, h.buildErr
}

// Cleanup removes the directories of scenarios whose After hook did not run.
func (h *Harness) Cleanup() error {
	h.mu.Lock()
	roots := h.roots
	h.roots = nil
	h.mu.Unlock()
	var errs []error
	for _, r := range roots {
		errs = append(errs, removeTree(r, nil))
	}
	return errors.Join(errs...)
}

func (h *Harness) track(root string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.roots = append(h.roots, root)
}

func (h *Harness) untrack(root string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, r := range h.roots {
		if r == root {
			h.roots = append(h.roots[:i], h.roots[i+1:]...)
			return
		}
	}
}

// scenario is one scenario's state; InitializeScenario makes a fresh one for every scenario.
type scenario struct {
	heldLock *flock.Flock // the workspace lock a step holds as "another process"
	h        *Harness

	root    string // the scenario's temporary directory
	ws      string // the workspace, root/ws (symlink-free, as plan resolves it)
	outside string // root/outside: a directory outside the workspace, for escape checks
	plans   string // root/plans: where plan files are written, outside the workspace they change

	// The last command.
	cmdline   string
	stdout    string
	stderr    string
	exitCode  int
	elapsed   time.Duration // how long the last command took
	unchecked bool          // the last command exited non-zero and no step has asserted its exit code yet

	answer    *string             // what the next command reads on a terminal stdin
	ids       map[string]string   // remembered IDs (checkpoints, corrections) by name
	snapshots map[string]snapshot // remembered workspace states by name
	immutable map[string]struct{} // absolute paths made immutable, undone at teardown
	held      []*os.File          // locks the scenario holds, released at teardown
	outputs   map[string]string   // remembered stdouts by name
	packs     map[string][]string // the pack files each remembered checkpoint wrote, by checkpoint name

	// A shared store and database, when the scenario uses them (<store>, <db>), and the AWS
	// environment its commands see.
	store, db       string
	dbName, dbAdmin string
	env             map[string]string

	// The scenario's watch service (its pid, 0 when none runs) and a listener that impersonates one.
	watchPID int
	impostor net.Listener
}

// exitAssertion matches the steps that look at a command's exit code; only these may follow a
// command that failed.
var exitAssertion = regexp.MustCompile(`^(the exit code is|it succeeds|the process was killed)`)

// InitializeScenario registers the steps and hooks of one scenario on fresh state.
func (h *Harness) InitializeScenario(sc *godog.ScenarioContext) {
	s := &scenario{
		h: h, ids: map[string]string{}, snapshots: map[string]snapshot{},
		immutable: map[string]struct{}{}, outputs: map[string]string{}, packs: map[string][]string{},
	}
	sc.Before(func(ctx context.Context, _ *godog.Scenario) (context.Context, error) {
		return ctx, s.setUp()
	})
	sc.StepContext().Before(func(ctx context.Context, st *godog.Step) (context.Context, error) {
		if s.unchecked && !exitAssertion.MatchString(st.Text) {
			return ctx, s.uncheckedError()
		}
		return ctx, nil
	})
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		var uerr error
		if err == nil && s.unchecked {
			uerr = s.uncheckedError()
		}
		if s.heldLock != nil {
			_ = s.heldLock.Unlock()
			s.heldLock = nil
		}
		return ctx, errors.Join(uerr, s.tearDown())
	})
	s.registerWorkspaceSteps(sc)
	s.registerRunSteps(sc)
	s.registerOutputSteps(sc)
	s.registerPlanSteps(sc)
	s.registerStoreSteps(sc)
	s.registerLockSteps(sc)
	s.registerSharedSteps(sc)
	s.registerAgentInstallSteps(sc)
	s.registerEmbedSteps(sc)
	s.registerCostSteps(sc)
	s.registerMCPSteps(sc)
	s.registerAgentSteps(sc)
	s.registerWatchSteps(sc)
	s.registerPruneSteps(sc)
	s.registerFixedSteps(sc)
}

func (s *scenario) uncheckedError() error {
	return fmt.Errorf("`%s` exited %d and no step checked its exit code\nstderr:\n%s", s.cmdline, s.exitCode, s.stderr)
}

func (s *scenario) setUp() error {
	root, err := os.MkdirTemp("", "plan-feature-")
	if err != nil {
		return err
	}
	// plan resolves the workspace without symlinks; so do the expectations built from it.
	if root, err = filepath.EvalSymlinks(root); err != nil {
		return err
	}
	s.h.track(root)
	s.root = root
	s.outside = filepath.Join(root, "outside")
	s.plans = filepath.Join(root, "plans")
	return os.Mkdir(s.outside, 0o750)
}

func (s *scenario) tearDown() error {
	for _, f := range s.held {
		_ = f.Close() // closing the file releases its flock
	}
	s.held = nil
	if s.root == "" {
		return nil
	}
	// A decision's processes may outlive a plan the scenario killed; they must not outlive the
	// scenario (nor write into its directory while it is removed).
	killErr := killProcessesIn(s.root)
	err := errors.Join(killErr, removeTree(s.root, s.immutable))
	if err == nil {
		s.h.untrack(s.root)
	}
	return err
}

// removeTree removes dir even when a scenario made parts of it immutable or read-only.
func removeTree(dir string, immutable map[string]struct{}) error {
	var errs []error
	paths := make([]string, 0, len(immutable))
	for p := range immutable {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if out, err := exec.Command("chattr", "-i", p).CombinedOutput(); err != nil && !errors.Is(statErr(p), fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("chattr -i %s: %w: %s", p, err, out))
		}
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			if info, ierr := d.Info(); ierr == nil {
				_ = os.Chmod(p, info.Mode().Perm()|0o700) // #nosec G302 G122 -- directories need search rights to be removed; the tree is the scenario's own
			}
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func statErr(p string) error {
	_, err := os.Lstat(p)
	return err
}

// placeholder is `<name>` or `<name:N>` (the first N characters): a remembered ID, or one of the
// built-in names workspace, outside, plans (the directory plan files are written to), data (the
// scenario's data directory, PLAN_DATA_DIR) and history (the directory the workspace keeps its
// history in: historyDir).
var placeholder = regexp.MustCompile(`<([A-Za-z][A-Za-z0-9_-]*)(?::([0-9]+))?>`)

// expand replaces placeholders in text.
func (s *scenario) expand(text string) (string, error) {
	var err error
	out := placeholder.ReplaceAllStringFunc(text, func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		name, n := sub[1], sub[2]
		var v string
		switch name {
		case "workspace":
			v = s.ws
		case "outside":
			v = s.outside
		case "plans":
			v = s.plans
		case "data":
			v = s.dataDir()
		case "history":
			var herr error
			if v, herr = s.historyDir(); herr != nil {
				err = errors.Join(err, herr)
				return m
			}
		case "store", "db":
			if v = s.store; name == "db" {
				v = s.db
			}
			if v == "" {
				err = errors.Join(err, fmt.Errorf("%s: the scenario has no shared %s", m, name))
				return m
			}
		default:
			id, ok := s.ids[name]
			if !ok {
				known := make([]string, 0, len(s.ids))
				for k := range s.ids {
					known = append(known, k)
				}
				sort.Strings(known)
				err = errors.Join(err, fmt.Errorf("no ID remembered as %q (known: %s)", name, strings.Join(known, ", ")))
				return m
			}
			v = id
		}
		if n != "" {
			var k int
			if _, serr := fmt.Sscan(n, &k); serr != nil || k > len(v) {
				err = errors.Join(err, fmt.Errorf("%s: %q has fewer than %s characters", m, v, n))
				return m
			}
			v = v[:k]
		}
		return v
	})
	return out, err
}

// unescape turns the escapes a one-line step argument may hold (\n, \t, \", \\) into characters.
func unescape(s string) string {
	return strings.NewReplacer(`\\`, `\`, `\n`, "\n", `\t`, "\t", `\"`, `"`).Replace(s)
}
