package tree

import (
	"slices"
	"strings"

	"github.com/planhq/plan/domain/fault"
)

// Under reports whether p is path or lies below it.
func Under(p, path string) bool {
	return p == path || strings.HasPrefix(p, path+"/")
}

// Graft returns base with what lies at and under each of paths replaced by what from holds there:
// the per-path restore. Entries of from under a path are taken (and those of base there dropped,
// so what from lacks is deleted); everything else is base's. A directory an added path needs that
// base lacks is taken from from. Both lists and the result are in Compare order.
//
// A path that neither side holds is fault.ErrNotFound; a path below something base holds as a file
// or symlink while from has content there is fault.ErrConflict (restoring it would delete the file,
// which is outside the paths given: restore the parent instead).
func Graft(base, from []Entry, paths []string) ([]Entry, error) {
	paths = slices.Clone(paths)
	slices.SortFunc(paths, Compare)
	paths = slices.Compact(paths)
	for _, p := range paths {
		if err := ValidatePath(p); err != nil {
			return nil, err
		}
	}
	under := func(p string) bool {
		for _, q := range paths {
			if Under(p, q) {
				return true
			}
		}
		return false
	}
	baseAt := make(map[string]Entry, len(base))
	for _, e := range base {
		baseAt[e.Path] = e
	}
	fromAt := make(map[string]Entry, len(from))
	for _, e := range from {
		fromAt[e.Path] = e
	}
	out := make([]Entry, 0, len(base))
	added := map[string]bool{}
	for _, p := range paths {
		inBase, inFrom := false, false
		for _, e := range from {
			if Under(e.Path, p) {
				inFrom = true
				break
			}
		}
		for _, e := range base {
			if Under(e.Path, p) {
				inBase = true
				break
			}
		}
		if !inBase && !inFrom {
			return nil, fault.NotFound("%s is neither in the checkpoint nor in the workspace", p)
		}
		if !inFrom {
			continue
		}
		// The directories above p must be directories on the result's side.
		parts := strings.Split(p, "/")
		for i := 1; i < len(parts); i++ {
			a := strings.Join(parts[:i], "/")
			if under(a) {
				continue
			}
			if b, ok := baseAt[a]; ok {
				if b.Kind != KindDir {
					return nil, fault.Conflict("%s is a %s in the workspace but a directory in the checkpoint: restore %s itself", a, b.Kind, a)
				}
				continue
			}
			if f, ok := fromAt[a]; ok && !added[a] {
				out = append(out, f)
				added[a] = true
			}
		}
	}
	for _, e := range base {
		if !under(e.Path) {
			out = append(out, e)
		}
	}
	for _, e := range from {
		if under(e.Path) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return Compare(a.Path, b.Path) })
	return out, nil
}
