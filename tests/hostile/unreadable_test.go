package hostile

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// One path plan cannot read (a database container's volume: a root-owned 0700 directory in a
// user's project) must not cost the user every checkpoint: the rest is recorded, the unreadable
// path named, and no rollback ever deletes or overwrites what it could not read. Finding: every
// checkpoint failed on it ("permission denied"), so an agent's `rm -rf src` could not be undone.

// asUser runs plan as a user that cannot read what the test closes to it: root runs it as nobody
// (a workspace owned by nobody, the closed path owned by root), anyone else as themself (the
// closed path mode 0). close makes rel unreadable, open readable again.
type asUser struct {
	t    *testing.T
	bin  string
	cred *syscall.Credential // nil: the test's own user
	home string
}

func newAsUser(t *testing.T, base string) *asUser {
	t.Helper()
	u := &asUser{t: t, home: filepath.Join(base, "home")}
	if err := os.MkdirAll(u.home, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		u.cred = &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: false, Groups: []uint32{}}
		// The binary, and every directory down to the workspace, must be reachable by nobody.
		for d := base; d != "/" && d != "."; d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o755); err != nil && !os.IsPermission(err) {
				t.Fatal(err)
			}
			if d == os.TempDir() {
				break
			}
		}
		bin := filepath.Join(base, "plan")
		copyFile(t, planBinary(t), bin, 0o755)
		u.bin = bin
		u.chown(u.home)
	} else {
		u.bin = planBinary(t)
	}
	return u
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// chown gives everything under p to the user plan runs as.
func (u *asUser) chown(p string) {
	u.t.Helper()
	if u.cred == nil {
		return
	}
	err := filepath.Walk(p, func(q string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(q, int(u.cred.Uid), int(u.cred.Gid))
	})
	if err != nil {
		u.t.Fatal(err)
	}
}

// close makes p unreadable to the user plan runs as; open undoes it (the mode back to mode).
func (u *asUser) close(p string) {
	u.t.Helper()
	if u.cred != nil {
		if err := os.Chown(p, 0, 0); err != nil {
			u.t.Fatal(err)
		}
		if err := os.Chmod(p, 0o700); err != nil {
			u.t.Fatal(err)
		}
		return
	}
	if err := os.Chmod(p, 0); err != nil {
		u.t.Fatal(err)
	}
	u.t.Cleanup(func() { _ = os.Chmod(p, 0o755) }) // so that the temporary directory can go
}

func (u *asUser) open(p string, mode os.FileMode) {
	u.t.Helper()
	u.chown(p)
	if err := os.Chmod(p, mode); err != nil {
		u.t.Fatal(err)
	}
}

// run runs plan -C dir args… as the user.
func (u *asUser) run(dir string, args ...string) result {
	u.t.Helper()
	full := append([]string{"-C", dir}, args...)
	cmd := exec.Command(u.bin, full...)
	// The user's own data directory, in its home (PLAN_DATA_DIR from the test run is the test
	// user's: plan refuses another user's).
	cmd.Env = append(baseEnv(), "PLAN_WATCH=0", "HOME="+u.home, "XDG_DATA_HOME="+filepath.Join(u.home, ".local", "share"),
		"PLAN_DATA_DIR="+filepath.Join(u.home, ".local", "share", "plan"))
	if u.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		u.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		u.t.Fatalf("plan %s did not end", strings.Join(args, " "))
	}
	r := result{args: args, stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		u.t.Fatal(err)
	}
	return r
}

func (u *asUser) must(dir string, args ...string) result {
	u.t.Helper()
	r := u.run(dir, args...)
	if r.code != 0 {
		u.t.Fatalf("%s", r)
	}
	return r
}

