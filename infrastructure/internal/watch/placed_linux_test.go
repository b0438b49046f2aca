//go:build linux

package watch

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/planhq/plan/infrastructure/internal/workspace"
)

// TestServiceHearsWhatARestorePlaced: a command's restore tells the service which files it
// renamed into place (from .plan/staging, which is not watched), and the service takes its word
// for those still as placed; it is never asked when this process follows the workspace itself,
// when PLAN_WATCH=0, or for more files than the request is worth. Its snapshots stay a walk's.
func TestServiceHearsWhatARestorePlaced(t *testing.T) {
	e := newEnv(t)
	e.write("d/a", "one")
	e.start(Options{})
	e.served()
	tmp := filepath.Join(e.l.State(), "staged")
	if err := os.WriteFile(tmp, []byte("restored"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, e.abs("d/a")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(e.abs("d/a"))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	placed := []workspace.Placed{{Path: "d/a", Dev: uint64(st.Dev), Ino: st.Ino}} //nolint:unconvert // widths differ between architectures
	ctx := context.Background()

	e.client.WalkOnly(true)
	if n, _ := e.client.Placed(ctx, placed, ""); n != 0 {
		t.Fatalf("walking only (PLAN_WATCH=0), the service was told (%d files taken)", n)
	}
	e.client.WalkOnly(false)
	if n, _ := e.client.Placed(ctx, make([]workspace.Placed, maxPlaced+1), ""); n != 0 {
		t.Fatalf("more than %d files were sent (%d taken)", maxPlaced, n)
	}
	if n, _ := e.client.Placed(ctx, placed, ""); n != 1 {
		t.Fatalf("the service took %d of the placed files, want 1", n)
	}
	e.write("d/a", "edited after the rollback")
	if got, want := e.served(), e.walked(); got != want {
		t.Fatalf("after a vouched restore the service answered %s, a walk records %s", got, want)
	}
	// A process that follows the workspace itself vouches in-process, never through the socket.
	stop := e.client.Track()
	defer stop()
	if n, _ := e.client.Placed(ctx, placed, ""); n != 0 {
		t.Fatalf("a tracking process asked the service (%d files taken)", n)
	}
	e.stop()
	stop()
	if n, _ := e.client.Placed(ctx, placed, ""); n != 0 {
		t.Fatalf("with no service running, %d files were taken", n)
	}
}

// TestServiceRemovesARestoresTrash: the service takes over the removal of what a restore
// replaced, after it has answered, but only for a directory directly under the workspace's trash
// directory: anything else a request names is left alone (and the restore removes its own).
func TestServiceRemovesARestoresTrash(t *testing.T) {
	e := newEnv(t)
	e.write("a", "a")
	e.start(Options{})
	ctx := context.Background()
	trashDir := filepath.Join(e.l.Root, filepath.FromSlash(e.l.Trash()))
	e.write(".plan/trash/t1/0/1", "replaced")
	if _, took := e.client.Placed(ctx, nil, filepath.Join(trashDir, "t1")); !took {
		t.Fatal("the service did not take the trash over")
	}
	e.stop() // waits for what the service does after answering
	if _, err := os.Lstat(filepath.Join(trashDir, "t1")); !os.IsNotExist(err) {
		t.Fatalf("the trash the service took over is still there (%v)", err)
	}
	e.start(Options{})
	outside := filepath.Join(e.l.State(), "not-trash")
	e.write(".plan/not-trash/x", "x")
	for _, dir := range []string{outside, trashDir, filepath.Join(trashDir, "t2", "deeper"), filepath.Join(trashDir, "..")} {
		if _, took := e.client.Placed(ctx, nil, dir); took {
			t.Fatalf("the service took %s over", dir)
		}
	}
	e.stop()
	if _, err := os.Lstat(outside); err != nil {
		t.Fatalf("a directory outside the trash was removed: %v", err)
	}
}
