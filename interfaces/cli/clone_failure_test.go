package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/checkpoint"
)

// immutable makes p immutable (chattr +i: even root cannot change it) until the test ends.
func immutable(t *testing.T, p string) {
	t.Helper()
	if out, err := exec.Command("chattr", "+i", p).CombinedOutput(); err != nil {
		t.Skipf("chattr +i %s: %v %s (needs e2fsprogs and a file system that has the attribute)", p, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", p).Run() })
}

// A clone that adopted its checkpoint but failed before materialising anything (here the safety
// checkpoint of the empty directory cannot be stored) takes back what it made: DIR is as it was
// found, new or empty, and takes the next attempt.
func TestCloneThatMaterialisedNothingLeavesDIRAsFound(t *testing.T) {
	src := t.TempDir()
	store := filepath.Join(t.TempDir(), "store")
	ws := jsonField(t, mustPlan(t, src, "--json", "init", "--store", "file://"+store), "workspace_id")
	writeFile(t, src, "a.txt", "alpha\n")
	createCheckpoint(t, src)
	base := t.TempDir()
	empty := filepath.Join(base, "empty")
	if err := os.Mkdir(empty, 0o750); err != nil {
		t.Fatal(err)
	}
	immutable(t, filepath.Join(store, "packs"))
	for _, dir := range []string{filepath.Join(base, "new"), empty} {
		o := invoke(Runner{}, "clone", "--store", "file://"+store, "--workspace", ws, dir)
		if o.code == ExitOK || !strings.Contains(o.stderr, "nothing was materialised: "+dir+" is as it was") {
			t.Fatalf("clone into %s: %v", dir, o)
		}
		if strings.Contains(o.stderr, "warning") {
			t.Errorf("the adopted checkpoint was not taken back: %s", o.stderr)
		}
	}
	if _, err := os.Lstat(filepath.Join(base, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory the clone made is still there: %v", err)
	}
	if entries, err := os.ReadDir(empty); err != nil || len(entries) != 0 {
		t.Errorf("the empty directory holds %v (%v)", entries, err)
	}
	if err := exec.Command("chattr", "-i", filepath.Join(store, "packs")).Run(); err != nil {
		t.Fatal(err)
	}
	if o := invoke(Runner{}, "clone", "--store", "file://"+store, "--workspace", ws, empty); o.code != ExitOK {
		t.Fatalf("the next attempt: %v", o)
	}
	if readFile(t, empty, "a.txt") != "alpha\n" {
		t.Fatal("the next attempt did not clone")
	}
}

// A checkpoint the clone cannot take back is named in a warning: it stays in the database.
func TestCloneTakeBackWarns(t *testing.T) {
	var errb bytes.Buffer
	h := &handler{r: &Runner{Stderr: &errb}}
	h.takeBack(context.Background(), func(context.Context, string, bool) (*checkpoint.Checkpoint, error) {
		return nil, errors.New("database lost")
	}, "c0ffee", "w1")
	if !strings.Contains(errb.String(), "plan: warning: the clone's checkpoint c0ffee (workspace w1) could not be deleted") ||
		!strings.Contains(errb.String(), "database lost") {
		t.Errorf("warning: %q", errb.String())
	}
}