// checkpoint creates a checkpoint and returns its ID and the paths it could not read.
func (u *asUser) checkpoint(dir string) (string, []string) {
	u.t.Helper()
	var cp struct {
		ID         string   `json:"id"`
		Unreadable []string `json:"unreadable"`
	}
	r := u.must(dir, "--json", "checkpoint", "create")
	if err := json.Unmarshal([]byte(r.stdout), &cp); err != nil || cp.ID == "" {
		u.t.Fatalf("checkpoint create: %v\n%s", err, r)
	}
	return cp.ID, cp.Unreadable
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFileAsTest(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestUnreadableDirectoryLeavesTheRestUndoable(t *testing.T) {
	base := t.TempDir()
	u := newAsUser(t, base)
	ws := filepath.Join(base, "proj")
	writeFile(t, filepath.Join(ws, "src", "app.py"), "print('precious')\n")
	writeFile(t, filepath.Join(ws, "pgdata", "PG_VERSION"), "16\n")
	u.chown(ws)
	u.close(filepath.Join(ws, "pgdata"))
	u.must(ws, "init")
	if r := u.must(ws, "agent", "install", "claude", "--project"); !strings.Contains(r.stderr, `"pgdata"`) {
		t.Errorf("plan agent install does not warn that pgdata cannot be checkpointed:\n%s", r)
	}

	// The checkpoint records the rest and names what it could not read, in JSON and on stderr.
	cp, unreadable := u.checkpoint(ws)
	if strings.Join(unreadable, ",") != "pgdata" {
		t.Fatalf("checkpoint create: unreadable %q, want [pgdata]", unreadable)
	}
	if r := u.must(ws, "checkpoint", "create", "--note", "text"); !strings.Contains(r.stderr, `"pgdata"`) || !strings.Contains(r.stderr, "permission denied") {
		t.Fatalf("the text output warns of nothing:\n%s", r)
	}
	if r := u.must(ws, "status"); !strings.Contains(r.stdout+r.stderr, "pgdata") {
		t.Errorf("plan status does not say pgdata cannot be read:\n%s", r)
	}

	// An agent's rm -rf src is undone; the directory it could not read is left as it is.
	if err := os.RemoveAll(filepath.Join(ws, "src")); err != nil {
		t.Fatal(err)
	}
	u.must(ws, "--yes", "rollback", "--to-checkpoint", cp)
	if got := readFileAsTest(t, filepath.Join(ws, "src", "app.py")); got != "print('precious')\n" {
		t.Fatalf("src/app.py holds %q", got)
	}
	if got := readFileAsTest(t, filepath.Join(ws, "pgdata", "PG_VERSION")); got != "16\n" {
		t.Fatalf("pgdata/PG_VERSION holds %q", got)
	}

	// Readable again, it is still not taken for deleted: a rollback to the checkpoint that could
	// not read it leaves it alone.
	u.open(filepath.Join(ws, "pgdata"), 0o755)
	writeFile(t, filepath.Join(ws, "pgdata", "new"), "written since\n")
	u.chown(filepath.Join(ws, "pgdata"))
	u.must(ws, "--yes", "rollback", "--to-checkpoint", cp)
	for rel, want := range map[string]string{"pgdata/PG_VERSION": "16\n", "pgdata/new": "written since\n"} {
		if got := readFileAsTest(t, filepath.Join(ws, rel)); got != want {
			t.Fatalf("%s holds %q after a rollback to a checkpoint that could not read it, want %q", rel, got, want)
		}
	}
}

// A file that became unreadable between two checkpoints is not recorded as deleted: rolling back
// to the later checkpoint, once it is readable again, keeps it (and its content).
func TestFileThatBecameUnreadableIsNotDeleted(t *testing.T) {
	base := t.TempDir()
	u := newAsUser(t, base)
	ws := filepath.Join(base, "proj")
	writeFile(t, filepath.Join(ws, "keep.txt"), "keep\n")
	writeFile(t, filepath.Join(ws, "secret.txt"), "v1\n")
	u.chown(ws)
	u.must(ws, "init")
	if _, unreadable := u.checkpoint(ws); len(unreadable) != 0 {
		t.Fatalf("unreadable %q", unreadable)
	}
	u.close(filepath.Join(ws, "secret.txt"))
	later, unreadable := u.checkpoint(ws)
	if strings.Join(unreadable, ",") != "secret.txt" {
		t.Fatalf("unreadable %q, want [secret.txt]", unreadable)
	}
	u.open(filepath.Join(ws, "secret.txt"), 0o644)
	writeFile(t, filepath.Join(ws, "secret.txt"), "v2\n")
	u.must(ws, "--yes", "rollback", "--to-checkpoint", later)
	if got := readFileAsTest(t, filepath.Join(ws, "secret.txt")); got != "v2\n" {
		t.Fatalf("secret.txt holds %q after the rollback, want v2 (left alone)", got)
	}
}
