package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// sharedScaleFactor is the target of the shared store at scale: gc and `plan workspaces` with
// -clones clones of one workspace in the store at most this many times what they take on a fresh
// store of one workspace.
const sharedScaleFactor = 3.0

// sharedScale measures what a shared store (S3 on MinIO, metadata on PostgreSQL) costs once many
// clones have used it: `plan gc --grace 0s` in the cloned workspace and `plan workspaces`, with
// -clones clones of it made (each clone a permanent workspace of the store, its directory then
// removed), against the same two commands on a fresh store of one workspace, in the same run.
// Each is timed after a first gc, which the rows do not count (it writes the store's summary).
func (b *bench) sharedScale() error {
	rows := []struct{ id, name string }{
		{"shared_gc_scale", fmt.Sprintf("shared store (S3+PostgreSQL): gc --grace 0s at %d clones", b.cfg.clones)},
		{"shared_workspaces_scale", fmt.Sprintf("shared store (S3+PostgreSQL): plan workspaces at %d clones", b.cfg.clones)},
	}
	srv, ok := sharedServersFromEnv()
	if !ok {
		b.logf("shared store at scale: no MinIO and PostgreSQL (run it through `make bench`, which starts them): skipped")
		for _, r := range rows {
			b.rep.add(result{ID: r.id, Name: r.name, Unit: "ms", Status: statusNA, Note: "no MinIO and PostgreSQL to run against"})
		}
		return nil
	}
	dsn, drop, err := srv.database(b.ctx)
	if err != nil {
		return err
	}
	defer drop()
	dir := filepath.Join(b.base, "shared-scale")
	r, err := b.runnerFor(dir)
	if err != nil {
		return err
	}
	bucket := "plan-bench-" + randomSuffix()
	defer srv.removeBucket(context.WithoutCancel(b.ctx), bucket)
	// One small workspace per store: what is measured is the store's history, not its content.
	setup := func(name string) (ws, store, id string, err error) {
		ws = filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(ws, "src"), 0o750); err != nil {
			return "", "", "", err
		}
		for i := range 20 {
			if err := os.WriteFile(filepath.Join(ws, "src", fmt.Sprintf("f%02d.txt", i)), []byte(fmt.Sprintf("file %d of %s\n", i, name)), 0o600); err != nil {
				return "", "", "", err
			}
		}
		store = fmt.Sprintf("s3://%s/%s", bucket, name)
		m, err := r.run(ws, srv.env, b.planBin, "-C", ws, "--json", "init", "--store", store, "--db", dsn)
		if err != nil {
			return "", "", "", fmt.Errorf("init: %w", err)
		}
		var v struct {
			ID string `json:"workspace_id"`
		}
		if err := json.Unmarshal(m.stdout, &v); err != nil {
			return "", "", "", err
		}
		if _, err := r.quiet(ws, srv.env, b.planBin, "-C", ws, "checkpoint", "create"); err != nil {
			return "", "", "", fmt.Errorf("checkpoint create: %w", err)
		}
		return ws, store, v.ID, nil
	}
	freshWS, freshStore, _, err := setup("fresh")
	if err != nil {
		return err
	}
	ws, store, id, err := setup("cloned")
	if err != nil {
		return err
	}
	start := time.Now()
	for k := range b.cfg.clones {
		target := filepath.Join(dir, "clone")
		if _, err := r.quiet(dir, srv.env, b.planBin, "clone", "--store", store, "--db", dsn, "--workspace", id, target); err != nil {
			return fmt.Errorf("clone %d: %w", k+1, err)
		}
		if err := os.RemoveAll(target); err != nil {
			return err
		}
	}
	b.logf("shared store at scale: %d clones in %v", b.cfg.clones, time.Since(start).Round(time.Millisecond))
	gcIn := func(ws string) (time.Duration, error) {
		m, err := r.quiet(ws, srv.env, b.planBin, "-C", ws, "gc", "--grace", "0s")
		if err != nil {
			return 0, fmt.Errorf("gc: %w", err)
		}
		return m.wall, nil
	}
	list := func(store string) (time.Duration, error) {
		m, err := r.quiet(dir, srv.env, b.planBin, "--json", "workspaces", "--store", store, "--db", dsn)
		if err != nil {
			return 0, fmt.Errorf("workspaces: %w", err)
		}
		return m.wall, nil
	}
	// A first gc of each store, not counted (it writes the store's summary); then the two stores
	// in turn, so that whatever else the machine does weighs on both alike.
	for _, w := range []string{freshWS, ws} {
		if _, err := gcIn(w); err != nil {
			return err
		}
	}
	var gc, freshGC, lists, freshLists []time.Duration
	for range b.cfg.runs {
		for _, m := range []struct {
			to *[]time.Duration
			fn func() (time.Duration, error)
		}{
			{&freshGC, func() (time.Duration, error) { return gcIn(freshWS) }},
			{&gc, func() (time.Duration, error) { return gcIn(ws) }},
			{&freshLists, func() (time.Duration, error) { return list(freshStore) }},
			{&lists, func() (time.Duration, error) { return list(store) }},
		} {
			d, err := m.fn()
			if err != nil {
				return err
			}
			*m.to = append(*m.to, d)
		}
	}
	within := func(ours, base float64) bool { return ours <= sharedScaleFactor*base }
	target := fmt.Sprintf("<= %.0fx a fresh store", sharedScaleFactor)
	b.rep.add(timeResult(rows[0].id, rows[0].name, gc, freshGC, "gc --grace 0s on a fresh store (one workspace)", target, within))
	b.rep.add(timeResult(rows[1].id, rows[1].name, lists, freshLists, "plan workspaces of a fresh store (one workspace)", target, within))
	return nil
}
