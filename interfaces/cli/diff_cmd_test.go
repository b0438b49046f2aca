package cli

import (
	"strings"
	"testing"
)

// diff --patch reads the stored content; when that is damaged it fails with exit 6 instead of
// printing a patch of wrong bytes. Without --patch the change list needs no content and still works.
func TestDiffPatchOfDamagedContent(t *testing.T) {
	dir := newWorkspace(t)
	big := noise(4)
	writeFile(t, dir, "big.bin", "first\n")
	first := createCheckpoint(t, dir)
	writeFile(t, dir, "big.bin", big)
	second := createCheckpoint(t, dir)
	writeFile(t, dir, "big.bin", "third\n")
	damageStored(t, dir, big)

	for _, c := range []struct {
		name string
		args []string
	}{
		{"the old side damaged", []string{"diff", second, "--patch"}},
		{"the new side damaged", []string{"diff", first, second, "--patch"}},
	} {
		o := inWorkspace(dir, c.args...)
		if o.code != ExitIntegrity || o.stdout != "" {
			t.Errorf("%s: want exit 6 and no patch\n%v", c.name, o)
		}
	}
	if o := mustPlan(t, dir, "diff", first, second); o.stdout != "M big.bin\n" {
		t.Errorf("diff without --patch: %v", o)
	}
	if o := mustPlan(t, dir, "diff", first, "--patch"); !strings.Contains(o.stdout, "-first\n+third\n") {
		t.Errorf("diff --patch of intact content: %v", o)
	}
}
