package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// An interrupted demo stops at the step it was on with the interrupted status, and leaves nothing
// behind in TMPDIR.
func TestDemoInterrupted(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	code := (&Runner{Stdout: &out, Stderr: &errOut, Stdin: strings.NewReader("")}).Run(ctx, []string{"plan", "demo"})
	if code != ExitInterrupted || !strings.Contains(out.String(), "$ plan run plan.yaml\n") || strings.Contains(out.String(), "# 2.") {
		t.Errorf("an interrupted demo: exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("the interrupted demo left %d entries in TMPDIR (first %q)", len(left), left[0].Name())
	}
}
