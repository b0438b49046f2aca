package crash

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/planhq/plan/application"
	"github.com/planhq/plan/domain/checkpoint"
	"github.com/planhq/plan/domain/tree"
	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/tests/testkit"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// model is the in-memory expectation of a workspace: what the test wrote, path by path. Every
// change goes to the disk and to the model together; plan's scanner is never consulted to build it.
type model struct {
	t       *testing.T
	r       *rand.Rand
	root    string
	outside string // a directory outside the workspace that symlinks point into
	nodes   map[string]tree.Entry
}

func newModel(t *testing.T, seed uint64) *model {
	t.Helper()
	root := t.TempDir()
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "sentinel"), []byte("must never change"), 0o644)
	m := &model{t: t, r: rand.New(rand.NewPCG(seed, seed^0x5eed)), root: root, outside: outside, nodes: map[string]tree.Entry{}}
	// Ignored data lives in /ignored: in no snapshot, and never touched by a rollback.
	m.writeFile(".planignore", []byte("/ignored/\n"), 0o644)
	writeFile(t, filepath.Join(root, "ignored", "data"), []byte("ignored data"), 0o600)
	writeFile(t, filepath.Join(root, "ignored", "sub", "more"), []byte("more ignored data"), 0o644)
	return m
}

// ignored are the paths the workspace's .planignore excludes.
var ignored = map[string]bool{"ignored": true}

func (m *model) live() []tree.Entry { return snapshotExcept(m.t, m.root, ignored) }

func (m *model) requireIgnoredUntouched() {
	m.t.Helper()
	for p, want := range map[string]string{"ignored/data": "ignored data", "ignored/sub/more": "more ignored data"} {
		if b, err := os.ReadFile(filepath.Join(m.root, p)); err != nil || string(b) != want {
			m.t.Fatalf("ignored file %s changed: %q %v", p, b, err)
		}
	}
}

func (m *model) abs(p string) string { return filepath.Join(m.root, filepath.FromSlash(p)) }

// entries is the model as an ordered entry list.
func (m *model) entries() []tree.Entry {
	out := make([]tree.Entry, 0, len(m.nodes))
	for _, e := range m.nodes {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b tree.Entry) int { return tree.Compare(a.Path, b.Path) })
	return out
}

func (m *model) load(entries []tree.Entry) {
	m.nodes = make(map[string]tree.Entry, len(entries))
	for _, e := range entries {
		m.nodes[e.Path] = e
	}
}

