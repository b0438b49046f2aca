package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// retention.archives in .plan/config.yaml removes finished corrections' archives after a run, says
// so on stderr, and keeps the unfinished correction's archive and every correction record.
func TestRunAppliesArchiveRetention(t *testing.T) {
	dir, ids := correctedTwice(t)
	unfinished, newer, older := ids[0], ids[1], ids[2]
	configure(t, dir, "retention:\n  archives:\n    keep: 0\n")
	writeFile(t, dir, "plan.yaml", "name: p\ndecisions:\n  - id: a\n    run: echo a > a.txt\n")
	o := mustPlan(t, dir, "run", "plan.yaml")
	if !regexp.MustCompile(`(?m)^plan: retention policy removed 2 correction archives \(\d+(\.\d)? [KMG]?i?B\)$`).MatchString(o.stderr) {
		t.Fatalf("%v", o)
	}
	archive := func(id string) string { return filepath.Join(stateOf(t, dir).Archive(), id) }
	for _, id := range []string{newer, older} {
		if _, err := os.Stat(archive(id)); !os.IsNotExist(err) {
			t.Errorf("the finished correction %s kept its archive: %v", id, err)
		}
	}
	if _, err := os.Stat(archive(unfinished)); err != nil {
		t.Errorf("the unfinished correction lost its archive: %v", err)
	}
	if n := correctionCount(t, dir); n != 3 {
		t.Errorf("%d correction records, want all 3", n)
	}
}
