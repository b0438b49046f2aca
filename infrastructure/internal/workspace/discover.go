package workspace

import (
	"os"
	"path/filepath"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/fsx"
)

// Discover finds the workspace a command started in dir works on, as git finds .git: dir itself
// when it holds a .plan directory, else the nearest directory above it that does. found is false
// when there is none (root is then dir, resolved), and commands report "not a plan workspace" as
// before.
//
// Rules, each for a reason:
//   - the search stops below any directory named in ceilings (PLAN_CEILING_DIRECTORIES, as git's
//     GIT_CEILING_DIRECTORIES), so a test or a build sandbox can fence itself in;
//   - a .plan at the file system root or in the home directory is never discovered from below
//     (init refuses to make one there without --force-root; a stray one must not capture every
//     command run anywhere under it);
//   - a workspace whose .plan belongs to another user, or that users other than its owner may
//     write in, is refused (fault.ErrConflict), not used, wherever it is found: in dir itself
//     (the current directory or -C DIR) as above it. A .plan planted in a shared directory (/tmp, a
//     world-writable directory of a workspace) must neither receive the user's checkpoints nor make
//     them run its commands (its validate.command, the decisions in its database): git's
//     "dubious ownership" rule, which also holds for the directory git is started in. No setting
//     accepts one: the user runs plan as its owner or, for a .plan of theirs, closes it (chmod
//     go-w; see fsx.Distrust).
func Discover(dir string, ceilings []string) (root string, found bool, err error) {
	start, err := filepath.Abs(dir)
	if err != nil {
		return "", false, err
	}
	if resolved, err := filepath.EvalSymlinks(start); err == nil {
		start = resolved
	}
	stop := map[string]bool{}
	for _, c := range ceilings {
		if c == "" || !filepath.IsAbs(c) {
			continue
		}
		if r, err := filepath.EvalSymlinks(c); err == nil {
			c = r
		}
		stop[filepath.Clean(c)] = true
	}
	for d := start; ; {
		if d != start && stop[d] {
			return start, false, nil
		}
		fi, err := os.Lstat(filepath.Join(d, StateDir))
		switch {
		case err == nil && d == start:
			if fi.IsDir() {
				if err := refuseUntrusted(filepath.Join(d, StateDir), fi); err != nil {
					return "", false, err
				}
			}
			return d, true, nil // even a .plan that is not a directory: opening it says what is wrong
		case err == nil && fi.IsDir():
			if (Layout{Root: d}).Dangerous() != "" {
				return start, false, nil
			}
			if why, remedy := fsx.Distrust(fi); why != "" {
				return "", false, fault.Conflict("%s is inside the workspace %s, whose .plan %s: plan will not use it, "+
					"nor run a command it names; %s", start, d, why, remedy)
			}
			return d, true, nil
		}
		// Anything else (no .plan, one that is not a directory, a directory we may not look in):
		// not a workspace we can use; look further up.
		parent := filepath.Dir(d)
		if parent == d {
			return start, false, nil
		}
		d = parent
	}
}
