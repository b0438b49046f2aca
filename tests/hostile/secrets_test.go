package hostile

import (
	"context"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/planhq/plan/tests/testkit"
	"github.com/planhq/plan/tests/testkit/servertest"
)

// Secrets: no password leaves the process except to the server it is for; a server that stops
// answering is given up on within its deadline; a refusal is its own kind (denied, exit 7).

// secretsDSN is a fresh PostgreSQL database of the test's own, split into a DSN without the
// password and the password.
func secretsDSN(t *testing.T) (u *url.URL, password string) {
	t.Helper()
	u, err := url.Parse(servertest.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	password, ok := u.User.Password()
	if !ok || len(password) < 8 {
		t.Skip("the test server's DSN has no password worth looking for")
	}
	u.User = url.User(u.User.Username())
	return u, password
}

// secretsAllFiles returns every file under dir, by path.
func secretsAllFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		files[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// secretsBucket returns every object of the bucket, by key.
func secretsBucket(t *testing.T, s s3Store) map[string]string {
	t.Helper()
	c := s.Client(t)
	ctx := context.Background()
	objs := map[string]string{}
	for o := range c.ListObjects(ctx, s.Bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		r, err := c.GetObject(ctx, s.Bucket, o.Key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		_ = r.Close()
		if err != nil {
			t.Fatal(err)
		}
		objs["s3://"+s.Bucket+"/"+o.Key] = string(b)
	}
	if len(objs) == 0 {
		t.Fatal("the store holds nothing: the test looked in the wrong place")
	}
	return objs
}

// A password given in the DSN of init or clone (as user info, or as a password= parameter) is
// used for that command and kept nowhere: not in config.yaml, the output, the history (plan's and
// the shared operations table's), the records in the store, or anything under .plan/ or in the
// data directory (the workspaces' state directories and registry entries).
// Findings: dsn-query-password.sh, history-dsn-password.sh.
func TestSecretsDSNPasswordKeptNowhere(t *testing.T) {
	base, password := secretsDSN(t)
	s := newS3Store(t, "pw")
	withPW := append(append([]string{}, s.Env...), "PGPASSWORD="+password)
	inQuery := *base
	q := inQuery.Query()
	q.Set("password", password)
	inQuery.RawQuery = q.Encode()
	inUser := *base
	inUser.User = url.UserPassword(base.User.Username(), password)

	seen := map[string]string{}
	w := &workspace{t: t, dir: t.TempDir(), env: s.Env}
	w.write("f", "hello")
	r := w.run("--json", "init", "--store", s.URL, "--db", inQuery.String())
	if r.code != 0 {
		t.Fatalf("%s", r)
	}
	seen["init --json stdout"], seen["init --json stderr"] = r.stdout, r.stderr
	w.env = withPW
	id := w.checkpoint("one")
	r = w.run("--json", "history")
	seen["history --json"] = r.stdout + r.stderr

	c := filepath.Join(t.TempDir(), "clone")
	r = runPlan(t, "", s.Env, "--json", "clone", "--store", s.URL, "--db", inUser.String(), "--workspace", workspaceID(t, w), c)
	if r.code != 0 {
		t.Fatalf("%s", r)
	}
	seen["clone --json"] = r.stdout + r.stderr
	r = runPlan(t, c, withPW, "--json", "history")
	seen["history --json of the clone"] = r.stdout + r.stderr
	if !strings.Contains(seen["history --json of the clone"], "clone") || !strings.Contains(seen["history --json"], id) {
		t.Fatalf("the histories are not the ones looked for:\n%s", seen)
	}
	requireNoSecret(t, password, seen)
	requireNoSecret(t, password, secretsAllFiles(t, filepath.Join(w.dir, ".plan")))
	requireNoSecret(t, password, secretsAllFiles(t, filepath.Join(c, ".plan")))
	requireNoSecret(t, password, secretsAllFiles(t, testkit.DataDir(t)))
	requireNoSecret(t, password, secretsBucket(t, s))
	// Later commands authenticate from the environment, never from something kept.
	w.env = s.Env
	if r := w.run("--json", "checkpoint", "create"); r.code == 0 {
		t.Fatalf("a command authenticated without PGPASSWORD: the password was kept somewhere\n%s", r)
	}
}

// workspaceID reads the workspace_id line of the workspace's config.yaml.
func workspaceID(t *testing.T, w *workspace) string {
	t.Helper()
	for _, line := range strings.Split(w.read(".plan/config.yaml"), "\n") {
		if v, ok := strings.CutPrefix(line, "workspace_id: "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("no workspace_id in config.yaml")
	return ""
}

// Messages are redacted by parsing the DSN, not by searching for the password's text: a short
// password, or one equal to the user or database name, neither mangles the message nor shows
// where it occurs, and a DSN without a password is shown without one.
// Finding: redaction-reveals-password.sh.
func TestSecretsRedactionParsesTheDSN(t *testing.T) {
	addr := testkit.ClosedPort(t)
	for _, pw := range []string{"x", "e", "plan", "postgres"} {
		dir := t.TempDir()
		r := runPlanWithin(t, 30*time.Second, dir, []string{"PGPASSWORD=" + pw}, "--json", "init", "--db", "postgres://plan@"+addr+"/postgres?sslmode=disable")
		if r.code != 1 || r.errorKind() != "unavailable" {
			t.Fatalf("PGPASSWORD=%s: %s", pw, r)
		}
		for _, want := range []string{"postgres://plan@" + addr + "/postgres", "user=plan database=postgres", "connect"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("PGPASSWORD=%s: the message lacks %q (mangled?): %s", pw, want, r.stderr)
			}
		}
		if strings.Contains(r.stderr, "xxxxx") {
			t.Errorf("PGPASSWORD=%s: the message masks text: %s", pw, r.stderr)
		}
	}
}

// An AWS_ENDPOINT_URL holding credentials is refused without echoing them.
// Finding: endpoint-url-echoed.sh.
func TestSecretsEndpointURLNotEchoed(t *testing.T) {
	for _, endpoint := range []string{"http://AKIAEXAMPLE:S3CR3TKEYINURL@127.0.0.1:9000/x", "http://AKIAEXAMPLE:S3CR3TKEYINURL@127.0.0.1:9000"} {
		dir := t.TempDir()
		r := runPlan(t, dir, []string{"AWS_ENDPOINT_URL=" + endpoint, "AWS_ACCESS_KEY_ID=a", "AWS_SECRET_ACCESS_KEY=b"},
			"--json", "init", "--store", "s3://bkt")
		if r.code != 3 || r.errorKind() != "invalid" || !strings.Contains(r.stderr, "127.0.0.1:9000") {
			t.Fatalf("%s", r)
		}
		requireNoSecret(t, "S3CR3TKEYINURL", map[string]string{"stdout": r.stdout, "stderr": r.stderr})
	}
}

// A PostgreSQL server that stops answering in the middle of a command is given up on within its
// deadline (here the DSN's statement_timeout and connect_timeout, kept short): exit 1, kind
// unavailable, naming the server; the process ends, so the workspace's lock is released and the
// next command runs. Finding: frozen-db-hang.sh (waited as long as the freeze lasted, holding the
// lock; only the first connection had a deadline).
func TestSecretsFrozenDatabaseHasADeadline(t *testing.T) {
	base, password := secretsDSN(t)
	p := newProxy(t, base.Host)
	dsn := *base
	dsn.Host = p.addr()
	q := dsn.Query()
	q.Set("statement_timeout", "500")
	q.Set("connect_timeout", "1")
	dsn.RawQuery = q.Encode()
	w := newWorkspace(t, []string{"PGPASSWORD=" + password}, "--db", dsn.String())
	w.write("f", "one")
	before := p.connections()
	start := time.Now()
	// The decision runs for 1 s: the server freezes while it runs, after the command connected
	// and wrote its pre-decision checkpoint, so its next statements find no answer.
	run := startPlan(t, w.dir, w.env, "--json", "exec", "--id", "d0", "--", "sh", "-c", "echo two > f; sleep 1")
	for p.connections() == before && time.Since(start) < 20*time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	p.freeze()
	var r result
	select {
	case <-run.done:
		r = run.result(t)
	case <-time.After(40 * time.Second):
		r = run.kill(t)
		t.Fatalf("checkpoint create still waited on the frozen database after 40s: %s", r)
	}
	took := time.Since(start)
	t.Logf("gave up after %v: %s", took, r.stderr)
	if r.code != 1 || !strings.Contains(r.stderr, `"kind":"unavailable"`) || !strings.Contains(r.stderr, p.addr()) ||
		!strings.Contains(r.stderr, "did not answer within") {
		t.Fatalf("checkpoint create with the database frozen, after %v: %s", took, r)
	}
	requireNoSecret(t, password, map[string]string{"stderr": r.stderr})
	p.pass()
	w.checkpoint("after the freeze")
}

// A refused login or permission is its own kind, denied (exit 7), not unavailable ("retry
// later"): S3 credentials the service rejects, a PostgreSQL password it rejects, and a store
// outside what a prefix-scoped policy allows.
// Finding: prefix-policy-accessdenied.sh (permission errors reported as unavailable).
func TestSecretsRefusalIsDenied(t *testing.T) {
	s := newS3Store(t, "denied")
	bad := append([]string{}, s.Env...)
	bad = append(bad, "AWS_SECRET_ACCESS_KEY=not-the-secret-key")
	r := runPlan(t, t.TempDir(), bad, "--json", "init", "--store", s.URL)
	if r.code != 7 || r.errorKind() != "denied" {
		t.Fatalf("a wrong S3 secret: %s", r)
	}
	requireNoSecret(t, "not-the-secret-key", map[string]string{"stderr": r.stderr})

	base, _ := secretsDSN(t)
	r = runPlan(t, t.TempDir(), []string{"PGPASSWORD=not-the-password"}, "--json", "init", "--db", base.String())
	if r.code != 7 || r.errorKind() != "denied" {
		t.Fatalf("a wrong PostgreSQL password: %s", r)
	}
	requireNoSecret(t, "not-the-password", map[string]string{"stderr": r.stderr})
}

// secretsScoped returns the environment of temporary credentials whose policy allows listing and
// reading and writing under prefix/ of the bucket only (the usual least-privilege policy).
func secretsScoped(t *testing.T, s s3Store, prefix string) []string {
	t.Helper()
	if err := s.Client(t).MakeBucket(context.Background(), s.Bucket, minio.MakeBucketOptions{Region: s.Region}); err != nil {
		t.Fatal(err)
	}
	arn := "arn:aws:s3:::" + s.Bucket
	policy := `{"Version":"2012-10-17","Statement":[
 {"Effect":"Allow","Action":["s3:ListBucket"],"Resource":["` + arn + `"],"Condition":{"StringLike":{"s3:prefix":["` + prefix + `/*","` + prefix + `"]}}},
 {"Effect":"Allow","Action":["s3:GetObject","s3:PutObject","s3:DeleteObject","s3:AbortMultipartUpload","s3:ListMultipartUploadParts"],"Resource":["` + arn + `/` + prefix + `/*"]}]}`
	sts, err := credentials.NewSTSAssumeRole(s.Endpoint, credentials.STSAssumeRoleOptions{
		AccessKey: s.AccessKey, SecretKey: s.SecretKey, Policy: policy, Location: s.Region})
	if err != nil {
		t.Fatal(err)
	}
	v, err := sts.GetWithContext(nil)
	if err != nil {
		t.Skipf("the S3 server gives no temporary credentials with a policy (AssumeRole): %v", err)
	}
	return []string{"AWS_ENDPOINT_URL=" + s.Endpoint, "AWS_ACCESS_KEY_ID=" + v.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + v.SecretAccessKey, "AWS_SESSION_TOKEN=" + v.SessionToken, "AWS_REGION=" + s.Region}
}

// A store works with credentials limited to its prefix: init, checkpoints, a rollback and a clone;
// another prefix of the bucket is denied (exit 7), not unavailable.
// Finding: prefix-policy-accessdenied.sh (init needed bucket-wide ListBucket).
func TestSecretsPrefixScopedStore(t *testing.T) {
	s := newS3Store(t, "mine")
	env := secretsScoped(t, s, "mine")
	w := newWorkspace(t, env, "--store", "s3://"+s.Bucket+"/mine")
	w.write("f", "one")
	cp := w.checkpoint("one")
	w.write("f", "two")
	w.must("--yes", "rollback", "--to-checkpoint", cp)
	if got := w.read("f"); got != "one" {
		t.Fatalf("after the rollback f holds %q", got)
	}
	c := filepath.Join(t.TempDir(), "clone")
	if r := runPlan(t, "", env, "--json", "clone", "--store", "s3://"+s.Bucket+"/mine", "--workspace", workspaceID(t, w), c); r.code != 0 {
		t.Fatalf("%s", r)
	}
	r := runPlan(t, t.TempDir(), env, "--json", "init", "--store", "s3://"+s.Bucket+"/theirs")
	if r.code != 7 || r.errorKind() != "denied" {
		t.Fatalf("another prefix: %s", r)
	}
}

// A bucket name S3 never accepts (upper case, an underscore) is exit 3 invalid, said before any
// request; the lenient check let them through to a bare "400 Bad Request", exit 1 internal.
// Finding: bucket-name-400-internal.sh.
func TestSecretsBucketNameS3Refuses(t *testing.T) {
	for _, name := range []string{"UPPERCASE", "has_underscore", "MixedCase"} {
		r := runPlan(t, t.TempDir(), []string{"AWS_ENDPOINT_URL=http://127.0.0.1:1", "AWS_ACCESS_KEY_ID=a", "AWS_SECRET_ACCESS_KEY=b"},
			"--json", "init", "--store", "s3://"+name)
		if r.code != 3 || r.errorKind() != "invalid" || !strings.Contains(r.stderr, name) {
			t.Fatalf("s3://%s: %s", name, r)
		}
	}
}

// A database holding another application's tables is a DSN plan cannot use: exit 3, and nothing
// is created in it (not exit 6 "run plan doctor --rebuild" with no workspace to run it in, nor an
// internal error).
// Finding: foreign-db.sh.
func TestSecretsForeignDatabase(t *testing.T) {
	for name, ddl := range map[string]string{
		"unrelated":      `CREATE TABLE foo (id INT)`,
		"golang-migrate": `CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, dirty BOOLEAN NOT NULL); INSERT INTO schema_migrations VALUES (20240101, false)`,
		"rails":          `CREATE TABLE schema_migrations (version VARCHAR PRIMARY KEY); INSERT INTO schema_migrations VALUES ('20230101000000')`,
	} {
		t.Run(name, func(t *testing.T) {
			base, password := secretsDSN(t)
			full := *base
			full.User = url.UserPassword(base.User.Username(), password)
			servertest.Exec(t, full.String(), ddl)
			r := runPlan(t, t.TempDir(), []string{"PGPASSWORD=" + password}, "--json", "init", "--db", base.String())
			if r.code != 3 || r.errorKind() != "invalid" || !strings.Contains(r.stderr, "another application's") {
				t.Fatalf("%s", r)
			}
		})
	}
}
