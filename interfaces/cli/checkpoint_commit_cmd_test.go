package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// committedRecords counts the store's committed records: one per durable transaction.
func committedRecords(t *testing.T, dir string) int {
	t.Helper()
	des, err := os.ReadDir(filepath.Join(stateOf(t, dir).Objects(), "records"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, de := range des {
		if !de.IsDir() {
			n++
		}
	}
	return n
}

// A no-change checkpoint and its operation log entry are one durable write: one transaction, one
// record; the log entry names the checkpoint.
func TestCheckpointCreateIsOneDurableWrite(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a")
	createCheckpoint(t, dir)
	before := committedRecords(t, dir)
	id := createCheckpoint(t, dir, "--note", "again")
	if got := committedRecords(t, dir) - before; got != 1 {
		t.Fatalf("records written by a no-change checkpoint: %d, want 1", got)
	}
	o := mustPlan(t, dir, "--json", "history", "--limit", "1")
	if !strings.Contains(o.stdout, `"kind": "checkpoint"`) || !strings.Contains(o.stdout, id) || !strings.Contains(o.stdout, `"outcome": "ok"`) {
		t.Fatalf("log entry: %s", o.stdout)
	}
}

type brokenPipe struct{}

func (brokenPipe) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// A checkpoint whose command then fails (its output could not be written) keeps its checkpoint, and
// its folded log entry is replaced with the outcome the command ended with.
func TestCheckpointCreateThatFailsAfterItsCommitIsLoggedAsItEnded(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a")
	r := Runner{Stdout: brokenPipe{}, Stderr: &strings.Builder{}, Stdin: strings.NewReader("")}
	if code := r.Run(context.Background(), []string{"plan", "-C", dir, "--json", "checkpoint", "create"}); code == ExitOK {
		t.Fatal("a command whose output failed exited 0")
	}
	o := mustPlan(t, dir, "--json", "history", "--limit", "1")
	if !strings.Contains(o.stdout, `"kind": "checkpoint"`) || strings.Contains(o.stdout, `"outcome": "ok"`) {
		t.Fatalf("log entry: %s", o.stdout)
	}
	if l := mustPlan(t, dir, "--json", "checkpoint", "list"); strings.Count(l.stdout, `"id"`) != 1 {
		t.Fatalf("checkpoints: %s", l.stdout)
	}
	if n := strings.Count(mustPlan(t, dir, "--json", "history").stdout, `"kind": "checkpoint"`); n != 1 {
		t.Fatalf("checkpoint entries: %d, want the folded one replaced", n)
	}
}

// Text output is written at once; output that cannot be written is a failure, as a JSON document
// that cannot be is.
func TestTextOutputThatCannotBeWrittenFails(t *testing.T) {
	dir := newWorkspace(t)
	createCheckpoint(t, dir)
	r := Runner{Stdout: brokenPipe{}, Stderr: &strings.Builder{}, Stdin: strings.NewReader("")}
	if code := r.Run(context.Background(), []string{"plan", "-C", dir, "checkpoint", "list"}); code == ExitOK {
		t.Fatal("a listing that could not be written exited 0")
	}
}

// PLAN_TIMINGS=1 reports the command's phases on stderr once it ended; stdout is unchanged.
func TestTimingsReportThePhases(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a")
	var out, errOut strings.Builder
	timings := func(v string) func(string) string {
		return withDataDir(func(k string) string {
			if k == "PLAN_TIMINGS" {
				return v
			}
			return ""
		})
	}
	r := Runner{Stdout: &out, Stderr: &errOut, Stdin: strings.NewReader(""), Getenv: timings("1")}
	if code := r.Run(context.Background(), []string{"plan", "-C", dir, "--json", "checkpoint", "create"}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	line := errOut.String()
	for _, phase := range []string{`"total"`, `"open"`, `"open.config"`, `"open.store"`, `"open.db"`, `"open.db.schema"`, `"open.db.ledger"`, `"lock"`, `"commit"`, `"commit.record"`, `"close"`} {
		if !strings.Contains(line, phase+": ") {
			t.Errorf("no %s in %q", phase, line)
		}
	}
	if !strings.HasPrefix(out.String(), "{") || strings.Contains(out.String(), "timings") {
		t.Fatalf("stdout: %q", out.String())
	}
	r.Getenv = timings("0")
	errOut.Reset()
	if code := r.Run(context.Background(), []string{"plan", "-C", dir, "checkpoint", "list"}); code != ExitOK || strings.Contains(errOut.String(), "timings") {
		t.Fatalf("PLAN_TIMINGS=0: exit %d, %q", code, errOut.String())
	}
}
