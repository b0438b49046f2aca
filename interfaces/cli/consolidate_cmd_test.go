package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/interfaces/view"
	"github.com/planhq/plan/tests/testkit"
)

func packFiles(t *testing.T, dir string) int {
	t.Helper()
	packs, err := filepath.Glob(filepath.Join(stateOf(t, dir).Objects(), "packs", "*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	return len(packs)
}

// Every checkpoint that stores something is a pack; after the command that makes them 16, the CLI
// merges them, and every checkpoint still rolls back byte for byte.
func TestCommandsConsolidateSmallPacks(t *testing.T) {
	dir := newWorkspace(t)
	var ids []string
	for i := range 20 {
		writeFile(t, dir, fmt.Sprintf("f%02d.txt", i), fmt.Sprintf("version %d\n", i))
		o := mustPlan(t, dir, "--json", "checkpoint", "create")
		var v view.Checkpoint
		if err := json.Unmarshal([]byte(o.stdout), &v); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, v.ID)
		if o.stderr != "" {
			t.Fatalf("checkpoint %d warned: %s", i, o.stderr)
		}
	}
	if n := packFiles(t, dir); n >= 16 {
		t.Fatalf("%d packs after 20 checkpoints of one file each: never consolidated", n)
	}
	mustPlan(t, dir, "--yes", "rollback", "--to-checkpoint", ids[3])
	for i := range 20 {
		name := fmt.Sprintf("f%02d.txt", i)
		if i <= 3 {
			if got := readFile(t, dir, name); got != fmt.Sprintf("version %d\n", i) {
				t.Fatalf("%s after the rollback: %q", name, got)
			}
		}
	}
	mustPlan(t, dir, "verify", "--read-data")
}

// A pack that cannot be copied (damaged) keeps the packs from being merged (all of about one size,
// so that they form one run): the command that was
// asked for succeeds, warns, and loses nothing; verify names the damage.
func TestConsolidationOverDamageWarnsAndChangesNothing(t *testing.T) {
	dir := newWorkspace(t)
	first := string(testkit.Noise(41, 2048))
	writeFile(t, dir, "first.bin", first)
	mustPlan(t, dir, "checkpoint", "create")
	testkit.DamageStored(t, filepath.Join(stateOf(t, dir).Objects(), "packs"), []byte(first))
	for i := range 14 {
		writeFile(t, dir, fmt.Sprintf("f%02d.txt", i), string(testkit.Noise(uint64(50+i), 2048)))
		mustPlan(t, dir, "checkpoint", "create")
	}
	before := packFiles(t, dir)
	writeFile(t, dir, "last.bin", string(testkit.Noise(70, 2048)))
	o := inWorkspace(dir, "checkpoint", "create")
	if o.code != ExitOK || !strings.Contains(o.stderr, "could not merge the store's small packs") {
		t.Fatalf("%v", o)
	}
	if got := packFiles(t, dir); got != before+1 {
		t.Fatalf("packs %d -> %d: a refused consolidation removed or added packs", before, got)
	}
	if o := inWorkspace(dir, "verify", "--read-data"); o.code != ExitIntegrity {
		t.Fatalf("verify over the damaged pack: %v", o)
	}
}
