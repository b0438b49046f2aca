package crash

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planhq/plan/domain/tree"
)

// The store trials kill `plan gc` and `plan checkpoint create` (at their failpoints and at random)
// and then hold the store to its promise: every checkpoint that exists verifies, reading every
// byte, and restores exactly what it recorded; a new checkpoint of a tree whose objects the killed
// gc was deleting restores too (no deduplication onto a broken delta or a deleted pack); `plan
// doctor` is clean once a command has held the lock.

// storeFixture is a workspace whose history leaves a gc real work: a directory of many files whose
// listing is stored as tree deltas, with checkpoints deleted so their packs become garbage.
type storeFixture struct {
	ws    string
	r     *rand.Rand
	round int
	kept  map[string][]tree.Entry // checkpoint ID -> the tree it recorded
}

func newStoreFixture(t *testing.T, seed uint64) *storeFixture {
	t.Helper()
	f := &storeFixture{ws: t.TempDir(), r: rand.New(rand.NewPCG(seed, 7)), kept: map[string][]tree.Entry{}}
	mustPlan(t, f.ws, "init")
	for i := range 120 {
		writeFile(t, filepath.Join(f.ws, "sub", fmt.Sprintf("f%03d", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644)
	}
	f.keep(t)
	return f
}

// keep records the live tree as a checkpoint that the trials keep.
func (f *storeFixture) keep(t *testing.T) string {
	t.Helper()
	id := createCheckpoint(t, f.ws, "kept")
	f.kept[id] = snapshotOf(t, f.ws)
	return id
}

// garbage makes checkpoints of changed trees (one file of sub/ changes, so its listing is stored as a
// delta, plus a random blob) and deletes them, so the next gc deletes or rewrites their packs.
func (f *storeFixture) garbage(t *testing.T) {
	t.Helper()
	for range 3 {
		f.round++
		writeFile(t, filepath.Join(f.ws, "sub", "changing"), []byte(fmt.Sprintf("round %d\n", f.round)), 0o644)
		blob := make([]byte, 20_000)
		for i := range blob {
			blob[i] = byte(f.r.Uint32())
		}
		writeFile(t, filepath.Join(f.ws, "blob.bin"), blob, 0o644)
		id := createCheckpoint(t, f.ws, "garbage")
		mustPlan(t, f.ws, "checkpoint", "delete", id)
	}
}

// check requires a store that keeps its promise after whatever was killed.
func (f *storeFixture) check(t *testing.T, context string) {
	t.Helper()
	// A mutating command first: it holds the lock, finishes an interrupted gc, clears tmp/.
	if r := runPlan(t, f.ws, nil, "--json", "checkpoint", "list"); r.code != 0 {
		t.Fatalf("%s: checkpoint list exit %d: %s", context, r.code, r.stderr)
	}
	if r := runPlan(t, f.ws, nil, "--json", "verify", "--read-data"); r.code != 0 {
		t.Fatalf("%s: verify --read-data exit %d:\n%s%s", context, r.code, r.stdout, r.stderr)
	}
	if r := runPlan(t, f.ws, nil, "doctor"); r.code != 0 {
		t.Fatalf("%s: doctor exit %d:\n%s%s", context, r.code, r.stdout, r.stderr)
	}
	// Every checkpoint listed verified; the ones with a known tree must restore exactly. Rolling
	// back to each is the expensive part, so one at random per trial, and all at the end.
	listed := listCheckpoints(t, f.ws)
	for id := range f.kept {
		if _, ok := listed[id]; !ok {
			t.Fatalf("%s: kept checkpoint %s is gone", context, id)
		}
	}
}

// restoreAll rolls back to every kept checkpoint and compares the workspace with what it recorded.
func (f *storeFixture) restoreAll(t *testing.T, context string) {
	t.Helper()
	for id, want := range f.kept {
		mustPlan(t, f.ws, "rollback", "--to-checkpoint", id, "--yes")
		requireSame(t, f.ws, want, context+": rollback to "+id)
	}
}

// recreate writes the tree of a deleted checkpoint again, checkpoints it and requires that the
// checkpoint restores: after a killed gc this is the deduplication that used to go wrong.
func (f *storeFixture) recreate(t *testing.T, context string) {
	t.Helper()
	writeFile(t, filepath.Join(f.ws, "sub", "changing"), []byte(fmt.Sprintf("round %d\n", f.round)), 0o644)
	id := f.keep(t)
	if r := runPlan(t, f.ws, nil, "verify", "--read-data", id); r.code != 0 {
		t.Fatalf("%s: the checkpoint of a re-created tree does not verify: %s%s", context, r.stdout, r.stderr)
	}
	if err := os.RemoveAll(filepath.Join(f.ws, "sub")); err != nil {
		t.Fatal(err)
	}
	mustPlan(t, f.ws, "rollback", "--to-checkpoint", id, "--yes")
	requireSame(t, f.ws, f.kept[id], context+": rollback to the re-created tree")
}

var gcFailpoints = []string{"gc.rewritten", "gc.intent", "gc.deleted-one", "store.pack-installed"}

func TestCrashGCAtEveryFailpoint(t *testing.T) {
	f := newStoreFixture(t, 1)
	for _, fp := range gcFailpoints {
		f.garbage(t)
		r := runPlan(t, f.ws, []string{"PLAN_FAILPOINT=" + fp}, "gc")
		if !r.killed && r.code != 0 {
			t.Fatalf("gc with failpoint %s: exit %d: %s", fp, r.code, r.stderr)
		}
		f.check(t, "gc killed at "+fp)
		f.recreate(t, "gc killed at "+fp)
	}
	f.restoreAll(t, "after the gc failpoints")
}

var createFailpoints = []string{"store.pack-installed", "checkpoint.stored"}

func TestCrashCheckpointCreateAtEveryFailpoint(t *testing.T) {
	f := newStoreFixture(t, 2)
	for _, fp := range createFailpoints {
		writeFile(t, filepath.Join(f.ws, "new", fp), []byte(strings.Repeat(fp, 1000)), 0o644)
		r := runPlan(t, f.ws, []string{"PLAN_FAILPOINT=" + fp}, "checkpoint", "create")
		if !r.killed {
			t.Fatalf("checkpoint create was not killed at %s: exit %d", fp, r.code)
		}
		f.check(t, "checkpoint create killed at "+fp)
		if n := len(entriesOf(t, stateFile(t, f.ws, "objects/tmp"))); n != 0 {
			t.Fatalf("%d files left in tmp/ after a command held the lock", n)
		}
		// The same content checkpointed again is stored (or found) whole and restores.
		id := f.keep(t)
		mustPlan(t, f.ws, "rollback", "--to-checkpoint", id, "--yes")
		requireSame(t, f.ws, f.kept[id], "after create killed at "+fp)
		f.garbage(t)
		mustPlan(t, f.ws, "gc")
	}
	f.restoreAll(t, "after the create failpoints")
}

// TestCrashStoreRandomKill kills gc and checkpoint create after a random delay.
func TestCrashStoreRandomKill(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("PLAN_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	f := newStoreFixture(t, seed)
	trials := max(crashTrials()/2, 6)
	t.Logf("PLAN_CRASH_SEED=%d, %d trials", seed, trials)
	// Calibrate: how long an uninterrupted gc and create take here.
	f.garbage(t)
	start := time.Now()
	mustPlan(t, f.ws, "gc")
	gcTime := time.Since(start)
	start = time.Now()
	f.keep(t)
	createTime := time.Since(start)
	tally := map[string]int{}
	for i := range trials {
		f.garbage(t)
		args, d := []string{"gc"}, gcTime
		if i%2 == 1 {
			writeFile(t, filepath.Join(f.ws, "new", strconv.Itoa(i)), []byte(strings.Repeat("x", 5000+i)), 0o644)
			args, d = []string{"checkpoint", "create"}, createTime
		}
		p := startPlan(t, f.ws, args...)
		time.Sleep(time.Duration(f.r.Int64N(int64(d) + 1)))
		_ = p.cmd.Process.Kill()
		r := p.wait(t)
		outcome := args[0] + " finished"
		if r.killed {
			outcome = args[0] + " killed"
		} else if r.code != 0 {
			t.Fatalf("trial %d: %v exit %d: %s", i, args, r.code, r.stderr)
		}
		tally[outcome]++
		f.check(t, fmt.Sprintf("trial %d (%s)", i, outcome))
		if i%3 == 0 {
			f.recreate(t, fmt.Sprintf("trial %d", i))
		}
	}
	f.restoreAll(t, "after the random kills")
	t.Logf("%d store kill trials, every checkpoint verified and restored; outcomes: %v", trials, tally)
}

// TestCrashConcurrentMixedCommands runs 8 processes of mixed commands against one workspace: each
// command exits 0, or 5 when it could not get the lock in time; never anything else. Afterwards the
// store verifies, reading every byte, and every surviving checkpoint restores what it recorded.
func TestCrashConcurrentMixedCommands(t *testing.T) {
	f := newStoreFixture(t, 3)
	for range 4 {
		f.keep(t)
	}
	perProc := max(crashTrials()*2, 25)
	const procs = 8
	var (
		mu    sync.Mutex
		tally = map[string]int{}
		fails []string
		wg    sync.WaitGroup
	)
	ids := make([]string, 0, len(f.kept))
	for id := range f.kept {
		ids = append(ids, id)
	}
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(p), 11))
			var mine []string // checkpoints this process created, for it to delete
			for range perProc {
				var args []string
				switch op := r.IntN(8); op {
				case 0:
					args = []string{"gc"}
				case 1:
					args = []string{"verify", "--read-data"}
				case 2:
					args = []string{"--json", "checkpoint", "create", "--note", "mixed"}
				case 3:
					args = []string{"rollback", "--to-checkpoint", ids[r.IntN(len(ids))], "--yes"}
				case 4:
					args = []string{"checkpoint", "list"}
				case 5:
					args = []string{"diff", ids[r.IntN(len(ids))]}
				case 6:
					if len(mine) == 0 {
						continue
					}
					args = []string{"checkpoint", "delete", mine[0]}
					mine = mine[1:]
				default:
					args = []string{"status"}
				}
				res := runPlan(t, f.ws, nil, args...)
				mu.Lock()
				tally[fmt.Sprintf("%s=%d", strings.TrimPrefix(strings.Join(args[:min(len(args), 2)], " "), "--json "), res.code)]++
				// status exits 4 until a plan has run: that is its answer, not a race.
				ok := res.code == 0 || res.code == 5 || (args[0] == "status" && res.code == 4)
				if !ok {
					fails = append(fails, fmt.Sprintf("%v: exit %d: %s", args, res.code, res.stderr))
				}
				if res.code == 0 && args[0] == "--json" {
					var cp cpView
					if json.Unmarshal([]byte(res.stdout), &cp) == nil && cp.ID != "" {
						// Not kept for restoreAll: it may be deleted; it must verify while it exists.
						mine = append(mine, cp.ID)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("mixed commands: %d processes x %d commands, every exit 0 or 5: %v", procs, perProc, tally)
	if len(fails) > 0 {
		t.Fatalf("%d command(s) exited other than 0 or 5:\n%s", len(fails), strings.Join(fails, "\n"))
	}
	f.check(t, "after the mixed commands")
	f.restoreAll(t, "after the mixed commands")
}

func entriesOf(t *testing.T, dir string) []os.DirEntry {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return des
}
