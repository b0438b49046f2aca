package executor_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/planhq/plan/application/port"
)

// A log path naming an existing directory cannot be opened as the log: Execute refuses before the
// decision runs, so no decision ever runs without its output kept.
func TestExecuteFailsWhenLogIsADirectory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := os.MkdirAll(filepath.Join(e.layout.Logs(), "dir.log"), 0o750); err != nil {
		t.Fatal(err)
	}
	_, err := e.shell.Execute(context.Background(), port.Command{Script: "echo ran > ran.txt", LogPath: "logs/dir.log"}, nil)
	if err == nil {
		t.Fatal("Execute succeeded with a directory as its log")
	}
	if _, err := os.Stat(e.path("ran.txt")); err == nil {
		t.Fatal("the command ran without a log")
	}
}

// A decision whose environment cannot be passed to a process (a value holding NUL) is refused at
// start, as an error rather than a recorded outcome, and nothing runs.
func TestExecuteFailsWhenTheShellCannotStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.shell.Execute(context.Background(), port.Command{
		Script: "echo ran > ran.txt", LogPath: "logs/x.log", Env: map[string]string{"BAD": "a\x00b"},
	}, nil)
	if err == nil {
		t.Fatal("Execute succeeded with an environment no process can receive")
	}
	if _, err := os.Stat(e.path("ran.txt")); err == nil {
		t.Fatal("the command ran")
	}
}
