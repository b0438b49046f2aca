package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A binary built from a checkout names its VCS revision in --version (from debug.ReadBuildInfo),
// so a bug report says exactly which code ran.
func TestVersionNamesTheRevision(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is needed to stamp the revision")
	}
	rev, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "plan")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(rev)); !strings.Contains(string(out), "revision "+want) {
		t.Fatalf("--version printed %q, want the revision %s", out, want)
	}
	// The completion scripts ask the binary for candidates; it answers with the subcommands.
	out, err = exec.Command(bin, "checkpoint", "--generate-bash-completion").Output()
	if err != nil || !strings.Contains(string(out), "create\n") || !strings.Contains(string(out), "prune\n") {
		t.Fatalf("completion candidates for checkpoint: %q, %v", out, err)
	}
}
