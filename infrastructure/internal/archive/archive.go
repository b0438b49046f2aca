// Package archive keeps what reverted decisions produced, physically, under
// .plan/archive/<correction_id>/: each artifact at <decision_id>/<path> exactly as the decision left
// it (content from the attempt's result tree in the object store), plus manifest.json.
//
// Invariants:
//   - an archive is built in .plan/archive/.staging-<id>/, verified against the stored hashes and
//     made durable before it is published by one rename, so a published archive is always complete;
//   - all writes go through an os.Root of the staging directory: an artifact path can never write
//     outside it, and symlinks are archived as symlinks, never followed;
//   - a staged archive that no pending operation refers to is garbage (CleanStaged).
package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/ident"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/fsx"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

const stagingPrefix = ".staging-"

// ManifestName is the manifest's file name inside an archive.
const ManifestName = "manifest.json"

// Archive is the Archiver.
type Archive struct {
	dir   string
	store *objectstore.Store
}

// New returns the archive of the workspace in l.
func New(l workspace.Layout, store *objectstore.Store) *Archive {
	return &Archive{dir: l.Archive(), store: store}
}

var _ port.Archiver = (*Archive)(nil)

// Manifest is manifest.json.
type Manifest struct {
	CorrectionID string             `json:"correction_id"`
	Decisions    []ManifestDecision `json:"decisions"`
}

// ManifestDecision lists one reverted attempt's artifacts.
type ManifestDecision struct {
	DecisionID string             `json:"decision_id"`
	Attempt    int                `json:"attempt"`
	Artifacts  []ManifestArtifact `json:"artifacts"`
}

// ManifestArtifact is one artifact; ArchivedPath is relative to the archive directory and absent
// for deletions.
type ManifestArtifact struct {
	Path         string `json:"path"`
	Change       string `json:"change"`
	Size         int64  `json:"size"`
	SHA256       string `json:"sha256"`
	ArchivedPath string `json:"archived_path,omitempty"`
	// Kind is "dir" for an empty directory the decision created; absent for files and symlinks.
	Kind string `json:"kind,omitempty"`
}

func (a *Archive) staging(id string) string { return filepath.Join(a.dir, stagingPrefix+id) }

// Dir is where correction id's archive is published.
func (a *Archive) Dir(id string) string { return filepath.Join(a.dir, id) }

