package features

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cucumber/godog"
	"github.com/jackc/pgx/v5"

	"github.com/planhq/plan/tests/testkit/treetest"
)

// Shared stores: a file:// directory of the scenario's own, or a bucket and a database on the real
// MinIO and PostgreSQL that `make bdd` starts (PLAN_TEST_*). Scenarios that need a server are
// skipped without one, and fail under PLAN_TEST_REQUIRE_SERVERS=1.
func (s *scenario) registerSharedSteps(sc *godog.ScenarioContext) {
	sc.Step(`^a shared store in a directory$`, s.aSharedDirStore)
	sc.Step(`^a shared store in an S3 bucket$`, s.aSharedBucket)
	sc.Step(`^a shared PostgreSQL database$`, s.aSharedDatabase)
	sc.Step(`^the S3 endpoint does not answer$`, s.theS3EndpointDoesNotAnswer)
	sc.Step(`^the database does not answer$`, s.theDatabaseDoesNotAnswer)
	sc.Step(`^"([^"]*)" equals the workspace remembered as "([^"]*)"$`, s.dirEquals)
	sc.Step(`^the workspace's configuration also says:$`, s.theConfigurationAlsoSays)
	sc.Step(`^the store's descriptor of workspace "([^"]*)" is (removed|damaged)$`, s.theDescriptorIs)
	sc.Step(`^I flip a byte in the middle of every pack of the shared store$`, s.iCorruptEverySharedPack)
	sc.Step(`^I delete every pack of the shared store$`, s.iDeleteEverySharedPack)
	sc.Step(`^the shared database loses every table$`, s.theDatabaseLosesEveryTable)
	sc.Step(`^I remember the shared database's DSN with its password as "([^"]*)"$`, s.iRememberTheDSNWithPassword)
	sc.Step(`^(stdout|stderr) does not contain the database password$`, s.streamHasNoPassword)
	sc.Step(`^I wait ([0-9.]+) seconds?$`, func(secs float64) error {
		time.Sleep(time.Duration(secs * float64(time.Second)))
		return nil
	})
	sc.After(func(ctx context.Context, _ *godog.Scenario, err error) (context.Context, error) {
		return ctx, s.dropDatabase()
	})
}

func randomName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// needServer skips the scenario when the servers are not there (fails it when they must be).
func needServer(vars ...string) error {
	for _, v := range vars {
		if os.Getenv(v) == "" {
			if os.Getenv("PLAN_TEST_REQUIRE_SERVERS") == "1" {
				return fmt.Errorf("%s is not set but PLAN_TEST_REQUIRE_SERVERS=1", v)
			}
			return godog.ErrSkip
		}
	}
	return nil
}

func (s *scenario) aSharedDirStore() error {
	s.store = "file://" + filepath.Join(s.root, "shared-store")
	return nil
}

func (s *scenario) aSharedBucket() error {
	if err := needServer("PLAN_TEST_S3_ENDPOINT"); err != nil {
		return err
	}
	s.store = "s3://plan-feature-" + randomName() + "/team"
	s.env = map[string]string{
		"AWS_ENDPOINT_URL":      os.Getenv("PLAN_TEST_S3_ENDPOINT"),
		"AWS_ACCESS_KEY_ID":     os.Getenv("PLAN_TEST_S3_ACCESS_KEY"),
		"AWS_SECRET_ACCESS_KEY": os.Getenv("PLAN_TEST_S3_SECRET_KEY"),
		"AWS_REGION":            os.Getenv("PLAN_TEST_S3_REGION"),
	}
	return nil
}

// aSharedDatabase creates a database for the scenario on the test server; the scenario's end
// drops it.
func (s *scenario) aSharedDatabase() error {
	if err := needServer("PLAN_TEST_POSTGRES_DSN"); err != nil {
		return err
	}
	admin := os.Getenv("PLAN_TEST_POSTGRES_DSN")
	u, err := url.Parse(admin)
	if err != nil {
		return err
	}
	name := "plan_feature_" + randomName()
	if err := adminExec(admin, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return err
	}
	s.dbName, s.dbAdmin = name, admin
	u.Path = "/" + name
	if pw, ok := u.User.Password(); ok {
		// As a user would: the password in PGPASSWORD, never in the recorded DSN.
		if s.env == nil {
			s.env = map[string]string{}
		}
		s.env["PGPASSWORD"] = pw
		u.User = url.User(u.User.Username())
	}
	s.db = u.String()
	return nil
}

