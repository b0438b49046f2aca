package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// history is every view of a workspace's history a user reads, as JSON.
func history(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, args := range [][]string{
		{"checkpoint", "list"}, {"status"}, {"plans"}, {"correction", "list"}, {"log"},
	} {
		out[strings.Join(args, " ")] = mustPlan(t, dir, append([]string{"--json"}, args...)...).stdout
	}
	var corrections []struct {
		ID string `json:"correction_id"`
	}
	if err := json.Unmarshal([]byte(out["correction list"]), &corrections); err != nil {
		t.Fatal(err)
	}
	for _, c := range corrections {
		out["correction show "+c.ID] = mustPlan(t, dir, "--json", "correction", "show", c.ID).stdout
	}
	var cps []struct{ ID string }
	if err := json.Unmarshal([]byte(out["checkpoint list"]), &cps); err != nil {
		t.Fatal(err)
	}
	for _, c := range cps {
		out["checkpoint show "+c.ID] = mustPlan(t, dir, "--json", "checkpoint", "show", c.ID).stdout
	}
	return out
}

// The promise: delete .plan/plan.db* after a plan run, a correction, a few manual
// checkpoints, a rollback and a checkpoint delete; `plan doctor --rebuild` brings all of it back,
// field for field, nothing deleted comes back, and every rollback works.
func TestDoctorRebuildBringsBackTheHistory(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "src/main.go", "package main\n")
	first := createCheckpoint(t, dir, "--note", "first")
	writeFile(t, dir, "plan.yaml", `name: build
decisions:
  - id: gen
    run: mkdir -p out && echo generated > out/gen.txt
  - id: pack
    run: cat out/gen.txt > out/pack.txt && echo packed
`)
	mustPlan(t, dir, "run", "plan.yaml")
	mustPlan(t, dir, "correct", "--decision", "pack", "--reason", "wrong input", "--yes")
	writeFile(t, dir, "notes.txt", "kept\n")
	second := createCheckpoint(t, dir, "--note", "second")
	gone := createCheckpoint(t, dir, "--note", "to delete")
	mustPlan(t, dir, "checkpoint", "delete", gone, "--yes")
	mustPlan(t, dir, "rollback", "--to-checkpoint", first, "--yes")
	want := history(t, dir)

	for _, s := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(stateOf(t, dir).Database() + s); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	o := inWorkspace(dir, "checkpoint", "list")
	if o.code != ExitIntegrity || !strings.Contains(o.stderr, "plan doctor --rebuild") {
		t.Fatalf("a lost database: %v", o)
	}
	o = mustPlan(t, dir, "--json", "doctor", "--rebuild")
	var res rebuildView
	if err := json.Unmarshal([]byte(o.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if !res.Rebuilt || res.Plans != 1 || res.Decisions != 2 || res.Corrections != 1 || res.KeptAside != "" {
		t.Fatalf("rebuild: %+v", res)
	}
	got := history(t, dir)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s after the rebuild:\n%s\nwant\n%s", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d views after the rebuild, %d before", len(got), len(want))
	}
	if _, ok := got["checkpoint show "+gone]; ok {
		t.Error("a deleted checkpoint came back")
	}
	// Every checkpoint restores; the second one holds notes.txt.
	mustPlan(t, dir, "rollback", "--to-checkpoint", second, "--yes")
	if readFile(t, dir, "notes.txt") != "kept\n" {
		t.Fatal("the rollback to the second checkpoint did not restore notes.txt")
	}
	mustPlan(t, dir, "verify", "--read-data")
	// A healthy database is left alone.
	if o := mustPlan(t, dir, "doctor", "--rebuild"); !strings.Contains(o.stdout, "nothing to rebuild") {
		t.Fatalf("%v", o)
	}
	if o := inWorkspace(dir, "doctor", "--rebuild", "--repair"); o.code != ExitInvalid {
		t.Fatalf("--rebuild --repair: %v", o)
	}
}

