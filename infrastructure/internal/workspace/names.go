package workspace

import (
	"bytes"
	"slices"
	"sync"
)

// nameList holds one directory's entry names in a single buffer, each followed by a NUL (so a
// name can be handed to a system call without a copy), and their order by name.
type nameList struct {
	buf   []byte
	names []nameRef
}

type nameRef struct{ off, n uint32 }

func (l *nameList) reset() {
	l.buf, l.names = l.buf[:0], l.names[:0]
}

// add appends a name (without NUL).
func (l *nameList) add(name []byte) {
	off := uint32(len(l.buf)) // #nosec G115 -- a directory listing is far below 4 GiB
	l.buf = append(l.buf, name...)
	l.buf = append(l.buf, 0)
	l.names = append(l.names, nameRef{off: off, n: uint32(len(name))}) // #nosec G115 -- a name is at most 255 bytes
}

func (l *nameList) len() int { return len(l.names) }

// name is the i-th name in sorted order; it aliases the list's buffer.
func (l *nameList) name(i int) []byte {
	r := l.names[i]
	return l.buf[r.off : r.off+r.n]
}

// namez is the i-th name with its terminating NUL.
func (l *nameList) namez(i int) []byte {
	r := l.names[i]
	return l.buf[r.off : r.off+r.n+1]
}

// sort orders the names bytewise, the order of tree entries.
func (l *nameList) sort() {
	slices.SortFunc(l.names, func(a, b nameRef) int {
		return bytes.Compare(l.buf[a.off:a.off+a.n], l.buf[b.off:b.off+b.n])
	})
}

var nameLists = sync.Pool{New: func() any { return new(nameList) }}

func getNameList() *nameList {
	l, ok := nameLists.Get().(*nameList)
	if !ok {
		l = new(nameList)
	}
	l.reset()
	return l
}

func putNameList(l *nameList) {
	if cap(l.buf) > 1<<20 { // one huge directory should not pin its buffer for the process's life
		return
	}
	nameLists.Put(l)
}

var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func getDirentBuf() *[]byte {
	bp, ok := direntBufs.Get().(*[]byte)
	if !ok {
		b := make([]byte, 32<<10)
		bp = &b
	}
	return bp
}
