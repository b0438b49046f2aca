package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/fsx"
)

// What a snapshot could not read (permission denied: a directory of another user closed to this
// one, a file nobody may read) is left out of its tree, like a path .planignore excludes, and named
// in a record of that tree: <state>/unreadable/<root tree>, a JSON list of workspace paths, written
// durably before the snapshot returns. A restore from or to a tree with a record leaves those paths
// alone (Restorer.untouched), so it never deletes or overwrites what no checkpoint could store,
// nor takes a file that became unreadable for one that was deleted.

// unreadableDir holds the records.
func (l Layout) unreadableDir() string { return filepath.Join(l.Home(), "unreadable") }

// saveUnreadable adds paths to the record of tree root, durably.
func saveUnreadable(l Layout, root tree.Hash, paths []string) error {
	have, err := loadUnreadable(l, root)
	if err != nil {
		return err
	}
	all := append(slices.Clone(have), paths...)
	slices.Sort(all)
	all = slices.Compact(all)
	if len(all) == len(have) {
		return nil // recorded already
	}
	b, _ := json.Marshal(all) // a list of strings always encodes
	if err := os.MkdirAll(l.unreadableDir(), 0o700); err != nil {
		return fmt.Errorf("record the unreadable paths: %w", err)
	}
	if err := fsx.Replace(filepath.Join(l.unreadableDir(), root.String()), b, true); err != nil {
		return fmt.Errorf("record the unreadable paths: %w", err)
	}
	return nil
}

// loadUnreadable is the union of the records of roots. A missing record is none; one that cannot
// be read or parsed is an error: a restore must not go on without it.
func loadUnreadable(l Layout, roots ...tree.Hash) ([]string, error) {
	var out []string
	for _, h := range roots {
		b, err := os.ReadFile(filepath.Join(l.unreadableDir(), h.String())) // #nosec G304 -- plan's own state, named by a hash
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var paths []string
		if err == nil {
			err = json.Unmarshal(b, &paths)
		}
		if err != nil {
			return nil, fmt.Errorf("read the paths tree %s could not record: %w", h, err)
		}
		out = append(out, paths...)
	}
	return out, nil
}

// under reports whether rel is one of paths or inside one.
func under(rel string, paths []string) bool {
	for _, p := range paths {
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}
