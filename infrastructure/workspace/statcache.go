package workspace

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/fsx"
)

// statKey is what the stat cache compares to decide a file is unchanged.
type statKey struct {
	Size  int64
	Mtime int64 // ns
	Ctime int64 // ns
	Ino   uint64
	Dev   uint64
	Mode  uint32 // st_mode, type bits included
}

type statEntry struct {
	Key  statKey
	Hash tree.Hash
	// Racy marks an entry recorded within the timestamp granularity of its file's mtime/ctime: a
	// later write in the same tick would leave the key unchanged, so it is re-hashed next time.
	Racy bool
}

// statCache maps workspace-relative paths to the content hash last seen for a stat key.
type statCache map[string]statEntry

// keyOfStat is the stat key of what fstatat returned (fields per platform: stat_*.go).
func keyOfStat(st *unix.Stat_t) statKey { return unixStatKey(st) }

// keyOf is the stat key of what os.File.Stat returned.
func keyOf(fi fs.FileInfo) (statKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return statKey{}, false
	}
	k := syscallStatKey(st)
	k.Size = fi.Size()
	return k, true
}

// racy reports whether an entry with key k, observed no earlier than at, could miss a write that
// keeps size and timestamps: that happens while mtime or ctime lie within one timestamp tick of at.
// File systems with whole-second timestamps get a two-second margin.
func racy(k statKey, at time.Time) bool {
	margin := int64(20 * time.Millisecond)
	if k.Mtime%int64(time.Second) == 0 && k.Ctime%int64(time.Second) == 0 {
		margin = int64(2 * time.Second)
	}
	newest := max(k.Mtime, k.Ctime)
	return newest+margin > at.UnixNano()
}

const statCacheMagic = "PLANSC1\n"

func loadStatCache(path string) statCache {
	b, err := os.ReadFile(path) // #nosec -- plan's own state file
	if err != nil {
		return statCache{}
	}
	c, err := decodeStatCache(b)
	if err != nil {
		// A damaged cache only costs re-hashing; never trust part of one.
		return statCache{}
	}
	return c
}

func decodeStatCache(b []byte) (statCache, error) {
	if len(b) < len(statCacheMagic)+sha256.Size || string(b[:len(statCacheMagic)]) != statCacheMagic {
		return nil, errors.New("bad stat cache header")
	}
	body, sum := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	if s := sha256.Sum256(body); !bytes.Equal(s[:], sum) {
		return nil, errors.New("stat cache checksum mismatch")
	}
	r := body[len(statCacheMagic):]
	n, k := binary.Uvarint(r)
	if k <= 0 || n > uint64(len(r)) {
		return nil, errors.New("bad stat cache count")
	}
	r = r[k:]
	c := make(statCache, n)
	const fixed = 8*5 + 4 + sha256.Size + 1
	for range n {
		l, k := binary.Uvarint(r)
		if k <= 0 || l > uint64(len(r)-k) { // #nosec -- len(r)-k >= 0: k <= len(r) when k > 0
			return nil, errors.New("bad stat cache path")
		}
		p := string(r[k : k+int(l)]) // #nosec -- bounded by len(r) above
		r = r[k+int(l):]             // #nosec -- bounded by len(r) above
		if len(r) < fixed {
			return nil, errors.New("short stat cache entry")
		}
		var e statEntry
		e.Key.Size = int64(binary.LittleEndian.Uint64(r[0:]))   // #nosec -- round-trips the encoder
		e.Key.Mtime = int64(binary.LittleEndian.Uint64(r[8:]))  // #nosec -- round-trips the encoder
		e.Key.Ctime = int64(binary.LittleEndian.Uint64(r[16:])) // #nosec -- round-trips the encoder
		e.Key.Ino = binary.LittleEndian.Uint64(r[24:])
		e.Key.Dev = binary.LittleEndian.Uint64(r[32:])
		e.Key.Mode = binary.LittleEndian.Uint32(r[40:])
		copy(e.Hash[:], r[44:44+sha256.Size])
		e.Racy = r[44+sha256.Size] != 0
		r = r[fixed:]
		c[p] = e
	}
	if len(r) != 0 {
		return nil, errors.New("trailing bytes in stat cache")
	}
	return c, nil
}

func encodeStatCache(c statCache) []byte {
	b := make([]byte, 0, len(statCacheMagic)+len(c)*(100)+sha256.Size)
	b = append(b, statCacheMagic...)
	b = binary.AppendUvarint(b, uint64(len(c)))
	for p, e := range c {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Key.Size))  // #nosec -- bit pattern round-trips
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Key.Mtime)) // #nosec -- bit pattern round-trips
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Key.Ctime)) // #nosec -- bit pattern round-trips
		b = binary.LittleEndian.AppendUint64(b, e.Key.Ino)
		b = binary.LittleEndian.AppendUint64(b, e.Key.Dev)
		b = binary.LittleEndian.AppendUint32(b, e.Key.Mode)
		b = append(b, e.Hash[:]...)
		if e.Racy {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	s := sha256.Sum256(b)
	return append(b, s[:]...)
}

// saveStatCache replaces the cache atomically but without fsync: the cache is a hint, checksummed
// as a whole, so a torn or lost write after a power failure only costs re-hashing, and skipping the
// sync keeps it off every checkpoint's critical path.
func saveStatCache(path string, c statCache) error {
	return fsx.Replace(path, encodeStatCache(c), false)
}
