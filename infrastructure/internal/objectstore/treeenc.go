package objectstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"strings"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
)

// TreeEntry is one name in a directory listing. Only the fields of the entry's kind are stored:
// Size and Hash for a file, Hash (the subtree) for a directory, Target for a symlink; the others
// must be zero, so that an encoding names exactly one value.
type TreeEntry struct {
	Name   string
	Kind   tree.Kind
	Mode   uint32
	Size   int64
	Hash   tree.Hash
	Target string
}

// Tree is one directory's listing, entries sorted strictly by Name (byte order).
type Tree []TreeEntry

const (
	treeMagic     = "PTREE1\n"
	maxTargetLen  = 4096
	minEntryBytes = 6 // kind, mode, name length, 1-byte name, target length, 1-byte target
)

// EncodeTree returns the canonical encoding of t. It refuses (fault.ErrInvalid) anything DecodeTree
// would refuse, so every encoding the store holds decodes again.
func EncodeTree(t Tree) ([]byte, error) {
	n := len(treeMagic) + binary.MaxVarintLen64
	for i := range t {
		n += 1 + 3 + 2 + len(t[i].Name) + binary.MaxVarintLen64 + len(t[i].Hash) + 2 + len(t[i].Target)
	}
	b := make([]byte, 0, n)
	b = append(b, treeMagic...)
	b = binary.AppendUvarint(b, uint64(len(t)))
	for i := range t {
		e := &t[i]
		if msg := checkEntry(e); msg != "" {
			return nil, fault.Invalid("tree entry %d (%q): %s", i, e.Name, msg)
		}
		if i > 0 && t[i-1].Name >= e.Name {
			return nil, fault.Invalid("tree entry %d (%q): names not strictly increasing", i, e.Name)
		}
		b = append(b, byte(e.Kind))
		b = binary.AppendUvarint(b, uint64(e.Mode))
		b = binary.AppendUvarint(b, uint64(len(e.Name)))
		b = append(b, e.Name...)
		switch e.Kind {
		case tree.KindFile:
			b = binary.AppendUvarint(b, u64(e.Size))
			b = append(b, e.Hash[:]...)
		case tree.KindDir:
			b = append(b, e.Hash[:]...)
		case tree.KindSymlink:
			b = binary.AppendUvarint(b, uint64(len(e.Target)))
			b = append(b, e.Target...)
		}
	}
	return b, nil
}

// checkEntry holds the rules shared by encode and decode; its message is wrapped by the caller,
// which knows whether bad input or stored damage is to blame.
func checkEntry(e *TreeEntry) string {
	if err := tree.ValidateName(e.Name); err != nil {
		return err.Error()
	}
	if e.Mode > tree.ModeMask {
		return "mode out of range"
	}
	switch e.Kind {
	case tree.KindFile:
		if e.Size < 0 {
			return "negative size"
		}
		if e.Target != "" {
			return "file with a symlink target"
		}
	case tree.KindDir:
		if e.Size != 0 || e.Target != "" {
			return "directory with a size or target"
		}
	case tree.KindSymlink:
		if e.Size != 0 || !e.Hash.IsZero() {
			return "symlink with a size or hash"
		}
		if len(e.Target) == 0 || len(e.Target) > maxTargetLen || strings.IndexByte(e.Target, 0) >= 0 {
			return "symlink target empty, longer than 4096 bytes or containing NUL"
		}
	default:
		return "unknown kind"
	}
	return ""
}

// HashTree encodes t and returns the hash that names it together with the encoding.
func HashTree(t Tree) (tree.Hash, []byte, error) {
	b, err := EncodeTree(t)
	if err != nil {
		return tree.Hash{}, nil, err
	}
	return sha256.Sum256(b), b, nil
}

// treeDecoder reads the encoding; it records the first problem and turns every later read into a
// no-op, which keeps DecodeTree a straight line.
type treeDecoder struct {
	b   []byte
	err string
}

func (d *treeDecoder) fail(msg string) {
	if d.err == "" {
		d.err = msg
	}
	d.b = nil
}

// uvarint accepts only the minimal encoding: a padded varint would decode to the same tree under a
// different hash, breaking Encode(Decode(b)) == b.
func (d *treeDecoder) uvarint(what string) uint64 {
	if d.err != "" {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("truncated or overlong " + what)
		return 0
	}
	if n > 1 && d.b[n-1] == 0 {
		d.fail("non-minimal " + what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *treeDecoder) bytes(n uint64, what string) []byte {
	if d.err != "" {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what + " runs past the end")
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// DecodeTree parses and validates an encoding. Every error is fault.ErrIntegrity: encodings come from
// the store, so a bad one is damage.
func DecodeTree(b []byte) (Tree, error) {
	if !bytes.HasPrefix(b, []byte(treeMagic)) {
		return nil, fault.Integrity("tree: bad magic")
	}
	d := treeDecoder{b: b[len(treeMagic):]}
	count := d.uvarint("entry count")
	if d.err == "" && count > uint64(len(d.b)/minEntryBytes) {
		d.fail("entry count larger than the data")
	}
	if d.err != "" {
		return nil, fault.Integrity("tree: %s", d.err)
	}
	t := make(Tree, 0, count)
	for i := uint64(0); i < count; i++ {
		var e TreeEntry
		if len(d.b) == 0 {
			d.fail("truncated")
			break
		}
		e.Kind = tree.Kind(d.b[0])
		d.b = d.b[1:]
		if mode := d.uvarint("mode"); mode <= tree.ModeMask {
			e.Mode = uint32(mode)
		} else {
			d.fail("mode out of range")
		}
		e.Name = string(d.bytes(d.uvarint("name length"), "name"))
		switch e.Kind {
		case tree.KindFile:
			var ok bool
			if e.Size, ok = i64(d.uvarint("size")); !ok {
				d.fail("size out of range")
			}
			copy(e.Hash[:], d.bytes(uint64(len(e.Hash)), "hash"))
		case tree.KindDir:
			copy(e.Hash[:], d.bytes(uint64(len(e.Hash)), "hash"))
		case tree.KindSymlink:
			n := d.uvarint("target length")
			if n > maxTargetLen {
				d.fail("symlink target too long")
			}
			e.Target = string(d.bytes(n, "target"))
		default:
			d.fail("unknown kind")
		}
		if d.err != "" {
			return nil, fault.Integrity("tree entry %d: %s", i, d.err)
		}
		if msg := checkEntry(&e); msg != "" {
			return nil, fault.Integrity("tree entry %d (%q): %s", i, e.Name, msg)
		}
		if len(t) > 0 && t[len(t)-1].Name >= e.Name {
			return nil, fault.Integrity("tree entry %d (%q): names not strictly increasing", i, e.Name)
		}
		t = append(t, e)
	}
	if d.err != "" {
		return nil, fault.Integrity("tree: %s", d.err)
	}
	if len(d.b) != 0 {
		return nil, fault.Integrity("tree: %d trailing bytes", len(d.b))
	}
	return t, nil
}
