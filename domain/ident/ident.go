// Package ident defines the identifiers plan generates for checkpoints, corrections and operations,
// and the rules for referring to them by prefix.
//
// Invariants: a generated ID is exactly Length lower-case hex characters; a reference given by a user
// is 4 to Length lower-case hex characters (MinPrefix); anything else is invalid input, so an ID can
// never smuggle a path separator or ".." into a file name built from it. A Pattern matches exactly
// what its regular expression ^[FIRST][REST]{0,N}$ would, without compiling one at start-up.
package ident

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"

	"github.com/planhq/plan/domain/fault"
)

// Length is the number of hex characters in a generated ID.
const Length = 24

// MinPrefix is the shortest prefix accepted as a reference.
const MinPrefix = 4

// New returns a fresh ID: 6 bytes of milliseconds since the epoch (so IDs sort by creation time)
// followed by 6 random bytes.
func New(now time.Time) string {
	var b [12]byte
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(now.UnixMilli())) // #nosec -- time after 1970
	copy(b[:6], ms[2:])
	// crypto/rand.Read never returns an error (since Go 1.24 a failure crashes the program).
	_, _ = rand.Read(b[6:])
	return hex.EncodeToString(b[:])
}

// ValidateRef checks a user-supplied full ID or prefix; what names the kind of object for messages.
func ValidateRef(what, s string) error {
	if len(s) < MinPrefix || len(s) > Length {
		return fault.Invalid("malformed %s ID %q: want %d to %d hex characters", what, s, MinPrefix, Length)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fault.Invalid("malformed %s ID %q: want lower-case hex characters", what, s)
		}
	}
	return nil
}

// ValidateFull checks a complete ID.
func ValidateFull(what, s string) error {
	if len(s) != Length {
		return fault.Invalid("malformed %s ID %q: want %d hex characters", what, s, Length)
	}
	return ValidateRef(what, s)
}
