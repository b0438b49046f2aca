package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// sharedServers are the MinIO and PostgreSQL the shared-store phase runs against: those
// scripts/servers started for `make bench` (PLAN_TEST_*), or none.
type sharedServers struct {
	env   []string // the AWS environment a plan process needs
	admin string   // a superuser DSN, to make the phase's database
	// endpoint, access and secret reach MinIO, to remove the phase's bucket.
	endpoint, access, secret string
}

func sharedServersFromEnv() (sharedServers, bool) {
	endpoint, dsn := os.Getenv("PLAN_TEST_S3_ENDPOINT"), os.Getenv("PLAN_TEST_POSTGRES_DSN")
	if endpoint == "" || dsn == "" {
		return sharedServers{}, false
	}
	env := []string{
		"AWS_ENDPOINT_URL=" + endpoint, "AWS_ACCESS_KEY_ID=" + os.Getenv("PLAN_TEST_S3_ACCESS_KEY"),
		"AWS_SECRET_ACCESS_KEY=" + os.Getenv("PLAN_TEST_S3_SECRET_KEY"), "AWS_REGION=" + os.Getenv("PLAN_TEST_S3_REGION"),
	}
	if u, err := url.Parse(dsn); err == nil {
		if pw, ok := u.User.Password(); ok {
			env = append(env, "PGPASSWORD="+pw) // as a user gives it: the configuration never records it
		}
	}
	return sharedServers{admin: dsn, env: env, endpoint: endpoint,
		access: os.Getenv("PLAN_TEST_S3_ACCESS_KEY"), secret: os.Getenv("PLAN_TEST_S3_SECRET_KEY")}, true
}

// removeBucket removes the bucket a phase made (plan made it), with everything in it, so that
// runs do not pile up in MinIO; a bucket never made is fine.
func (s sharedServers) removeBucket(ctx context.Context, name string) {
	u, err := url.Parse(s.endpoint)
	if err != nil {
		return
	}
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(s.access, s.secret, ""), Secure: u.Scheme == "https"})
	if err != nil {
		return
	}
	_ = c.RemoveBucketWithOptions(ctx, name, minio.RemoveBucketOptions{ForceDelete: true})
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// database creates a throwaway database for the phase and returns its DSN and its removal.
func (s sharedServers) database(ctx context.Context) (string, func(), error) {
	name := "plan_bench_" + randomSuffix()
	exec := func(stmt string) error {
		conn, err := pgx.Connect(ctx, s.admin)
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close(ctx) }()
		_, err = conn.Exec(ctx, stmt)
		return err
	}
	if err := exec("CREATE DATABASE " + pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("create the benchmark's database: %w", err)
	}
	u, err := url.Parse(s.admin)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), func() { _ = exec("DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)") }, nil
}

