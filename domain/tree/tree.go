// Package tree holds the value objects that describe a workspace tree as plan sees it: content hashes,
// entries (file, symlink, directory) with their modes, and the changes between two trees.
//
// Invariants:
//   - an entry path is relative, slash-separated, clean, non-empty, and never contains "..", "." or an
//     empty component, a NUL byte, or a leading "/" (ValidatePath); paths that break this are refused
//     as integrity damage when they come from the store and as invalid input when they come from a user;
//   - entry lists are ordered by Compare (component by component, byte order within a component), which
//     is the depth-first order of a Merkle tree with sorted names, so two lists diff in one pass.
package tree

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"

	"github.com/planhq/plan/domain/fault"
)

// Hash is a SHA-256 content hash.
type Hash [sha256.Size]byte

// ZeroHash is the hash value that names nothing.
var ZeroHash Hash

// String returns the lower-case hex form.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// IsZero reports whether h is the zero value.
func (h Hash) IsZero() bool { return h == ZeroHash }

// MarshalText writes the hex form; the zero hash, which names nothing, is written as "".
func (h Hash) MarshalText() ([]byte, error) {
	if h.IsZero() {
		return []byte{}, nil
	}
	return []byte(h.String()), nil
}

// UnmarshalText reads what MarshalText writes. A malformed hash is a fault.ErrInvalid error; where
// the text comes from the store or the journal, the reader classifies it as damage.
func (h *Hash) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*h = ZeroHash
		return nil
	}
	v, err := ParseHash(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}

// ParseHash parses a 64-character lower-case hex hash.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*len(h) {
		return h, fault.Invalid("hash %q: want %d hex characters", s, 2*len(h))
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil || strings.ToLower(s) != s {
		return h, fault.Invalid("hash %q: not lower-case hex", s)
	}
	return h, nil
}

// Sum returns the SHA-256 of data.
func Sum(data []byte) Hash { return sha256.Sum256(data) }

// Kind is the type of an entry.
type Kind uint8

// The entry kinds. The numeric values are part of the stored tree format; never renumber.
const (
	KindFile    Kind = 1
	KindSymlink Kind = 2
	KindDir     Kind = 3
)

func (k Kind) String() string {
	switch k {
	case KindFile:
		return "file"
	case KindSymlink:
		return "symlink"
	case KindDir:
		return "dir"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Valid reports whether k is one of the defined kinds.
func (k Kind) Valid() bool { return k == KindFile || k == KindSymlink || k == KindDir }

// ModeMask is the part of a file mode plan records and restores: permission bits plus setuid,
// setgid and sticky, in Unix numeric form (0o7777).
const ModeMask = 0o7777

// UnixMode converts a Go file mode's permission and special bits to the Unix numeric form.
func UnixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}

// GoMode converts a Unix numeric mode (0o7777 bits) to Go's fs.FileMode bits.
func GoMode(u uint32) fs.FileMode {
	m := fs.FileMode(u & 0o777)
	if u&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if u&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if u&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// Entry is one path of a tree. Size and Hash describe a file's content; Target is a symlink's target.
// Mode holds Unix permission bits (ModeMask); it is 0o777 for symlinks.
type Entry struct {
	Path   string
	Kind   Kind
	Mode   uint32
	Size   int64
	Hash   Hash
	Target string
}

// Same reports whether e and o describe the same thing at the same path: same kind, mode and content
// (files), target (symlinks) or mode (directories).
func (e Entry) Same(o Entry) bool {
	if e.Path != o.Path || e.Kind != o.Kind {
		return false
	}
	switch e.Kind {
	case KindFile:
		return e.Mode == o.Mode && e.Hash == o.Hash && e.Size == o.Size
	case KindSymlink:
		return e.Target == o.Target
	default:
		return e.Mode == o.Mode
	}
}

// MaxPathLen is the longest workspace-relative path plan stores: PATH_MAX, so that every path it
// records can be written back.
const MaxPathLen = 4096

// ValidatePath checks that p is a workspace-relative path plan may store or write (see the package
// invariants). It returns an ErrInvalid error naming the problem.
func ValidatePath(p string) error {
	if p == "" {
		return fault.Invalid("empty path")
	}
	if len(p) > MaxPathLen {
		return fault.Invalid("path too long (%d bytes)", len(p))
	}
	if strings.IndexByte(p, 0) >= 0 {
		return fault.Invalid("path %q contains a NUL byte", p)
	}
	if p[0] == '/' {
		return fault.Invalid("path %q is absolute", p)
	}
	for _, c := range strings.Split(p, "/") {
		if err := ValidateName(c); err != nil {
			return fault.Invalid("path %q: %s", p, err.Error())
		}
	}
	return nil
}

// ValidateName checks one path component: non-empty, not "." or "..", no "/" or NUL.
func ValidateName(n string) error {
	switch {
	case n == "":
		return fault.Invalid("empty path component")
	case n == "." || n == "..":
		return fault.Invalid("path component %q is not allowed", n)
	case len(n) > 255:
		return fault.Invalid("path component too long (%d bytes)", len(n))
	case strings.IndexByte(n, '/') >= 0 || strings.IndexByte(n, 0) >= 0:
		return fault.Invalid("path component %q contains '/' or NUL", n)
	}
	return nil
}

// Compare orders paths component by component, so that "a" < "a/b" < "a-b". It is the order entry
// lists are kept in.
func Compare(a, b string) int {
	for {
		ai := strings.IndexByte(a, '/')
		bi := strings.IndexByte(b, '/')
		ac, bc := a, b
		if ai >= 0 {
			ac = a[:ai]
		}
		if bi >= 0 {
			bc = b[:bi]
		}
		if c := strings.Compare(ac, bc); c != 0 {
			return c
		}
		switch {
		case ai < 0 && bi < 0:
			return 0
		case ai < 0:
			return -1
		case bi < 0:
			return 1
		}
		a, b = a[ai+1:], b[bi+1:]
	}
}