// A damaged database file is kept aside, never deleted, and the text output says where.
func TestDoctorRebuildKeepsADamagedFileAside(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	id := createCheckpoint(t, dir)
	db := stateOf(t, dir).Database()
	for _, s := range []string{"-wal", "-shm"} {
		_ = os.Remove(db + s)
	}
	if err := os.WriteFile(db, []byte(strings.Repeat("garbage", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if o := inWorkspace(dir, "status"); o.code != ExitIntegrity || !strings.Contains(o.stderr, "plan doctor --rebuild") {
		t.Fatalf("a damaged database: %v", o)
	}
	o := mustPlan(t, dir, "doctor", "--rebuild")
	if !strings.Contains(o.stdout, "Rebuilt") || !strings.Contains(o.stdout, "plan.db.corrupt-") || !strings.Contains(o.stdout, "1 checkpoints") {
		t.Fatalf("%v", o)
	}
	aside, _ := filepath.Glob(db + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("kept aside: %v", aside)
	}
	if b, _ := os.ReadFile(aside[0]); string(b) != strings.Repeat("garbage", 1000) {
		t.Fatal("the damaged file changed")
	}
	if jsonField(t, mustPlan(t, dir, "--json", "checkpoint", "show", id), "id") != id {
		t.Fatal("the checkpoint is not back")
	}
}

// A run whose decision writes 3 MB of new content shows it in today's growth, although no
// checkpoint row holds those bytes (they are the decision's result snapshot).
func TestStatsGrowthCountsDecisionResults(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "plan.yaml", `name: big
decisions:
  - id: gen
    run: head -c 3000000 /dev/urandom > big.bin
`)
	mustPlan(t, dir, "run", "plan.yaml")
	var st struct {
		Growth []struct {
			Day         string `json:"day"`
			StoredBytes int64  `json:"stored_bytes"`
		} `json:"growth_per_day"`
	}
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "stats").stdout), &st); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, g := range st.Growth {
		total += g.StoredBytes
	}
	if total < 3_000_000 {
		t.Fatalf("growth %+v, want at least 3 MB in all", st.Growth)
	}
}

// A damaged page met by an ordinary query (not only by opening) is an integrity error, exit 6,
// naming the rebuild, which brings every checkpoint back.
func TestDamagedPageIsIntegrityAndRebuilds(t *testing.T) {
	dir := newWorkspace(t)
	for i := range 60 {
		writeFile(t, dir, "f.txt", fmt.Sprintf("version %d\n", i))
		createCheckpoint(t, dir, "--note", fmt.Sprintf("note number %02d, padded to fill pages %s", i, strings.Repeat("x", 60)))
	}
	db := stateOf(t, dir).Database()
	mustPlan(t, dir, "checkpoint", "list") // settles the WAL into the file
	for _, s := range []string{"-wal", "-shm"} {
		_ = os.Remove(db + s)
	}
	raw, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	// The note is in the checkpoint's row and in the operation log's arguments: damage every page
	// that holds it, whichever table the file lays out first.
	pages := 0
	for at, off := 0, 0; ; off = at + 1 {
		i := bytes.Index(raw[off:], []byte("note number 30"))
		if i < 0 {
			break
		}
		at = off + i
		raw[at/4096*4096] = 0x77 // the page's type: no b-tree page is that
		pages++
	}
	if pages == 0 {
		t.Fatal("no row in the file")
	}
	if err := os.WriteFile(db, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"checkpoint", "list"}, {"stats"}} {
		o := inWorkspace(dir, args...)
		if o.code != ExitIntegrity || !strings.Contains(o.stderr, "plan doctor --rebuild") || strings.Count(o.stderr, "is damaged") != 1 {
			t.Fatalf("%v on a damaged page: %v", args, o)
		}
	}
	mustPlan(t, dir, "doctor", "--rebuild")
	var cps []json.RawMessage
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "checkpoint", "list").stdout), &cps); err != nil || len(cps) != 60 {
		t.Fatalf("%d checkpoints after the rebuild, %v", len(cps), err)
	}
}

func removeDatabase(t *testing.T, dir string) error {
	t.Helper()
	for _, s := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(stateOf(t, dir).Database() + s); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}