// shared measures the generated workload on a shared store (S3 on MinIO, metadata on PostgreSQL,
// both on loopback) against the local default (objects and SQLite in the data directory), in the same run: the
// first checkpoint, a checkpoint after a 1% change, and a clone of the newest checkpoint into an
// empty directory (against a clone from a file:// store on the local disk).
func (b *bench) shared() error {
	srv, ok := sharedServersFromEnv()
	if !ok {
		b.logf("shared store: no MinIO and PostgreSQL (run it through `make bench`, which starts them): skipped")
		for _, r := range []struct{ id, name string }{
			{"shared_first", "shared store: first checkpoint"},
			{"shared_change", "shared store: " + b.changeLabel()},
			{"shared_clone", "shared store: clone"},
		} {
			b.rep.add(result{ID: r.id, Name: r.name, Unit: "ms", Status: statusNA, Note: "no MinIO and PostgreSQL to run against"})
		}
		return nil
	}
	dsn, drop, err := srv.database(b.ctx)
	if err != nil {
		return err
	}
	defer drop()
	dir := filepath.Join(b.base, "shared")
	w := planWorkload(filepath.Join(dir, "ws"), b.cfg.files, b.cfg.seed)
	if err := w.write(b.ctx); err != nil {
		return err
	}
	s, err := b.newSubject(dir, "shared_", "shared store: ", w, b.changedCount(len(w.files)))
	if err != nil {
		return err
	}
	bucket := "plan-bench-" + randomSuffix()
	defer srv.removeBucket(context.WithoutCancel(b.ctx), bucket)
	var localFirst, sharedFirst, localChange, sharedChange, fileClone, sharedClone []time.Duration
	timeCheckpoint := func(env []string) (time.Duration, string, error) {
		syscall.Sync()
		m, err := s.plan.r.run(s.ws, env, b.planBin, "-C", s.ws, "--json", "checkpoint", "create")
		if err != nil {
			return 0, "", fmt.Errorf("checkpoint create: %w", err)
		}
		cp, err := decodeCheckpoint(m.stdout)
		return m.wall, cp.ID, err
	}
	initWith := func(env []string, args ...string) (string, error) {
		// The history goes too: a directory that lost only its .plan/ is re-attached by init.
		if err := removeWorkspaceState(b.base, s.ws); err != nil {
			return "", err
		}
		m, err := s.plan.r.run(s.ws, env, b.planBin, append([]string{"-C", s.ws, "--json", "init"}, args...)...)
		if err != nil {
			return "", fmt.Errorf("init %v: %w", args, err)
		}
		var v struct {
			ID string `json:"workspace_id"`
		}
		return v.ID, json.Unmarshal(m.stdout, &v)
	}
	timeClone := func(env []string, store, db, ws string, k int) (time.Duration, error) {
		target := filepath.Join(dir, fmt.Sprintf("clone-%d", k))
		args := []string{"--json", "clone", "--store", store, "--workspace", ws}
		if db != "" {
			args = append(args, "--db", db)
		}
		syscall.Sync()
		m, err := s.plan.r.run(dir, env, b.planBin, append(args, target)...)
		if rmErr := os.RemoveAll(target); err == nil {
			err = rmErr
		}
		return m.wall, err
	}
	for i := range b.cfg.runs {
		round := uint64(1000 + i)
		// The local default.
		if _, err := initWith(nil); err != nil {
			return err
		}
		d, _, err := timeCheckpoint(nil)
		if err != nil {
			return err
		}
		localFirst = append(localFirst, d)
		if err := w.rewrite(b.ctx, w.pickChanges(s.changed, round), round); err != nil {
			return err
		}
		if d, _, err = timeCheckpoint(nil); err != nil {
			return err
		}
		localChange = append(localChange, d)
		// A file:// store on the local disk: the clone's baseline.
		fileStore := "file://" + filepath.Join(dir, fmt.Sprintf("file-store-%d", i))
		id, err := initWith(nil, "--store", fileStore)
		if err != nil {
			return err
		}
		if _, _, err := timeCheckpoint(nil); err != nil {
			return err
		}
		if d, err = timeClone(nil, fileStore, "", id, i); err != nil {
			return err
		}
		fileClone = append(fileClone, d)
		// S3 and PostgreSQL on loopback, a fresh prefix each run.
		store := fmt.Sprintf("s3://%s/run-%d", bucket, i)
		if id, err = initWith(srv.env, "--store", store, "--db", dsn); err != nil {
			return err
		}
		if d, _, err = timeCheckpoint(srv.env); err != nil {
			return err
		}
		sharedFirst = append(sharedFirst, d)
		round += 500
		if err := w.rewrite(b.ctx, w.pickChanges(s.changed, round), round); err != nil {
			return err
		}
		if d, _, err = timeCheckpoint(srv.env); err != nil {
			return err
		}
		sharedChange = append(sharedChange, d)
		if d, err = timeClone(srv.env, store, dsn, id, i); err != nil {
			return err
		}
		sharedClone = append(sharedClone, d)
		b.logf("shared store run %d: first %v (local %v), 1%% %v (local %v), clone %v (file:// %v)", i+1,
			sharedFirst[i].Round(time.Millisecond), localFirst[i].Round(time.Millisecond),
			sharedChange[i].Round(time.Millisecond), localChange[i].Round(time.Millisecond),
			sharedClone[i].Round(time.Millisecond), fileClone[i].Round(time.Millisecond))
	}
	b.rep.add(timeResult("shared_first", "shared store (S3+PostgreSQL): first checkpoint", sharedFirst, localFirst,
		"local default (data directory, SQLite)", "-", nil))
	b.rep.add(timeResult("shared_change", "shared store (S3+PostgreSQL): "+b.changeLabel(), sharedChange, localChange,
		"local default (data directory, SQLite)", "-", nil))
	b.rep.add(timeResult("shared_clone", "shared store (S3+PostgreSQL): clone of a checkpoint", sharedClone, fileClone,
		"clone from a file:// store on the local disk", "-", nil))
	return nil
}
