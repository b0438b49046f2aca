package cli

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/planhq/plan/interfaces/view"
	"github.com/planhq/plan/tests/testkit/treetest"
)

// revertModel is a small text tree and the decisions run on it. Every line is unique (file, line,
// decision that last wrote it), so the line diff is unambiguous and the model can say exactly when
// a surgical revert overlaps later work.
type revertModel struct {
	files     int
	lines     int
	decisions []modelDecision
}

// modelDecision replaces some lines and may create a file of its own.
type modelDecision struct {
	edits   map[[2]int]bool // (file, line) it rewrites
	creates bool
}

func (m *revertModel) fileName(f int) string { return fmt.Sprintf("f%d.txt", f) }

// state is the tree after applying the decisions in order, skipping skip (-1: none): file name →
// content.
func (m *revertModel) state(upto, skip int) map[string]string {
	out := map[string]string{}
	for f := 0; f < m.files; f++ {
		lines := make([]string, m.lines)
		for l := range lines {
			lines[l] = fmt.Sprintf("f%d-l%d-base\n", f, l)
		}
		for j := 0; j < upto; j++ {
			if j == skip {
				continue
			}
			for l := range lines {
				if m.decisions[j].edits[[2]int{f, l}] {
					lines[l] = fmt.Sprintf("f%d-l%d-d%d\n", f, l, j)
				}
			}
		}
		out[m.fileName(f)] = strings.Join(lines, "")
	}
	for j := 0; j < upto; j++ {
		if j != skip && m.decisions[j].creates {
			out[fmt.Sprintf("new-d%d.txt", j)] = fmt.Sprintf("made by d%d\n", j)
		}
	}
	return out
}

// overlaps says whether a later decision rewrote a line of k's or one next to it: diff3 takes
// adjacent changes as one region, so those conflict too.
func (m *revertModel) overlaps(k int) bool {
	for e := range m.decisions[k].edits {
		for j := k + 1; j < len(m.decisions); j++ {
			for d := -1; d <= 1; d++ {
				if m.decisions[j].edits[[2]int{e[0], e[1] + d}] {
					return true
				}
			}
		}
	}
	return false
}

// script writes the tree after decision j.
func (m *revertModel) script(j int) string {
	after := m.state(j+1, -1)
	names := make([]string, 0, len(after))
	for n := range after {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "printf '%s' > %s; ", strings.ReplaceAll(after[n], "\n", `\n`), n)
	}
	return b.String()
}

func randomModel(r *rand.Rand) *revertModel {
	m := &revertModel{files: 1 + r.IntN(3), lines: 4 + r.IntN(8)}
	n := 3 + r.IntN(3)
	for range n {
		d := modelDecision{edits: map[[2]int]bool{}, creates: r.IntN(4) == 0}
		for range 1 + r.IntN(3) {
			d.edits[[2]int{r.IntN(m.files), r.IntN(m.lines)}] = true
		}
		m.decisions = append(m.decisions, d)
	}
	return m
}

func writeModelTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for n, c := range files {
		writeFile(t, dir, n, c)
	}
}

func requireModelTree(t *testing.T, dir string, want map[string]string, context string) {
	t.Helper()
	entries, err := treetest.Read(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Path))
		if err != nil {
			t.Fatal(err)
		}
		got[e.Path] = string(b)
	}
	for n, c := range want {
		if got[n] != c {
			t.Fatalf("%s: %s is %q, want %q", context, n, got[n], c)
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Fatalf("%s: unexpected %s", context, n)
		}
	}
}

// TestRevertModel runs random decision sequences over a small text tree and reverts a random middle
// decision. Where the model sees no overlap, the workspace must equal the other decisions applied
// alone, and only the reverted decision changes status; where it sees one, the default refuses
// (exit 5) leaving the workspace byte-identical, markers applies with conflict markers, and a
// rollback to the revert's safety checkpoint brings the state before back exactly.
func TestRevertModel(t *testing.T) {
	trials := 40
	if testing.Short() {
		trials = 10
	}
	if s := os.Getenv("PLAN_REVERT_TRIALS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		trials = n
	}
	var clean, refused int
	for trial := range trials {
		seed := uint64(trial)
		r := rand.New(rand.NewPCG(seed, 13))
		m := randomModel(r)
		k := 1 + r.IntN(len(m.decisions)-2) // a middle decision
		context := fmt.Sprintf("seed %d, revert d%d of %d", seed, k, len(m.decisions))
		dir := t.TempDir()
		mustPlan(t, dir, "init")
		writeModelTree(t, dir, m.state(0, -1))
		for j := range m.decisions {
			mustPlan(t, dir, "exec", "--id", fmt.Sprintf("d%d", j), "--", "sh", "-c", m.script(j))
		}
		requireModelTree(t, dir, m.state(len(m.decisions), -1), context+": after the run")
		before, err := treetest.Read(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("d%d", k)
		if !m.overlaps(k) {
			clean++
			mustPlan(t, dir, "--yes", "revert", "--decision", id, "--reason", "model")
			requireModelTree(t, dir, m.state(len(m.decisions), k), context)
			requireStatuses(t, dir, len(m.decisions), k, context)
			continue
		}
		refused++
		o := inWorkspace(dir, "--yes", "revert", "--decision", id, "--reason", "model")
		if o.code != ExitConflict {
			t.Fatalf("%s: an overlapping revert: %v", context, o)
		}
		treetest.RequireSame(t, dir, nil, before, context+": a refused revert changed the workspace")
		out := mustPlan(t, dir, "--json", "--yes", "revert", "--decision", id, "--reason", "model", "--conflicts", "markers").stdout
		var v view.Revert
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		if !v.NeedsAttention || len(v.Conflicts) == 0 || v.SafetyCheckpointID == nil {
			t.Fatalf("%s: markers: %s", context, out)
		}
		for _, c := range v.Conflicts {
			if c.Written == nil || !strings.Contains(readFile(t, dir, *c.Written), "<<<<<<< live\n") {
				t.Fatalf("%s: no markers in %s", context, c.Path)
			}
		}
		mustPlan(t, dir, "--yes", "rollback", "--to-checkpoint", *v.SafetyCheckpointID)
		treetest.RequireSame(t, dir, nil, before, context+": rolling back to the safety checkpoint")
	}
	t.Logf("%d trials: %d clean reverts, %d overlapping", trials, clean, refused)
	if clean == 0 || refused == 0 {
		t.Fatalf("the random models never exercised one side (%d clean, %d overlapping)", clean, refused)
	}
}

// requireStatuses checks that decision k alone is reverted.
func requireStatuses(t *testing.T, dir string, n, k int, context string) {
	t.Helper()
	var st struct {
		Decisions []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"decisions"`
	}
	if err := json.Unmarshal([]byte(mustPlan(t, dir, "--json", "status").stdout), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Decisions) != n {
		t.Fatalf("%s: status lists %d decisions", context, len(st.Decisions))
	}
	for j, d := range st.Decisions {
		want := "succeeded"
		if j == k {
			want = "reverted"
		}
		if d.Status != want {
			t.Fatalf("%s: %s is %s, want %s", context, d.ID, d.Status, want)
		}
	}
}
