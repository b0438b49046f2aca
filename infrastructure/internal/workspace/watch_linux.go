package workspace

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The inotify watcher watches every directory of the workspace (inotify has no recursive watch;
// one watch per directory is what git's fsmonitor and watchman do too). A goroutine reads events
// as they come, through the runtime's poller, so the kernel's queue (fs.inotify.max_queued_events)
// only overflows under a storm faster than the reading; when it does, the next snapshot walks.
//
// Events are queued by the system call that caused them, before it returns; a decision's
// processes have exited by the time the snapshot after it drains the queue, so that snapshot sees
// everything they did. Reading and the handling of what was read happen under one mutex, which
// take also holds while it drains what is left: no event queued before take can be missed or
// attributed to the wrong set.

const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_MODIFY |
	unix.IN_CLOSE_WRITE | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR |
	unix.IN_EXCL_UNLINK

// localFS are the file systems whose inotify events report every change: local ones, where every
// write goes through this kernel. Network and FUSE file systems report only what this machine
// did, or nothing: they are walked.
var localFS = map[int64]string{
	0xEF53:     "ext4",
	0x58465342: "xfs",
	0x9123683E: "btrfs",
	0x01021994: "tmpfs",
	0xF2F52010: "f2fs",
	0x2FC12FC1: "zfs",
	0xCA451A4E: "bcachefs",
	0x794C7630: "overlayfs",
}

type inotify struct {
	file *os.File
	fd   int

	mu     sync.Mutex // guards everything below, and every read of fd
	closed bool
	wds    map[int32]string // watch → the directory it stands for
	stale  map[int32]bool   // watches given up, whose queued events are ignored until IN_IGNORED
	dirty  dirtySet
	fsOK   map[uint64]bool
	never  string // why watching cannot work here at all
	buf    []byte
	last   time.Time     // when the last event was read
	done   chan struct{} // closed when the reader has returned
	stop   chan struct{} // closed by close
}

// startWatcher starts an inotify instance for the workspace at root, or says why it cannot.
func startWatcher(root string) (watcher, error) { return startInotify(root, nil) }

// startInotify is startWatcher whose reader starts once gate is closed (nil: at once); take drains
// the queue itself whatever the reader does.
func startInotify(root string, gate <-chan struct{}) (*inotify, error) {
	var sfs unix.Statfs_t
	if err := unix.Statfs(root, &sfs); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", root, err)
	}
	if _, ok := localFS[int64(sfs.Type)]; !ok { //nolint:unconvert // Type's width differs between architectures
		return nil, fmt.Errorf("the workspace's file system (type %#x) is not one whose events report every change", sfs.Type)
	}
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return nil, fmt.Errorf("watching needs /proc: %w", err)
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	w := &inotify{
		file: os.NewFile(uintptr(fd), "inotify"), fd: fd, wds: map[int32]string{}, stale: map[int32]bool{},
		fsOK: map[uint64]bool{}, buf: make([]byte, 64<<10), done: make(chan struct{}), stop: make(chan struct{}),
	}
	rc, err := w.file.SyscallConn()
	if err != nil {
		_ = w.file.Close()
		return nil, fmt.Errorf("inotify: %w", err)
	}
	go func() {
		defer close(w.done)
		if gate != nil {
			select {
			case <-gate:
			case <-w.stop:
				return
			}
		}
		// Read returns once the file is closed; until then it calls back whenever events wait.
		_ = rc.Read(func(uintptr) bool {
			w.mu.Lock()
			w.drain()
			w.mu.Unlock()
			return false
		})
	}()
	return w, nil
}

func (w *inotify) watch(rel string, fd int, dev uint64) int32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.dirty.uncertain != "" {
		return 0
	}
	ok, seen := w.fsOK[dev]
	if !seen {
		var sfs unix.Statfs_t
		if unix.Fstatfs(fd, &sfs) == nil {
			_, ok = localFS[int64(sfs.Type)] //nolint:unconvert // Type's width differs between architectures
		}
		w.fsOK[dev] = ok
	}
	if !ok {
		w.never = fmt.Sprintf("%s is on a file system whose events do not report every change", displayRel(rel))
		w.dirty.lose(w.never)
		return 0
	}
	// Through the descriptor, not the path: the watch is on the directory the walk opened, wherever
	// a rename has moved it since.
	wd, err := unix.InotifyAddWatch(w.fd, "/proc/self/fd/"+strconv.Itoa(fd), watchMask)
	if err != nil {
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.ENOMEM) {
			w.never = "the inotify watch limit is reached (sysctl fs.inotify.max_user_watches)"
		}
		w.dirty.lose(fmt.Sprintf("could not watch %s: %v", displayRel(rel), err))
		return 0
	}
	wd32 := int32(wd) // #nosec G115 -- watch descriptors are small positive ints
	if old, ok := w.wds[wd32]; ok && old != rel {
		// The directory already stands under another name of the tree (a bind mount inside the
		// workspace, or a rename the walk saw both sides of): one watch cannot tell the two apart.
		w.dirty.lose(fmt.Sprintf("%s and %s are one directory", displayRel(old), displayRel(rel)))
		return 0
	}
	w.wds[wd32] = rel
	delete(w.stale, wd32)
	return wd32
}

