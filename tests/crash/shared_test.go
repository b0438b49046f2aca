package crash

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planhq/plan/tests/testkit/servertest"
)

// sharedEnv is the environment a plan process needs to reach the test's S3 server.
func sharedEnv(s3 servertest.S3Env) []string {
	return []string{
		"AWS_ENDPOINT_URL=" + s3.Endpoint, "AWS_ACCESS_KEY_ID=" + s3.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s3.SecretKey, "AWS_REGION=" + s3.Region,
	}
}

// pgEnv gives a plan process the password of dsn the way a user would: PGPASSWORD (the
// configuration never records it).
func pgEnv(t *testing.T, dsn string) []string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if pw, ok := u.User.Password(); ok {
		return []string{"PGPASSWORD=" + pw}
	}
	return nil
}

type fileView struct {
	Path   string `json:"path"`
	Kind   string `json:"kind"`
	Mode   string `json:"mode"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Target string `json:"target"`
}

// recorded is what `plan checkpoint show --files` says a checkpoint holds.
func recorded(t *testing.T, ws string, env []string, id string) []fileView {
	t.Helper()
	r := runPlan(t, ws, env, "--json", "checkpoint", "show", "--files", id)
	if r.code != 0 {
		t.Fatalf("checkpoint show %s: exit %d: %s", id, r.code, r.stderr)
	}
	var v struct {
		Entries []fileView `json:"entries"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatal(err)
	}
	return v.Entries
}

