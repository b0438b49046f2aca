package workspace

import (
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/planhq/plan/domain/tree"
)

// Placed is a regular file a restore put in place, under the workspace lock: its path and the
// inode it renamed there (a file it created itself, in staging, with no other name).
type Placed struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
}

// Vouch tells the tracker (while one follows the workspace: Track) that a restore put files in
// place, and returns how many of them it took its word for. Each arrived by a rename from
// .plan/staging, which is not watched: to the tracker, a file moved in from nowhere it sees, which
// may be a hard link to a file of the tree, so that changing and removing it before the next
// snapshot would make that snapshot stat every file (see dirtySet.gone). A file the restore made
// is no such link: once the events queued so far are read, a name whose events since the last
// snapshot are only its arrival, and that still holds the restore's inode with no other name,
// counts as an ordinary entry whose listing changed (read again at the next snapshot as any
// other). Any event after that (a new name made there, a write) counts as always.
func (s *Scanner) Vouch(files []Placed) int {
	tr := s.tracking()
	if tr == nil || len(files) == 0 {
		return 0
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.w == nil || tr.root == nil {
		return 0 // no tree to update: the next snapshot walks anyway
	}
	return tr.w.vouch(s.layout.Root, files)
}

// vouchable reports whether the file at rel under root is the one a restore placed (p): a regular
// file with that inode and no other name.
func vouchable(root string, p Placed) bool {
	if tree.ValidatePath(p.Path) != nil || reserved(p.Path) {
		return false
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(root, filepath.FromSlash(p.Path)), &st); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFREG && uint64(st.Nlink) == 1 && st.Ino == p.Ino && uint64(st.Dev) == p.Dev //nolint:unconvert // widths differ between architectures
}

// vouch drops the doubt an arrival from an unwatched directory put on name in directory rel,
// when that arrival is all the events said of it since the last take.
func (d *dirtySet) vouch(rel, name string) bool {
	dd := d.dirs[rel]
	if d.uncertain != "" || dd == nil || dd.names[name] != evEntry|evCreated {
		return false
	}
	dd.names[name] = evEntry
	return true
}

// splitRel splits a workspace path into its directory ("" at the top) and name.
func splitRel(rel string) (dir, name string) {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i], rel[i+1:]
	}
	return "", rel
}
