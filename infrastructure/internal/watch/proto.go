package watch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/planhq/plan/application/port"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// SocketName is the service's socket in .plan/.
const SocketName = "watch.sock"

// maxSocketPath is the longest path a Unix socket address holds (sun_path is 108 bytes on Linux,
// 104 on the BSDs, NUL included).
const maxSocketPath = 103

// SocketPath is where the service of the workspace laid out by l listens: .plan/watch.sock, or,
// when that path is too long for a socket address, plan-UID/watch-HASH.sock under the temporary
// directory (HASH names the .plan directory).
func SocketPath(l workspace.Layout) string {
	p := filepath.Join(l.State(), SocketName)
	if len(p) <= maxSocketPath {
		return p
	}
	sum := sha256.Sum256([]byte(l.State()))
	return filepath.Join(runtimeDir(), "watch-"+hex.EncodeToString(sum[:12])+".sock")
}

// runtimeDir is the per-user directory that holds the sockets whose .plan path is too long.
func runtimeDir() string {
	return filepath.Join(os.TempDir(), "plan-"+strconv.Itoa(os.Getuid()))
}

// Requests a client sends (one JSON line).
const (
	opSnapshot = "snapshot"
	opStatus   = "status"
	opStop     = "stop"
	opPlaced   = "placed"
)

type request struct {
	Op string `json:"op"`
	// Workspace is the root the client means: a service of another workspace refuses.
	Workspace string      `json:"workspace"`
	Also      []tree.Hash `json:"also,omitempty"`
	// Placed are the files a restore put in place (opPlaced): see workspace.Scanner.Vouch. Trash
	// is the directory (of the workspace's Layout.Trash) holding what it replaced, to remove.
	Placed []workspace.Placed `json:"placed,omitempty"`
	Trash  string             `json:"trash,omitempty"`
}

// reply is one JSON line of an answer: keep-alives (Wait) until the result or an error.
type reply struct {
	Wait      bool           `json:"wait,omitempty"`
	Workspace string         `json:"workspace,omitempty"`
	Error     string         `json:"error,omitempty"`
	Snapshot  *port.Snapshot `json:"snapshot,omitempty"`
	Status    *Status        `json:"status,omitempty"`
	// Vouched is how many of the placed files the service took the restore's word for; Trash
	// that it removes the request's trash directory (after this answer).
	Vouched int  `json:"vouched,omitempty"`
	Trash   bool `json:"trash,omitempty"`
}

// Status is what `plan watch status` shows of a running service.
type Status struct {
	Running   bool      `json:"running"`
	PID       int       `json:"pid,omitempty"`
	Workspace string    `json:"workspace"`
	Socket    string    `json:"socket"`
	StartedAt time.Time `json:"started_at,omitzero"`
	// Events is "on" while snapshots follow inotify's events, else why they walk.
	Events string `json:"events,omitempty"`
	// Snapshots counts the snapshots the service took; Walks those that walked the whole workspace.
	Snapshots int    `json:"snapshots"`
	Walks     int    `json:"walks"`
	Every     string `json:"every,omitempty"`
	Quiet     string `json:"quiet,omitempty"`
	// StopAfter is the service's --stop-after: it stops once nothing asked and nothing changed
	// for that long.
	StopAfter string `json:"stop_after,omitempty"`
	// Checkpoints counts the periodic and idle checkpoints taken, Skipped those skipped because
	// nothing had changed; LastError is the last one's failure, if any.
	Checkpoints int `json:"checkpoints"`
	Skipped     int `json:"skipped"`
	// Merged counts the small packs the service merged between commands (Options.Merge).
	Merged    int    `json:"merged"`
	LastError string `json:"last_error,omitempty"`
}

// errorf is an error a service answers with.
func errorf(format string, args ...any) reply { return reply{Error: fmt.Sprintf(format, args...)} }