// onDisk is what a directory holds, as checkpoint show describes entries (.plan left out).
func onDisk(t *testing.T, root string) []fileView {
	t.Helper()
	var out []fileView
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if rel == ".plan" {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		v := fileView{Path: filepath.ToSlash(rel), Mode: fmt.Sprintf("%04o", fi.Mode().Perm())}
		switch {
		case d.IsDir():
			v.Kind = "dir"
		case fi.Mode()&fs.ModeSymlink != 0:
			v.Kind, v.Mode = "symlink", ""
			v.Target, _ = os.Readlink(p)
			v.Size = int64(len(v.Target))
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			v.Kind, v.Size, v.SHA256 = "file", int64(len(b)), hex.EncodeToString(sum[:])
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// same compares what a checkpoint records with a directory, by path, kind, size, content and, for
// files and directories, mode.
func same(want, got []fileView) string {
	key := func(v fileView) string {
		mode := v.Mode
		if v.Kind == "symlink" {
			mode = ""
		}
		return fmt.Sprintf("%s %s %s %d %s %s", v.Path, v.Kind, strings.TrimPrefix(mode, "0"), v.Size, v.SHA256, v.Target)
	}
	a := make([]string, 0, len(want))
	for _, v := range want {
		a = append(a, key(v))
	}
	b := make([]string, 0, len(got))
	for _, v := range got {
		b = append(b, key(v))
	}
	sort.Strings(a)
	sort.Strings(b)
	if strings.Join(a, "\n") == strings.Join(b, "\n") {
		return ""
	}
	return fmt.Sprintf("recorded:\n  %s\non disk:\n  %s", strings.Join(a, "\n  "), strings.Join(b, "\n  "))
}

// Two workspaces (standing in for two machines) write to one bucket and one PostgreSQL database
// at once, 8 processes in all, while gc runs in both: no command fails except as busy, verify
// --read-data is clean for both afterwards, and every checkpoint of both restores exactly.
func TestSharedStoreConcurrentWorkspaces(t *testing.T) {
	s3 := servertest.S3(t)
	dsn := servertest.Postgres(t)
	env := append(sharedEnv(s3), pgEnv(t, dsn)...)
	store := "s3://" + s3.Bucket + "/fleet"
	base := t.TempDir()
	ws := []string{filepath.Join(base, "machine-a"), filepath.Join(base, "machine-b")}
	for _, w := range ws {
		if err := os.MkdirAll(w, 0o755); err != nil {
			t.Fatal(err)
		}
		if r := runPlan(t, w, env, "init", "--store", store, "--db", dsn); r.code != 0 {
			t.Fatalf("init %s: exit %d: %s", w, r.code, r.stderr)
		}
		// Both start with the same files: the store deduplicates across workspaces.
		writeFile(t, filepath.Join(w, "shared", "common.txt"), []byte(strings.Repeat("common content\n", 200)), 0o644)
	}
	ops := 30
	if testing.Short() {
		ops = 10
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	tally := map[string]int{}
	var failures []string
	reclaimed := 0
	count := func(what string, r result) {
		mu.Lock()
		defer mu.Unlock()
		tally[fmt.Sprintf("%s:%d", what, r.code)]++
		if r.code == 5 && !strings.Contains(r.stderr, "the workspace is busy") {
			failures = append(failures, fmt.Sprintf("%s: exit 5 other than busy: %s", what, r.stderr))
		}
	}
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	stop := make(chan struct{})
	writer := func(w string, n int) {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(uint64(n), 99))
		dir := filepath.Join(w, fmt.Sprintf("p%d", n))
		for i := range ops {
			switch k := rng.IntN(10); {
			case k < 6: // change some files and checkpoint
				for range 1 + rng.IntN(4) {
					name := filepath.Join(dir, fmt.Sprintf("f%02d.txt", rng.IntN(8)))
					data := []byte(fmt.Sprintf("process %d op %d %s\n", n, i, strings.Repeat("x", rng.IntN(3000))))
					if err := os.MkdirAll(dir, 0o755); err != nil {
						fail("mkdir: %v", err)
						return
					}
					if err := os.WriteFile(name, data, 0o644); err != nil {
						fail("write: %v", err)
						return
					}
				}
				r := runPlan(t, w, env, "checkpoint", "create", "--note", fmt.Sprintf("p%d-%d", n, i))
				count("checkpoint", r)
				if r.code != 0 && r.code != 5 {
					fail("checkpoint create in %s: exit %d: %s", w, r.code, r.stderr)
				}
			case k < 8: // delete a file and checkpoint
				_ = os.Remove(filepath.Join(dir, fmt.Sprintf("f%02d.txt", rng.IntN(8))))
				r := runPlan(t, w, env, "checkpoint", "create")
				count("checkpoint", r)
				if r.code != 0 && r.code != 5 {
					fail("checkpoint create in %s: exit %d: %s", w, r.code, r.stderr)
				}
			default: // prune old checkpoints, so gc has garbage to collect
				r := runPlan(t, w, env, "checkpoint", "prune", "--keep", "12")
				count("prune", r)
				if r.code != 0 && r.code != 5 {
					fail("prune in %s: exit %d: %s", w, r.code, r.stderr)
				}
			}
		}
	}
	collector := func(w string) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			r := runPlan(t, w, env, "--json", "gc", "--grace", "3s")
			count("gc", r)
			var v struct {
				PacksDeleted int `json:"packs_deleted"`
			}
			if r.code == 0 && json.Unmarshal([]byte(r.stdout), &v) == nil {
				mu.Lock()
				reclaimed += v.PacksDeleted
				mu.Unlock()
			}
			if r.code != 0 && r.code != 5 {
				fail("gc in %s: exit %d: %s", w, r.code, r.stderr)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// 3 writers per workspace and a collector in each: 8 processes at a time.
	writers := sync.WaitGroup{}
	for n := range 6 {
		wg.Add(1)
		writers.Add(1)
		go func() {
			defer writers.Done()
			writer(ws[n%2], n)
		}()
	}
	wg.Add(2)
	go collector(ws[0])
	go collector(ws[1])
	writers.Wait()
	close(stop)
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	t.Logf("outcomes (command:exit): %v; the concurrent gcs deleted %d packs", tally, reclaimed)
	if t.Failed() {
		return
	}
	if reclaimed == 0 {
		t.Error("no gc deleted anything while the writers ran: the test did not exercise concurrent collection")
	}
	// Two final collections with no grace: everything dead goes now, nothing live may.
	for _, w := range ws {
		mustPlanEnv(t, w, env, "gc", "--grace", "0s")
	}
	for _, w := range ws {
		r := runPlan(t, w, env, "--json", "verify", "--read-data")
		if r.code != 0 {
			t.Fatalf("verify --read-data in %s: exit %d\n%s%s", w, r.code, r.stdout, r.stderr)
		}
	}
	restored := 0
	for _, w := range ws {
		ids := checkpointIDs(t, w, env)
		if len(ids) < 5 {
			t.Fatalf("%s has only %d checkpoints", w, len(ids))
		}
		for _, id := range ids {
			want := recorded(t, w, env, id)
			if r := runPlan(t, w, env, "rollback", "--to-checkpoint", id, "--yes"); r.code != 0 {
				t.Fatalf("rollback %s to %s: exit %d: %s", w, id, r.code, r.stderr)
			}
			if diff := same(want, onDisk(t, w)); diff != "" {
				t.Fatalf("%s after rolling back to %s:\n%s", w, id, diff)
			}
			restored++
		}
	}
	t.Logf("%d checkpoints restored exactly", restored)
}

func mustPlanEnv(t *testing.T, ws string, env []string, args ...string) string {
	t.Helper()
	r := runPlan(t, ws, env, args...)
	if r.code != 0 {
		t.Fatalf("plan %v in %s: exit %d\nstdout: %s\nstderr: %s", args, ws, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

func checkpointIDs(t *testing.T, ws string, env []string) []string {
	t.Helper()
	var list []cpView
	if err := json.Unmarshal([]byte(mustPlanEnv(t, ws, env, "--json", "checkpoint", "list")), &list); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, len(list))
	for _, c := range list {
		if c.Type != "pre_rollback" {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// A workspace on a shared store can be cloned anywhere, checkpoint by checkpoint, byte for byte; a
// correction works in the clone; and once the first workspace's directory is gone entirely,
// every one of its checkpoints still comes back with clone. With PostgreSQL the history is read
// from the database, without it from the store's records.
func TestSharedStoreCloneAnywhere(t *testing.T) {
	s3 := servertest.S3(t)
	env := sharedEnv(s3)
	for _, withDB := range []bool{true, false} {
		name := "records only"
		if withDB {
			name = "with PostgreSQL"
		}
		t.Run(name, func(t *testing.T) {
			store := "s3://" + s3.Bucket + "/" + strings.ReplaceAll(name, " ", "-")
			var dbArgs []string
			env := env
			if withDB {
				dsn := servertest.Postgres(t)
				dbArgs = []string{"--db", dsn}
				env = append(append([]string{}, env...), pgEnv(t, dsn)...)
			}
			base := t.TempDir()
			a := filepath.Join(base, "a")
			buildRich(t, a, false)
			var v struct {
				WorkspaceID string `json:"workspace_id"`
			}
			out := mustPlanEnv(t, a, env, append([]string{"--json", "init", "--store", store}, dbArgs...)...)
			if err := json.Unmarshal([]byte(out), &v); err != nil || v.WorkspaceID == "" {
				t.Fatalf("init: %q, %v", out, err)
			}
			writeFile(t, filepath.Join(a, "plan.yaml"), []byte("name: site\ndecisions:\n"+
				"  - id: build\n    run: mkdir -p out && echo built > out/site.txt\n"+
				"  - id: deploy\n    run: echo deployed > out/deployed.txt\n"), 0o644)
			mustPlanEnv(t, a, env, "run", "plan.yaml")
			writeFile(t, filepath.Join(a, "late.txt"), []byte("after the run\n"), 0o600)
			mustPlanEnv(t, a, env, "checkpoint", "create", "--note", "late")
			ids := checkpointIDs(t, a, env)
			want := map[string][]fileView{}
			for _, id := range ids {
				want[id] = recorded(t, a, env, id)
			}
			args := func(dir, id string) []string {
				out := append([]string{"--json", "clone", "--store", store}, dbArgs...)
				out = append(out, "--workspace", v.WorkspaceID)
				if id != "" {
					out = append(out, "--checkpoint", id)
				}
				return append(out, dir)
			}
			// The newest by default, byte for byte; a plan and a correction work there.
			c := filepath.Join(base, "clone")
			mustPlanEnv(t, base, env, args(c, "")...)
			if diff := same(want[ids[0]], onDisk(t, c)); diff != "" {
				t.Fatalf("the clone of the newest checkpoint:\n%s", diff)
			}
			mustPlanEnv(t, c, env, "run", "plan.yaml") // a fresh history: every decision runs
			mustPlanEnv(t, c, env, "correct", "--decision", "build", "--reason", "wrong output",
				"--run", "mkdir -p out && echo fixed > out/site.txt", "--yes")
			if b, err := os.ReadFile(filepath.Join(c, "out", "site.txt")); err != nil || string(b) != "fixed\n" {
				t.Fatalf("after the correction in the clone: %q, %v", b, err)
			}
			if r := runPlan(t, c, env, "verify", "--read-data"); r.code != 0 {
				t.Fatalf("verify in the clone: %s", r.stderr)
			}
			// A non-empty directory is refused, and changes nothing.
			if r := runPlan(t, base, env, args(c, ids[1])...); r.code != 5 {
				t.Fatalf("clone into a non-empty directory: exit %d: %s", r.code, r.stderr)
			}
			// The first workspace is lost entirely: every checkpoint comes back.
			if err := os.RemoveAll(a); err != nil {
				t.Fatal(err)
			}
			for k, id := range ids {
				dir := filepath.Join(base, fmt.Sprintf("again-%d", k))
				mustPlanEnv(t, base, env, args(dir, id[:18])...) // a unique prefix
				if diff := same(want[id], onDisk(t, dir)); diff != "" {
					t.Fatalf("checkpoint %s cloned after its workspace was deleted:\n%s", id, diff)
				}
			}
			t.Logf("%d checkpoints cloned exactly after the workspace was deleted", len(ids))
		})
	}
}
