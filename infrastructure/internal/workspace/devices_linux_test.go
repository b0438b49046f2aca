package workspace

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Device nodes are never opened (reading one could block or have side effects): they are skipped
// with a warning naming their type, and the rest of the workspace is recorded.
func TestSnapshotSkipsDevices(t *testing.T) {
	w := newTestWS(t)
	w.write("f", "x", 0o644)
	// The node numbers of /dev/null; opening this copy would read the real device.
	if err := unix.Mknod(w.abs("chr"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 3))); errors.Is(err, unix.EPERM) {
		t.Skipf("mknod needs root here: %v", err) // as chattr: only where the system cannot
	} else if err != nil {
		t.Fatalf("mknod: %v", err)
	}
	if err := unix.Mknod(w.abs("blk"), unix.S_IFBLK|0o600, int(unix.Mkdev(7, 0))); err != nil {
		t.Fatalf("mknod: %v", err)
	}
	snap := w.snapshot()
	if len(snap.Warnings) != 2 || !strings.Contains(strings.Join(snap.Warnings, "\n"), "device") {
		t.Fatalf("warnings %q", snap.Warnings)
	}
	if got := w.flatten(snap.Root); len(got) != 1 || got[0].Path != "f" {
		t.Fatalf("tree %+v", got)
	}
}
