package plan_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scripts/check-prereqs, which make check runs first, names everything a machine lacks at once,
// each with how to install it, and passes a machine that has it all. The machine is faked: go,
// node and npm are scripts answering as the real ones would, PostgreSQL a directory of its three
// binaries.
func TestCheckPrereqs(t *testing.T) {
	bin := t.TempDir()
	fake := func(name, body string) string {
		p := filepath.Join(bin, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil { // #nosec G306 -- an executable
			t.Fatal(err)
		}
		return p
	}
	pg := filepath.Join(bin, "pg")
	if err := os.Mkdir(pg, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
		fake(filepath.Join("pg", b), "exit 0")
	}
	goOK := fake("go-ok", `case "$2" in GOVERSION) echo go1.99.0;; CGO_ENABLED) echo 1;; CC) echo sh;; esac`)
	goOld := fake("go-old", `case "$2" in GOVERSION) echo go1.20.1;; CGO_ENABLED) echo 0;; CC) echo no-such-cc;; esac`)
	nodeOK, nodeOld := fake("node-ok", "echo v22.1.0"), fake("node-old", "echo v18.2.0")
	npm := fake("npm-ok", "echo 10.0.0")
	run := func(env ...string) (string, error) {
		cmd := exec.Command("scripts/check-prereqs")
		cmd.Env = append(os.Environ(), append([]string{"PLAN_PREREQS_EUID=1000"}, env...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("GO="+goOK, "NODE="+nodeOK, "NPM="+npm, "PLAN_SERVERS_PG_BINDIR="+pg, "PLAN_PREREQS_MIN_FREE_KB=1", "PLAN_PREREQS_TMUX=sh")
	if err != nil || !strings.HasPrefix(out, "prereqs: ok (Go 1.99.0, cgo with sh, PostgreSQL in "+pg+", Node v22.1.0, npm 10.0.0)") {
		t.Fatalf("a machine with everything: %v\n%s", err, out)
	}
	out, err = run("GO="+goOld, "NODE="+nodeOld, "NPM=no-such-npm", "PLAN_SERVERS_PG_BINDIR="+bin, "PLAN_PREREQS_TMUX=no-such-tmux")
	if err == nil {
		t.Fatalf("a machine lacking everything passed:\n%s", out)
	}
	for _, want := range []string{
		"make check: this machine lacks what the gates need:",
		"Go 1.26.8 or newer (go.mod says so): " + goOld + " is 1.20.1. Install it from https://go.dev/dl/.",
		"cgo: CGO_ENABLED is not 1",
		"a C compiler for cgo: no-such-cc not found. Debian/Ubuntu: apt-get install gcc",
		"PostgreSQL's server binaries (initdb, pg_ctl, postgres): not found in " + bin + ". Debian/Ubuntu: apt-get install postgresql-15",
		"Node.js 20 or newer: " + nodeOld + " is v18.2.0.",
		"npm (and access to its registry",
		"tmux (the terminal the tests drive plan browse in): not found (no-such-tmux). Debian/Ubuntu: apt-get install tmux",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	out, _ = run("GO=no-such-go", "NODE=no-such-node", "NPM="+npm, "PLAN_SERVERS_PG_BINDIR="+pg, "PLAN_PREREQS_EUID=0")
	for _, want := range []string{"Go 1.26.8 or newer: not found (no-such-go)", "Node.js 20 or newer: not found (no-such-node)"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}