// paths lists the model's paths of the given kinds, sorted (map order must not leak into the
// seeded sequence). .planignore is left out: random edits must not change what is ignored.
func (m *model) paths(kinds ...tree.Kind) []string {
	var out []string
	for p, e := range m.nodes {
		if p != ".planignore" && slices.Contains(kinds, e.Kind) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func (m *model) pick(kinds ...tree.Kind) (string, bool) {
	ps := m.paths(kinds...)
	if len(ps) == 0 {
		return "", false
	}
	return ps[m.r.IntN(len(ps))], true
}

var names = []string{"a", "b", "c", "a-b", "a.b", "d"}

// randomPath returns a path of depth 1-3 over a small name space, so that files, directories and
// symlinks keep colliding on the same paths.
func (m *model) randomPath() string {
	parts := make([]string, 1+m.r.IntN(3))
	for i := range parts {
		parts[i] = names[m.r.IntN(len(names))]
	}
	return strings.Join(parts, "/")
}

func (m *model) fail(err error) {
	m.t.Helper()
	if err != nil {
		m.t.Fatal(err)
	}
}

// remove deletes p and everything under it, on disk and in the model.
func (m *model) remove(p string) {
	m.fail(os.RemoveAll(m.abs(p)))
	for q := range m.nodes {
		if q == p || strings.HasPrefix(q, p+"/") {
			delete(m.nodes, q)
		}
	}
}

// ensureParents makes every ancestor of p a real directory, replacing files and symlinks in the way.
func (m *model) ensureParents(p string) {
	for i := range len(p) {
		if p[i] != '/' {
			continue
		}
		dir := p[:i]
		if e, ok := m.nodes[dir]; ok && e.Kind == tree.KindDir {
			continue
		} else if ok {
			m.remove(dir)
		}
		m.fail(os.Mkdir(m.abs(dir), 0o755))
		m.fail(os.Chmod(m.abs(dir), 0o755))
		m.nodes[dir] = tree.Entry{Path: dir, Kind: tree.KindDir, Mode: 0o755}
	}
}

// clearFor makes room for a new entry of kind at p.
func (m *model) clearFor(p string, kind tree.Kind) {
	m.ensureParents(p)
	if e, ok := m.nodes[p]; ok && (e.Kind != kind || kind == tree.KindSymlink) {
		m.remove(p)
	}
}

var fileModes = []uint32{0o644, 0o644, 0o755, 0o600, 0o400, 0o4755, 0o640}
var dirModes = []uint32{0o755, 0o755, 0o700, 0o750, 0o2755, 0o1777}

func (m *model) content() []byte {
	// Reuse another file's content now and then: dedup must not confuse paths.
	if files := m.paths(tree.KindFile); len(files) > 0 && m.r.IntN(5) == 0 {
		b, err := os.ReadFile(m.abs(files[m.r.IntN(len(files))]))
		m.fail(err)
		return b
	}
	var n int
	switch x := m.r.IntN(100); {
	case x < 12:
		n = 0
	case x < 70:
		n = m.r.IntN(300)
	case x < 96:
		n = m.r.IntN(30_000)
	default:
		n = 100_000 + m.r.IntN(300_000)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(m.r.UintN(256))
	}
	return b
}

func (m *model) writeFile(p string, data []byte, mode uint32) {
	m.clearFor(p, tree.KindFile)
	if _, ok := m.nodes[p]; ok {
		m.fail(os.Chmod(m.abs(p), 0o600)) // writable whatever the old mode, without root too
	}
	m.fail(os.WriteFile(m.abs(p), data, 0o600))
	m.fail(os.Chmod(m.abs(p), tree.GoMode(mode)))
	m.nodes[p] = tree.Entry{Path: p, Kind: tree.KindFile, Mode: mode, Size: int64(len(data)), Hash: sha256.Sum256(data)}
}

func (m *model) mkdir(p string, mode uint32) {
	m.clearFor(p, tree.KindDir)
	if _, ok := m.nodes[p]; !ok {
		m.fail(os.Mkdir(m.abs(p), 0o700))
	}
	m.fail(os.Chmod(m.abs(p), tree.GoMode(mode)))
	m.nodes[p] = tree.Entry{Path: p, Kind: tree.KindDir, Mode: mode}
}

func (m *model) symlink(p, target string) {
	m.clearFor(p, tree.KindSymlink)
	m.fail(os.Symlink(target, m.abs(p)))
	m.nodes[p] = tree.Entry{Path: p, Kind: tree.KindSymlink, Mode: 0o777, Target: target}
}

// editInPlace rewrites a file's bytes keeping its size, inode and mtime: only ctime tells.
func (m *model) editInPlace(p string) {
	e := m.nodes[p]
	if e.Size == 0 {
		return
	}
	fi, err := os.Stat(m.abs(p))
	m.fail(err)
	b, err := os.ReadFile(m.abs(p))
	m.fail(err)
	b[m.r.IntN(len(b))]++
	m.fail(os.Chmod(m.abs(p), 0o600))
	f, err := os.OpenFile(m.abs(p), os.O_WRONLY, 0)
	m.fail(err)
	_, err = f.WriteAt(b, 0)
	m.fail(err)
	m.fail(f.Close())
	m.fail(os.Chmod(m.abs(p), tree.GoMode(e.Mode)))
	m.fail(os.Chtimes(m.abs(p), fi.ModTime(), fi.ModTime()))
	e.Hash = sha256.Sum256(b)
	m.nodes[p] = e
}

// mutate applies one random change.
func (m *model) mutate() string {
	switch op := m.r.IntN(100); {
	case op < 30:
		p := m.randomPath()
		m.writeFile(p, m.content(), fileModes[m.r.IntN(len(fileModes))])
		return "write " + p
	case op < 40:
		if p, ok := m.pick(tree.KindFile); ok {
			m.editInPlace(p)
			return "edit in place " + p
		}
	case op < 50:
		if p, ok := m.pick(tree.KindFile, tree.KindSymlink); ok {
			m.remove(p)
			return "delete " + p
		}
	case op < 58:
		p := m.randomPath()
		m.mkdir(p, dirModes[m.r.IntN(len(dirModes))])
		return "mkdir " + p
	case op < 63:
		if p, ok := m.pick(tree.KindDir); ok {
			m.remove(p)
			return "remove dir " + p
		}
	case op < 72:
		if p, ok := m.pick(tree.KindFile); ok {
			mode := fileModes[m.r.IntN(len(fileModes))]
			m.fail(os.Chmod(m.abs(p), tree.GoMode(mode)))
			e := m.nodes[p]
			e.Mode = mode
			m.nodes[p] = e
			return "chmod " + p
		}
	case op < 77:
		if p, ok := m.pick(tree.KindDir); ok {
			m.mkdir(p, dirModes[m.r.IntN(len(dirModes))])
			return "chmod dir " + p
		}
	default:
		p := m.randomPath()
		targets := []string{names[m.r.IntN(len(names))], "../" + names[m.r.IntN(len(names))], "/nonexistent/x", m.outside, m.outside + "/sentinel"}
		if q, ok := m.pick(tree.KindDir, tree.KindFile); ok {
			targets = append(targets, q)
		}
		m.symlink(p, targets[m.r.IntN(len(targets))])
		return "symlink " + p
	}
	return "nothing"
}

// bigFile writes a file larger than the scanner's in-memory limit, so its streaming path runs.
func (m *model) bigFile(p string) {
	data := make([]byte, 8<<20+1+m.r.IntN(4096))
	chunk := make([]byte, 4096)
	for i := range chunk {
		chunk[i] = byte(m.r.UintN(256))
	}
	for i := 0; i < len(data); i += len(chunk) {
		copy(data[i:], chunk)
	}
	copy(data, strconv.FormatUint(m.r.Uint64(), 16)) // distinct from any earlier big file
	m.writeFile(p, data, 0o644)
}

func (m *model) requireOutsideUntouched() {
	m.t.Helper()
	des, err := os.ReadDir(m.outside)
	m.fail(err)
	b, err := os.ReadFile(filepath.Join(m.outside, "sentinel"))
	if len(des) != 1 || err != nil || string(b) != "must never change" {
		m.t.Fatalf("the directory outside the workspace changed: %d entries, sentinel %q %v", len(des), b, err)
	}
}

func openApp(t *testing.T, root string) *application.CheckpointService {
	t.Helper()
	// The workspace's history goes to the test's data directory, never to the user's.
	app, err := bootstrap.Open(context.Background(), bootstrap.Config{Root: root, Init: true, Getenv: testkit.Getenv(t)})
	if err != nil {
		t.Fatalf("bootstrap.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := app.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return app.Services.Checkpoints
}

type saved struct {
	id   checkpoint.ID
	want []tree.Entry
	why  string
}

// harness drives the real checkpoint service against a model.
type harness struct {
	*model
	svc    *application.CheckpointService
	saved  []saved
	counts map[checkpoint.ID]int
	log    []string
}

func newHarness(t *testing.T, seed uint64) *harness {
	m := newModel(t, seed)
	return &harness{model: m, svc: openApp(t, m.root), counts: map[checkpoint.ID]int{}}
}

func (h *harness) checkpoint() saved {
	h.t.Helper()
	want := h.entries()
	if d := treetest.Diff(want, h.live()); len(d) > 0 {
		h.t.Fatalf("harness sanity before a checkpoint:\n  %s", treetest.Summary(d))
	}
	cp, err := h.svc.Create(context.Background(), application.CreateRequest{Note: fmt.Sprintf("step %d", len(h.log))})
	if err != nil {
		h.t.Fatalf("checkpoint: %v\nlog: %s", err, h.history())
	}
	got, err := h.svc.Entries(context.Background(), cp)
	if err != nil {
		h.t.Fatal(err)
	}
	if d := treetest.Diff(want, got); len(d) > 0 {
		h.t.Fatalf("checkpoint %s does not record the workspace:\n  %s\nlog: %s", cp.ID(), treetest.Summary(d), h.history())
	}
	s := saved{id: cp.ID(), want: want, why: "manual"}
	h.saved = append(h.saved, s)
	h.log = append(h.log, "checkpoint "+string(cp.ID()))
	return s
}

func (h *harness) rollback(to saved) application.RollbackResult {
	h.t.Helper()
	before := h.entries()
	res, err := h.svc.Rollback(context.Background(), application.RollbackRequest{Ref: string(to.id)})
	h.log = append(h.log, fmt.Sprintf("rollback to %s (%s)", to.id, to.why))
	if err != nil {
		h.t.Fatalf("rollback to %s: %v\nlog: %s", to.id, err, h.history())
	}
	if d := treetest.Diff(to.want, h.live()); len(d) > 0 {
		h.t.Fatalf("after rollback to %s (%s) the workspace differs in %d ways:\n  %s\nlog: %s",
			to.id, to.why, len(d), treetest.Summary(d), h.history())
	}
	h.load(to.want)
	h.requireIgnoredUntouched()
	h.counts[to.id]++
	if want := application.Count(tree.Diff(before, to.want)); res.Counts != want {
		h.t.Errorf("rollback to %s reports %+v, the model says %+v", to.id, res.Counts, want)
	}
	if res.Backup == nil || res.Backup.Type() != checkpoint.PreRollback {
		h.t.Fatalf("rollback backup %+v", res.Backup)
	}
	h.saved = append(h.saved, saved{id: res.Backup.ID(), want: before, why: "pre_rollback"})
	// plan's own view agrees: nothing differs between the checkpoint and the live workspace.
	diff, err := h.svc.Diff(context.Background(), string(to.id), "", nil)
	if err != nil {
		h.t.Fatal(err)
	}
	if len(diff.Changes) != 0 {
		h.t.Fatalf("plan diff %s after rolling back to it: %d changes, first %s %s", to.id, len(diff.Changes), diff.Changes[0].Type, diff.Changes[0].Path)
	}
	return res
}

func (h *harness) history() string {
	start := max(0, len(h.log)-25)
	return "…\n    " + strings.Join(h.log[start:], "\n    ")
}

func (h *harness) requireCounts() {
	h.t.Helper()
	list, err := h.svc.List(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	for _, cp := range list {
		if cp.RollbackCount() != h.counts[cp.ID()] {
			h.t.Errorf("checkpoint %s: rollback_count %d, want %d", cp.ID(), cp.RollbackCount(), h.counts[cp.ID()])
		}
	}
}

func seedsFromEnv(t *testing.T, def ...uint64) []uint64 {
	if s := os.Getenv("PLAN_MODEL_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("PLAN_MODEL_SEED: %v", err)
		}
		return []uint64{v}
	}
	return def
}

func stepsFromEnv(def int) int {
	if n, err := strconv.Atoi(os.Getenv("PLAN_MODEL_STEPS")); err == nil && n > 0 {
		return n
	}
	return def
}

// TestModelRandomWorkload: a seeded random sequence of writes, in-place edits, deletes, directory
// changes, chmods, symlinks (some pointing outside the workspace), checkpoints and rollbacks to
// random earlier checkpoints (pre_rollback ones included); after every rollback the workspace must
// equal the remembered tree exactly. PLAN_MODEL_SEED and PLAN_MODEL_STEPS override the defaults.
func TestModelRandomWorkload(t *testing.T) {
	for _, seed := range seedsFromEnv(t, 1, 2, 3) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			h := newHarness(t, seed)
			steps := stepsFromEnv(250)
			rollbacks := 0
			for step := range steps {
				switch x := h.r.IntN(100); {
				case step == 10 && seed == 1:
					h.bigFile("big/blob")
					h.log = append(h.log, "big file")
				case step == 40 && seed == 1:
					h.bigFile("big/blob") // same size range, new content: the stream path again
					h.log = append(h.log, "big file rewritten")
				case x < 12 || len(h.saved) == 0:
					h.checkpoint()
				case x < 22:
					h.rollback(h.saved[h.r.IntN(len(h.saved))])
					rollbacks++
				default:
					h.log = append(h.log, h.mutate())
				}
			}
			h.checkpoint()
			h.rollback(h.saved[0])
			h.requireOutsideUntouched()
			h.requireCounts()
			t.Logf("seed %d: %d steps, %d checkpoints kept, %d rollbacks", seed, steps, len(h.saved), rollbacks+1)
		})
	}
}

// TestRollbackToEachOfTenCheckpoints: rolling back to each of 10 checkpoints of a randomly mutated
// tree reproduces each exactly, in any order.
func TestRollbackToEachOfTenCheckpoints(t *testing.T) {
	h := newHarness(t, 42)
	var cps []saved
	for range 10 {
		for range 8 + h.r.IntN(10) {
			h.log = append(h.log, h.mutate())
		}
		cps = append(cps, h.checkpoint())
	}
	for i := range cps {
		h.rollback(cps[i])
	}
	for _, i := range h.r.Perm(len(cps)) {
		h.rollback(cps[i])
	}
	for i := len(cps) - 1; i >= 0; i-- {
		h.rollback(cps[i])
	}
	h.requireCounts()
	for _, c := range cps {
		if h.counts[c.id] != 3 {
			t.Errorf("checkpoint %s rolled back to %d times", c.id, h.counts[c.id])
		}
	}
	h.requireOutsideUntouched()
}

// TestRollbackToBackupUndoesRollback: every rollback can be undone by rolling back to its
// pre_rollback checkpoint, which restores exactly the state before the rollback.
func TestRollbackToBackupUndoesRollback(t *testing.T) {
	h := newHarness(t, 7)
	for range 20 {
		h.mutate()
	}
	target := h.checkpoint()
	for range 30 {
		h.mutate()
	}
	h.editInPlaceAll()
	before := h.entries()
	res := h.rollback(target)
	if res.Backup.Note() == "" || !strings.Contains(res.Backup.Note(), string(target.id)) {
		t.Errorf("backup note %q does not name the target", res.Backup.Note())
	}
	undo := h.saved[len(h.saved)-1]
	if undo.id != res.Backup.ID() {
		t.Fatal("harness bookkeeping")
	}
	h.rollback(undo)
	if d := treetest.Diff(before, h.live()); len(d) > 0 {
		t.Fatalf("after rolling back to the pre_rollback checkpoint:\n  %s", treetest.Summary(d))
	}
	// And the undo can be undone in turn.
	h.rollback(h.saved[len(h.saved)-1])
	if d := treetest.Diff(target.want, h.live()); len(d) > 0 {
		t.Fatalf("after undoing the undo:\n  %s", treetest.Summary(d))
	}
	h.requireCounts()
}

// editInPlaceAll edits every file in place (same size, same mtime).
func (m *model) editInPlaceAll() {
	for _, p := range m.paths(tree.KindFile) {
		m.editInPlace(p)
	}
}