func (s *scenario) dropDatabase() error {
	if s.dbName == "" {
		return nil
	}
	name := s.dbName
	s.dbName = ""
	return adminExec(s.dbAdmin, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

func adminExec(dsn, stmt string) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect to the test database server: %w", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, stmt)
	return err
}

// theS3EndpointDoesNotAnswer points the scenario's commands at a port nothing listens on.
func (s *scenario) theS3EndpointDoesNotAnswer() error {
	if s.env == nil {
		return errors.New("no S3 store in this scenario")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	_ = l.Close()
	s.env["AWS_ENDPOINT_URL"] = "http://" + addr
	return nil
}

// theDatabaseDoesNotAnswer moves the workspace's recorded database to a port nothing listens on.
func (s *scenario) theDatabaseDoesNotAnswer() error {
	if s.db == "" {
		return errors.New("no shared database in this scenario")
	}
	p := filepath.Join(s.ws, ".plan", "config.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	u, err := url.Parse(s.db)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	closed := l.Addr().String()
	_ = l.Close()
	moved := strings.Replace(string(b), u.Host, closed, 1)
	if moved == string(b) {
		return fmt.Errorf("%s names no %s", p, u.Host)
	}
	return os.WriteFile(p, []byte(moved), 0o600)
}

// getenv is what the scenario's commands read for the AWS environment: the scenario's own values,
// and nothing from the test process for those names.
func (s *scenario) getenv(k string) string {
	if v, ok := s.env[k]; ok {
		return v
	}
	switch k {
	case ceilingVar:
		return s.root
	case dataVar:
		return s.dataDir()
	case "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION":
		return ""
	}
	return os.Getenv(k)
}

// processEnv is the environment of a plan process the scenario runs.
func (s *scenario) processEnv(base []string) []string {
	out := make([]string, 0, len(base)+len(s.env))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, mine := s.env[k]; !mine && k != ceilingVar && k != dataVar {
			out = append(out, kv)
		}
	}
	for k, v := range s.env {
		out = append(out, k+"="+v)
	}
	if _, mine := s.env[ceilingVar]; !mine {
		out = append(out, ceilingVar+"="+s.root)
	}
	if _, mine := s.env[dataVar]; !mine {
		out = append(out, dataVar+"="+s.dataDir())
	}
	return out
}

// dataVar gives each scenario a data directory of its own (where its workspaces keep their
// history): nothing a scenario does reaches the user's, nor another scenario's.
const dataVar = "PLAN_DATA_DIR"

// dataDir is the scenario's data directory.
func (s *scenario) dataDir() string { return filepath.Join(s.root, "data") }

// ceilingVar fences workspace discovery in the scenario's own directory: a .plan that some other
// run left in a directory above (/tmp) can never become a scenario's workspace.
const ceilingVar = "PLAN_CEILING_DIRECTORIES"

func (s *scenario) dirEquals(rel, name string) error {
	want, ok := s.snapshots[name]
	if !ok {
		return fmt.Errorf("no workspace state remembered as %q", name)
	}
	dir, err := s.expand(rel)
	if err != nil {
		return err
	}
	got, err := takeSnapshot(dir)
	if err != nil {
		return err
	}
	if diffs := treetest.Diff(want, got); len(diffs) > 0 {
		return fmt.Errorf("%s differs from %q:\n  %s", dir, name, treetest.Summary(diffs))
	}
	return nil
}

// theConfigurationAlsoSays appends settings to the workspace's .plan/config.yaml.
func (s *scenario) theConfigurationAlsoSays(doc *godog.DocString) error {
	p, err := s.path(".plan/config.yaml")
	if err != nil {
		return err
	}
	b, err := os.ReadFile(p) // #nosec G304 -- the scenario's own workspace
	if err != nil {
		return err
	}
	// A store: mapping (the disk budget) joins the store: URL the file may have, as its url.
	added := strings.TrimSuffix(doc.Content, "\n") + "\n"
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if url, ok := strings.CutPrefix(l, "store: "); ok && strings.HasPrefix(added, "store:\n") {
			lines = append(lines[:i], lines[i+1:]...)
			added = "store:\n  url: " + url + "\n" + strings.TrimPrefix(added, "store:\n")
			break
		}
	}
	return os.WriteFile(p, []byte(strings.Join(lines, "\n")+added), 0o600)
}

// storeDir is the directory of the scenario's file:// store.
func (s *scenario) storeDir() (string, error) {
	dir, ok := strings.CutPrefix(s.store, "file://")
	if !ok {
		return "", fmt.Errorf("the scenario's store %q is not a directory", s.store)
	}
	return dir, nil
}

func (s *scenario) theDescriptorIs(name, how string) error {
	dir, err := s.storeDir()
	if err != nil {
		return err
	}
	id, ok := s.ids[name]
	if !ok {
		return fmt.Errorf("no ID remembered as %q", name)
	}
	p := filepath.Join(dir, "workspaces", id+".json")
	if how == "removed" {
		return os.Remove(p)
	}
	return rewriteKeepingMode(p, func(f *os.File, _ int64) error {
		if err := f.Truncate(0); err != nil {
			return err
		}
		_, err := f.WriteAt([]byte("{not json"), 0)
		return err
	})
}

// sharedPacks lists the pack files of the scenario's file:// store (their indexes beside them).
func (s *scenario) sharedPacks() ([]string, error) {
	dir, err := s.storeDir()
	if err != nil {
		return nil, err
	}
	packs, err := filepath.Glob(filepath.Join(dir, "packs", "*.pack"))
	if err == nil && len(packs) == 0 {
		err = fmt.Errorf("no pack files in %s", dir)
	}
	return packs, err
}

func (s *scenario) iCorruptEverySharedPack() error {
	packs, err := s.sharedPacks()
	if err != nil {
		return err
	}
	for _, p := range packs {
		if err := flipMiddleByte(p); err != nil {
			return err
		}
	}
	return nil
}

// iDeleteEverySharedPack removes every pack and its index, as a gc elsewhere that went wrong, or
// a restore of the store from an older backup, would.
func (s *scenario) iDeleteEverySharedPack() error {
	packs, err := s.sharedPacks()
	if err != nil {
		return err
	}
	for _, p := range packs {
		if err := os.Remove(strings.TrimSuffix(p, ".pack") + ".idx"); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	return nil
}

// theDatabaseLosesEveryTable empties the scenario's database (as a restore of the wrong backup, or
// a DROP SCHEMA by mistake, would): the workspaces' rows and the schema are gone.
func (s *scenario) theDatabaseLosesEveryTable() error {
	if s.dbName == "" {
		return errors.New("no shared database in this scenario")
	}
	u, err := url.Parse(s.dbAdmin)
	if err != nil {
		return err
	}
	u.Path = "/" + s.dbName
	return adminExec(u.String(), "DROP SCHEMA public CASCADE; CREATE SCHEMA public")
}

// iRememberTheDSNWithPassword remembers the DSN of the scenario's database with the password in
// it, as a user might pass it to plan init.
func (s *scenario) iRememberTheDSNWithPassword(name string) error {
	pw := s.env["PGPASSWORD"]
	if s.db == "" || pw == "" {
		return errors.New("no shared database with a password in this scenario")
	}
	u, err := url.Parse(s.db)
	if err != nil {
		return err
	}
	u.User = url.UserPassword(u.User.Username(), pw)
	s.ids[name] = u.String()
	return nil
}

func (s *scenario) streamHasNoPassword(which string) error {
	if err := s.ran(); err != nil {
		return err
	}
	pw := s.env["PGPASSWORD"]
	if pw == "" {
		return errors.New("no database password in this scenario")
	}
	if strings.Contains(s.stream(which), pw) {
		return fmt.Errorf("%s of `%s` shows the database password:\n%s", which, s.cmdline, s.stream(which))
	}
	return nil
}
