// Package artifact is the record of what one decision produced: the files it added, modified and
// deleted, with the size and SHA-256 of the content it left behind (of the content it removed, for
// deletions). The content itself stays in the object store under the attempt's result tree, so a
// correction can archive exactly what the decision produced even after later decisions changed it.
package artifact

import (
	"strings"

	"github.com/planhq/plan/domain/tree"
)

// Artifact is one path a decision changed.
type Artifact struct {
	Path   string
	Change tree.ChangeType
	Size   int64
	SHA256 string
}

// FromChanges derives the artifacts of a decision from the change between the tree before it and
// the tree after it. A path whose type changed is reported with the new entry (or as deleted when it
// became a directory). A directory is an artifact only when the decision created it empty (Size 0,
// no SHA256): any other is implied by the paths below it, and an empty one would be lost otherwise.
func FromChanges(changes []tree.Change) []Artifact {
	var out []Artifact
	for i, c := range changes {
		from := c.From != nil && c.From.Kind != tree.KindDir
		to := c.To != nil && c.To.Kind != tree.KindDir
		newDir := c.To != nil && c.To.Kind == tree.KindDir && (c.From == nil || c.From.Kind != tree.KindDir)
		// Changes come in tree order, so whatever is below a directory follows it directly.
		if newDir && (i+1 == len(changes) || !strings.HasPrefix(changes[i+1].Path, c.Path+"/")) {
			if from {
				out = append(out, Artifact{Path: c.Path, Change: tree.Deleted, Size: c.From.Size, SHA256: entryHash(c.From)})
			}
			out = append(out, Artifact{Path: c.Path, Change: tree.Added})
			continue
		}
		switch {
		case to:
			ch := c.Type
			if !from {
				ch = tree.Added
			}
			out = append(out, Artifact{Path: c.Path, Change: ch, Size: c.To.Size, SHA256: entryHash(c.To)})
		case from:
			out = append(out, Artifact{Path: c.Path, Change: tree.Deleted, Size: c.From.Size, SHA256: entryHash(c.From)})
		}
	}
	return out
}

// entryHash is the content hash of a file, or of a symlink's target text.
func entryHash(e *tree.Entry) string {
	if e.Kind == tree.KindSymlink {
		return tree.Sum([]byte(e.Target)).String()
	}
	return e.Hash.String()
}
