package persistence

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/internal/failpoint"
	"github.com/planhq/plan/infrastructure/internal/objectstore"
)

// crashDirEnv names the directory a child process works in (its records are under objects/),
// crashTargetEnv its database and crashWorkspaceEnv the workspace it opens ("" to let Open
// choose); failpoints are armed once per process, so each failpoint runs in a child (this test
// binary again).
const (
	crashDirEnv       = "PLAN_TEST_CRASH_DIR"
	crashTargetEnv    = "PLAN_TEST_CRASH_TARGET"
	crashWorkspaceEnv = "PLAN_TEST_CRASH_WORKSPACE"
)

// TestMain runs crashChild instead of the tests when a parent below started this binary as its
// child.
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		if err := crashChild(dir, os.Getenv(crashTargetEnv), os.Getenv(crashWorkspaceEnv)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashChild adds checkpoint id2 to the database at target with the failpoint the parent armed,
// or rebuilds from its records (a SQLite database into dir/rebuilt.db, a PostgreSQL one in
// place); reaching the failpoint as an error is success.
func crashChild(dir, target, ws string) error {
	ctx := context.Background()
	recs, err := objectstore.OpenRecords(filepath.Join(dir, "objects"))
	if err != nil {
		return err
	}
	var opts []Option
	if ws != "" {
		opts = append(opts, WithWorkspace(ws))
	}
	if strings.HasPrefix(os.Getenv(failpoint.EnvVar), "rebuild-record") {
		if strings.HasPrefix(target, "postgres") {
			db, err := Open(ctx, target, false, opts...)
			if err != nil {
				return err
			}
			defer func() { _ = db.Close() }()
			_, err = db.RebuildWorkspace(ctx, recs)
			if err == nil || !strings.Contains(err.Error(), "injected") {
				return fmt.Errorf("rebuild at a failpoint: %v", err)
			}
			return nil
		}
		if _, err := Rebuild(ctx, filepath.Join(dir, "rebuilt.db"), recs); err == nil || !strings.Contains(err.Error(), "injected") {
			return fmt.Errorf("rebuild at a failpoint: %v", err)
		}
		return nil
	}
	db, err := Open(ctx, target, false, append(opts, WithLedger(recs))...)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	c, err := checkpoint.New(checkpoint.Params{ID: id2, Type: checkpoint.Manual, CreatedAt: time.Unix(2, 0), Root: tree.Sum([]byte(id2))})
	if err != nil {
		return err
	}
	if err := NewCheckpoints(db).Add(ctx, c); err == nil || !strings.Contains(err.Error(), "injected") {
		return fmt.Errorf("add at a failpoint: %v", err)
	}
	return nil
}

// runCrashChild runs crashChild on f's database with failpoint fp armed and returns whether it
// was killed.
func runCrashChild(t *testing.T, f *ledgerFixture, fp string) (killed bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$") // #nosec G204 -- this test binary
	cmd.Env = append(os.Environ(), crashDirEnv+"="+f.dir, crashTargetEnv+"="+f.target,
		crashWorkspaceEnv+"="+f.db.WorkspaceID(), failpoint.EnvVar+"="+fp)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	if err != nil {
		t.Fatalf("child with %s: %v\n%s", fp, err, out)
	}
	return false
}

// A process that stops at each step of a write, by an error or killed outright, leaves the
// database and the records agreeing: the next open settles the pending record, the change is
// there exactly when the database committed it, and a rebuild from the records equals the database.
func TestLedgerSurvivesACrashAtEachStep(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		ctx := context.Background()
		for _, tc := range []struct {
			fp      string
			killed  bool
			present bool
		}{
			{"record-prepared=error", false, false},
			{"record-prepared=kill", true, false},
			{"record-commit=kill", true, true},
		} {
			t.Run(tc.fp, func(t *testing.T) {
				f := newLedgerFixtureOn(t, e, 0)
				f.add(t, id1, nil)
				_ = f.db.Close()
				if killed := runCrashChild(t, f, tc.fp); killed != tc.killed {
					t.Fatalf("killed %v, want %v", killed, tc.killed)
				}
				db, err := f.open(false, f.recs)
				if err != nil {
					t.Fatal(err)
				}
				f.db = db
				committed, pending := f.names(t)
				if len(pending) != 0 {
					t.Fatalf("pending after open: %v", pending)
				}
				_, err = NewCheckpoints(db).Get(ctx, checkpoint.ID(id2))
				if tc.present != (err == nil) || (err != nil && !errors.Is(err, fault.ErrNotFound)) {
					t.Fatalf("checkpoint after the crash: %v (want present=%v)", err, tc.present)
				}
				want := 1
				if tc.present {
					want = 2
				}
				if len(committed) != want {
					t.Fatalf("records %v", committed)
				}
				f.rebuildMatches(t, dump(t, db))
			})
		}
	})
}

// A rebuild stopped part way leaves no half-built database for anyone to take for the real one; a
// shared database rebuilt in place is left as it was.
func TestRebuildStoppedPartWay(t *testing.T) {
	onEngines(t, func(t *testing.T, e engine) {
		f := newLedgerFixtureOn(t, e, 2)
		want := dump(t, f.db)
		_ = f.db.Close()
		runCrashChild(t, f, "rebuild-record=error")
		if e.name == "sqlite" {
			noDatabase(t, filepath.Join(f.dir, "rebuilt.db"))
			return
		}
		db, err := f.open(false, nil)
		if err != nil {
			t.Fatal(err)
		}
		f.db = db
		if d := diffDumps(want, dump(t, db)); d != "" {
			t.Fatalf("a failed rebuild changed the database:\n%s", d)
		}
	})
}
