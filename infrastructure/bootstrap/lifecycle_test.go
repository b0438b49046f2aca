package bootstrap_test

// The store lifecycle promises of issue 6, checked on the real adapters: retention plus gc brings
// the store back to about what the kept checkpoints need, and a single flipped byte anywhere in the
// store is noticed.

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

func openAt(t *testing.T, dir string, init bool) *bootstrap.App {
	t.Helper()
	app, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: dir, Init: init})
	if err != nil {
		t.Fatal(err)
	}
	return app
}

func storeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	entries, err := os.ReadDir(filepath.Join(dir, ".plan", "objects", "packs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// mutate rewrites a share of a tree of text files, as successive agent steps would.
func mutate(t *testing.T, dir string, rng *rand.Rand, step int) {
	t.Helper()
	for i := range 40 {
		if step > 0 && rng.IntN(4) != 0 {
			continue
		}
		p := filepath.Join(dir, fmt.Sprintf("d%d", i%5), fmt.Sprintf("f%d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		body := make([]byte, 0, 4096)
		for len(body) < 4000 {
			body = fmt.Appendf(body, "step %d line %d value %d\n", step, len(body), rng.IntN(1000000))
		}
		if err := os.WriteFile(p, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPruneAndGCShrinkToWhatTheKeptCheckpointsNeed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	app := openAt(t, dir, true)
	rng := rand.New(rand.NewPCG(1, 2)) //nolint:gosec // deterministic test data
	for step := range 50 {
		mutate(t, dir, rng, step)
		if _, err := app.Services.Checkpoints.Create(ctx, application.CreateRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	before := storeBytes(t, dir)
	pr, err := app.Services.Maintenance.Prune(ctx, application.PruneRequest{Keep: 5})
	if err != nil || len(pr.Kept) != 5 || len(pr.Deleted) != 45 {
		t.Fatalf("prune: %+v, %v", pr, err)
	}
	if _, err := app.Services.Maintenance.GC(ctx); err != nil {
		t.Fatal(err)
	}
	after := storeBytes(t, dir)

	// What the five kept checkpoints need: a fresh store that recorded only their trees.
	kept := make([]*checkpoint.Checkpoint, 0, 5)
	for i := len(pr.Kept) - 1; i >= 0; i-- {
		cp, err := app.Services.Checkpoints.Resolve(ctx, string(pr.Kept[i]))
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, cp)
	}
	fresh := t.TempDir()
	freshApp := openAt(t, fresh, true)
	for _, cp := range kept {
		// Roll the original workspace to the kept checkpoint (this also proves it is still exact),
		// copy its files into the fresh workspace and checkpoint them there.
		if _, err := app.Services.Checkpoints.Rollback(ctx, application.RollbackRequest{Ref: string(cp.ID())}); err != nil {
			t.Fatalf("rollback to kept %s after gc: %v", cp.ID(), err)
		}
		entries, err := app.Services.Checkpoints.Entries(ctx, cp)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			src := filepath.Join(dir, e.Path)
			dst := filepath.Join(fresh, e.Path)
			if e.Kind.String() == "dir" {
				if err := os.MkdirAll(dst, 0o755); err != nil {
					t.Fatal(err)
				}
				continue
			}
			b, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != e.Hash.String() {
				t.Fatalf("after gc, rollback to %s left %s with %s, want %s", cp.ID(), e.Path, got, e.Hash)
			}
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := freshApp.Services.Checkpoints.Create(ctx, application.CreateRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	need := storeBytes(t, fresh)
	_ = freshApp.Close()
	_ = app.Close()
	t.Logf("store: %d bytes for 50 checkpoints, %d after prune --keep 5 + gc; the 5 kept need %d (%.2fx)",
		before, after, need, float64(after)/float64(need))
	if float64(after) > 1.2*float64(need) {
		t.Fatalf("after prune + gc the store holds %d bytes, more than 1.2x the %d the kept checkpoints need", after, need)
	}
}

// Every byte of every pack and index is flipped in turn (a sample on larger files). Each flip must
// be reported (the store refuses to open, or verify --read-data names a problem) or be provably
// harmless: every checkpoint still reads back byte-exact. The second case exists because a few
// bytes of a zstd frame header (such as the window size) do not change what the frame decodes to;
// noticing those too needs a checksum over the stored bytes, which the pack format does not have.
func TestEveryFlippedByteIsReportedOrHarmless(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	app := openAt(t, dir, true)
	rng := rand.New(rand.NewPCG(3, 4)) //nolint:gosec // deterministic test data
	for step := range 3 {
		mutate(t, dir, rng, step)
		if _, err := app.Services.Checkpoints.Create(ctx, application.CreateRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[checkpoint.ID]map[string]string{}
	cps, err := app.Services.Checkpoints.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range cps {
		entries, err := app.Services.Checkpoints.Entries(ctx, cp)
		if err != nil {
			t.Fatal(err)
		}
		want[cp.ID()] = map[string]string{}
		for _, e := range entries {
			want[cp.ID()][e.Path] = e.Hash.String()
		}
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	packs, err := filepath.Glob(filepath.Join(dir, ".plan", "objects", "packs", "*"))
	if err != nil || len(packs) == 0 {
		t.Fatalf("no packs: %v", err)
	}
	flips, harmless := 0, 0
	for _, p := range packs {
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
		step := max(1, len(orig)/150)
		for off := 0; off < len(orig); off += step {
			damaged := append([]byte(nil), orig...)
			damaged[off] ^= 0x5a
			if err := os.WriteFile(p, damaged, 0o600); err != nil {
				t.Fatal(err)
			}
			flips++
			if !noticed(ctx, dir) {
				if problem := readsBackExactly(ctx, dir, want); problem != "" {
					t.Errorf("a flipped byte at %s+%d went unnoticed and changed content: %s", filepath.Base(p), off, problem)
				}
				harmless++
			}
		}
		if err := os.WriteFile(p, orig, 0o400); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d single-byte flips across %d pack and index files: %d reported, %d harmless (content intact)",
		flips, len(packs), flips-harmless, harmless)
	if noticed(ctx, dir) {
		t.Fatal("the restored store is reported damaged")
	}
}

// noticed opens the workspace and verifies every object's content; damage must surface as an
// integrity error at open or as verify problems.
func noticed(ctx context.Context, dir string) bool {
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: dir})
	if err != nil {
		return errors.Is(err, fault.ErrIntegrity)
	}
	defer func() { _ = app.Close() }()
	res, err := app.Services.Maintenance.Verify(ctx, "", true)
	if err != nil {
		return errors.Is(err, fault.ErrIntegrity)
	}
	return len(res.Problems) > 0
}

// readsBackExactly checks every checkpoint's tree and every file's content against want; it
// returns the first difference, or "".
func readsBackExactly(ctx context.Context, dir string, want map[checkpoint.ID]map[string]string) string {
	app, err := bootstrap.Open(ctx, bootstrap.Config{Root: dir})
	if err != nil {
		return err.Error()
	}
	defer func() { _ = app.Close() }()
	svc := app.Services.Checkpoints
	for id, files := range want {
		cp, err := svc.Resolve(ctx, string(id))
		if err != nil {
			return err.Error()
		}
		entries, err := svc.Entries(ctx, cp)
		if err != nil {
			return err.Error()
		}
		if len(entries) != len(files) {
			return fmt.Sprintf("checkpoint %s lists %d entries, want %d", id, len(entries), len(files))
		}
		for _, e := range entries {
			if files[e.Path] != e.Hash.String() {
				return fmt.Sprintf("checkpoint %s: %s changed", id, e.Path)
			}
			if e.Kind.String() != "file" {
				continue
			}
			rc, err := svc.OpenContent(e, false)
			if err != nil {
				return err.Error()
			}
			h := sha256.New()
			_, err = io.Copy(h, rc)
			_ = rc.Close()
			if err != nil || fmt.Sprintf("%x", h.Sum(nil)) != e.Hash.String() {
				return fmt.Sprintf("checkpoint %s: %s reads back wrong (%v)", id, e.Path, err)
			}
		}
	}
	return ""
}