// Stage writes the archive of items into the staging directory and syncs it.
func (a *Archive) Stage(ctx context.Context, id string, items []port.ArchiveItem) error {
	if err := ident.ValidateFull("correction", id); err != nil {
		return err
	}
	dir := a.staging(id)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	m := Manifest{CorrectionID: id, Decisions: []ManifestDecision{}}
	for _, it := range items {
		if err := tree.ValidatePath(it.DecisionID); err != nil {
			return err
		}
		md := ManifestDecision{DecisionID: it.DecisionID, Attempt: it.Attempt, Artifacts: []ManifestArtifact{}}
		lk := lookup{store: a.store, trees: map[tree.Hash]objectstore.Tree{}}
		for _, art := range it.Artifacts {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := tree.ValidatePath(art.Path); err != nil {
				return fault.Wrap(fault.ErrIntegrity, err, "artifact of %s", it.DecisionID)
			}
			ma := ManifestArtifact{Path: art.Path, Change: string(art.Change), Size: art.Size, SHA256: art.SHA256}
			if art.Change != tree.Deleted {
				e, err := lk.find(it.ResultTree, art.Path)
				if err != nil {
					return fmt.Errorf("archive %s of %s: %w", art.Path, it.DecisionID, err)
				}
				rel := it.DecisionID + "/" + art.Path
				if err := a.write(root, rel, e, art.SHA256); err != nil {
					return fmt.Errorf("archive %s of %s: %w", art.Path, it.DecisionID, err)
				}
				ma.ArchivedPath = rel
				if e.Kind == tree.KindDir {
					ma.Kind = "dir"
				}
			}
			md.Artifacts = append(md.Artifacts, ma)
		}
		m.Decisions = append(m.Decisions, md)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := root.WriteFile(ManifestName, append(b, '\n'), 0o640); err != nil {
		return err
	}
	return fsx.SyncTree(dir)
}

// write archives one entry; want is the artifact's recorded SHA-256, checked against what is written
// so the manifest can never describe content the archive does not hold.
func (a *Archive) write(root *os.Root, rel string, e objectstore.TreeEntry, want string) error {
	if err := root.MkdirAll(path.Dir(rel), 0o750); err != nil {
		return err
	}
	switch e.Kind {
	case tree.KindSymlink:
		if got := tree.Sum([]byte(e.Target)).String(); want != "" && got != want {
			return fault.Integrity("%s: the recorded artifact hash %s does not match the stored symlink (%s)", rel, want, got)
		}
		return root.Symlink(e.Target, rel)
	case tree.KindFile:
		if want != "" && e.Hash.String() != want {
			return fault.Integrity("%s: the recorded artifact hash %s does not match the stored content (%s)", rel, want, e.Hash)
		}
		rc, err := a.store.OpenBlob(e.Hash)
		if err != nil {
			return err
		}
		defer func() { _ = rc.Close() }()
		f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, rc)
		if err == nil {
			err = f.Chmod(tree.GoMode(e.Mode))
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	case tree.KindDir:
		// An empty directory the decision created: recorded without content.
		if want != "" {
			return fault.Integrity("%s is a directory in the result tree, not the recorded artifact %s", rel, want)
		}
		return root.Mkdir(rel, tree.GoMode(e.Mode)|0o700)
	}
	return fault.Integrity("%s has an unknown kind in the result tree", rel)
}

// lookup finds entries by path in stored trees, reading each tree once.
type lookup struct {
	store *objectstore.Store
	trees map[tree.Hash]objectstore.Tree
}

func (l *lookup) find(root tree.Hash, p string) (objectstore.TreeEntry, error) {
	h := root
	parts := strings.Split(p, "/")
	for i, name := range parts {
		t, ok := l.trees[h]
		if !ok {
			var err error
			if t, err = l.store.ReadTree(h); err != nil {
				return objectstore.TreeEntry{}, err
			}
			l.trees[h] = t
		}
		var found *objectstore.TreeEntry
		for j := range t {
			if t[j].Name == name {
				found = &t[j]
				break
			}
		}
		if found == nil {
			return objectstore.TreeEntry{}, fault.Integrity("%s is missing from the recorded result tree", p)
		}
		if i == len(parts)-1 {
			return *found, nil
		}
		if found.Kind != tree.KindDir {
			return objectstore.TreeEntry{}, fault.Integrity("%s: %s is not a directory in the result tree", p, strings.Join(parts[:i+1], "/"))
		}
		h = found.Hash
	}
	return objectstore.TreeEntry{}, fault.Integrity("empty artifact path")
}

// Publish moves the staged archive into place; publishing an already published archive is a no-op.
func (a *Archive) Publish(id string) (string, error) {
	if err := ident.ValidateFull("correction", id); err != nil {
		return "", err
	}
	final := a.Dir(id)
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	if err := os.Rename(a.staging(id), final); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fault.Integrity("the staged archive of correction %s is missing", id)
		}
		return "", err
	}
	d, err := os.Open(a.dir)
	if err != nil {
		return "", err
	}
	defer func() { _ = d.Close() }()
	return final, d.Sync()
}

// Unpublish moves a published archive back to staging, where CleanStaged or Discard removes it.
func (a *Archive) Unpublish(id string) error {
	if err := ident.ValidateFull("correction", id); err != nil {
		return err
	}
	if err := os.Rename(a.Dir(id), a.staging(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Discard removes a staged archive.
func (a *Archive) Discard(id string) error {
	if err := ident.ValidateFull("correction", id); err != nil {
		return err
	}
	return os.RemoveAll(a.staging(id))
}

// CleanStaged removes every staged archive.
func (a *Archive) CleanStaged() error {
	entries, err := os.ReadDir(a.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), stagingPrefix) {
			if err := os.RemoveAll(filepath.Join(a.dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// Remove deletes correction id's published archive and returns the bytes it held.
func (a *Archive) Remove(id string) (int64, error) {
	if err := ident.ValidateFull("correction", id); err != nil {
		return 0, err
	}
	n, err := dirBytes(a.Dir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if err := os.RemoveAll(a.Dir(id)); err != nil {
		return 0, err
	}
	return n, fsx.SyncDir(a.dir)
}

// Has reports whether the correction's archive is published.
func (a *Archive) Has(id string) (bool, error) {
	if err := ident.ValidateFull("correction", id); err != nil {
		return false, err
	}
	fi, err := os.Stat(a.Dir(id))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return fi.IsDir(), nil
}

// Usage is the bytes the published archives hold (staged ones are transient).
func (a *Archive) Usage() (int64, error) {
	entries, err := os.ReadDir(a.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var total int64
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), stagingPrefix) {
			continue
		}
		n, err := dirBytes(filepath.Join(a.dir, e.Name()))
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// dirBytes sums the sizes of the regular files under dir.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	return n, err
}