func (w *inotify) forget(rel string, wd int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.wds[wd] != rel {
		return // the watch stands for another path now (its directory was walked there)
	}
	delete(w.wds, wd)
	w.stale[wd] = true
	_, _ = unix.InotifyRmWatch(w.fd, uint32(wd)) // #nosec G115 -- positive
}

func (w *inotify) take() dirtySet {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return dirtySet{uncertain: "the watcher is closed"}
	}
	w.drain()
	w.dirty.settle()
	d := w.dirty
	w.dirty = dirtySet{}
	if d.uncertain != "" {
		w.dirty.uncertain = d.uncertain // stays uncertain until a walk starts a new watcher
	}
	return d
}

// lastChange is when the last event was read (events queued until now included); zero if none.
func (w *inotify) lastChange() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.drain()
	}
	return w.last
}

func (w *inotify) vouch(root string, files []Placed) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || w.dirty.uncertain != "" {
		return 0
	}
	w.drain() // the restore's renames are queued: they must be in the set before it is vouched for
	n := 0
	for _, f := range files {
		// Stat'ed after the drain: a name replaced since holds another inode (or has two names),
		// and whatever replaced it after the drain is an event the next drain adds.
		if !vouchable(root, f) {
			continue
		}
		if rel, name := splitRel(f.Path); w.dirty.vouch(rel, name) {
			n++
		}
	}
	return n
}

func (w *inotify) permanent() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.never
}

func (w *inotify) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	_ = w.file.Close()
	<-w.done
}

// drain reads every queued event; the caller holds mu.
func (w *inotify) drain() {
	for !w.closed {
		n, err := unix.Read(w.fd, w.buf)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return
		case err != nil:
			w.dirty.lose("reading events failed: " + err.Error())
			return
		case n <= 0:
			return
		}
		for b := w.buf[:n]; len(b) >= unix.SizeofInotifyEvent; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0])) // #nosec G103 -- the kernel's record layout
			end := unix.SizeofInotifyEvent + int(ev.Len)
			if end > len(b) {
				w.dirty.lose("a truncated event")
				return
			}
			name := b[unix.SizeofInotifyEvent:end]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			w.handle(ev.Wd, ev.Mask, ev.Cookie, name)
			b = b[end:]
		}
	}
}

func (w *inotify) handle(wd int32, mask, cookie uint32, name []byte) {
	w.last = time.Now()
	switch {
	case mask&unix.IN_Q_OVERFLOW != 0:
		w.dirty.lose("the kernel's event queue overflowed")
		return
	case mask&unix.IN_IGNORED != 0:
		// The watch is gone: given up by us, or its directory was deleted (its parent's event
		// names that).
		if !w.stale[wd] {
			if rel, ok := w.wds[wd]; ok && rel == "" {
				w.dirty.lose("the workspace directory itself was removed")
			} else if ok {
				w.dirty.watchLost(rel, wd) // its directory was deleted: one of the same name is another
			}
		}
		delete(w.stale, wd)
		delete(w.wds, wd)
		return
	case mask&unix.IN_UNMOUNT != 0:
		w.dirty.lose("a file system under the workspace was unmounted")
		return
	}
	rel, ok := w.wds[wd]
	if !ok {
		if !w.stale[wd] {
			w.dirty.lose("an event for a directory that is not watched")
		}
		return
	}
	if len(name) == 0 {
		switch {
		case mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 && rel == "":
			w.dirty.lose("the workspace directory itself was moved or removed")
		case mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_ATTRIB) != 0:
			// Its parent's event names it (a directory's mode is recorded in its parent).
		default:
			w.dirty.add(rel, "", 0)
		}
		return
	}
	var flags uint8
	if mask&(unix.IN_CREATE|unix.IN_DELETE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0 {
		flags |= evEntry
	}
	if mask&unix.IN_ISDIR != 0 {
		switch {
		case mask&unix.IN_CREATE != 0:
			w.dirty.dirArrived(rel, string(name), 0)
		case mask&unix.IN_MOVED_FROM != 0:
			w.dirty.dirLeft(cookie)
		case mask&unix.IN_MOVED_TO != 0:
			w.dirty.dirArrived(rel, string(name), cookie)
		}
	} else {
		switch {
		case mask&unix.IN_CREATE != 0:
			flags |= evCreated
		case mask&unix.IN_DELETE != 0:
			w.dirty.gone(rel, string(name), 0)
		case mask&unix.IN_MOVED_FROM != 0:
			w.dirty.gone(rel, string(name), cookie)
		case mask&unix.IN_MOVED_TO != 0:
			flags |= w.dirty.arrived(cookie)
		}
	}
	if mask&(unix.IN_MODIFY|unix.IN_CLOSE_WRITE) != 0 {
		flags |= evContent
	}
	if mask&unix.IN_ATTRIB != 0 {
		flags |= evAttr
	}
	w.dirty.add(rel, string(name), flags)
}
