package tree

// ChangeType says how a path differs between two trees.
type ChangeType string

// The change types, as the contract spells them.
const (
	Added       ChangeType = "added"
	Modified    ChangeType = "modified"
	Deleted     ChangeType = "deleted"
	TypeChanged ChangeType = "type_changed"
)

// Letter returns the one-letter code of the text diff format (A, M, D, T).
func (c ChangeType) Letter() string {
	switch c {
	case Added:
		return "A"
	case Modified:
		return "M"
	case Deleted:
		return "D"
	}
	return "T"
}

// Change is one path that differs. From is the entry in the old tree (nil when added), To the entry
// in the new tree (nil when deleted).
type Change struct {
	Path string
	Type ChangeType
	From *Entry
	To   *Entry
}

// Size is the size of the new content, or of the old for a deletion.
func (c Change) Size() int64 {
	if c.To != nil {
		return c.To.Size
	}
	return c.From.Size
}

// Diff returns the changes that turn from into to. Both lists MUST be ordered by Compare and free of
// duplicates; the result is in the same order. Directories are reported like files, so an empty
// directory that appears or disappears is a change too.
func Diff(from, to []Entry) []Change {
	var out []Change
	i, j := 0, 0
	for i < len(from) || j < len(to) {
		var c int
		switch {
		case i == len(from):
			c = 1
		case j == len(to):
			c = -1
		default:
			c = Compare(from[i].Path, to[j].Path)
		}
		switch {
		case c < 0:
			out = append(out, Change{Path: from[i].Path, Type: Deleted, From: &from[i]})
			i++
		case c > 0:
			out = append(out, Change{Path: to[j].Path, Type: Added, To: &to[j]})
			j++
		default:
			f, t := &from[i], &to[j]
			switch {
			case f.Kind != t.Kind:
				out = append(out, Change{Path: t.Path, Type: TypeChanged, From: f, To: t})
			case !f.Same(*t):
				out = append(out, Change{Path: t.Path, Type: Modified, From: f, To: t})
			}
			i++
			j++
		}
	}
	return out
}
