package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
)

func TestDiscoverFindsTheNearestEnclosingWorkspace(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	deep := filepath.Join(ws, "a", "b")
	inner := filepath.Join(ws, "a", "inner")
	for _, d := range []string{filepath.Join(ws, StateDir), deep, filepath.Join(inner, StateDir, "x")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A .plan that is a file, in the start directory, is that directory's (opening it says what is
	// wrong); above the start it is passed by.
	odd := filepath.Join(ws, "odd")
	if err := os.MkdirAll(filepath.Join(odd, "below"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(odd, StateDir), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(deep, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		start, want string
		found       bool
		ceilings    []string
	}{
		{ws, ws, true, nil},
		{deep, ws, true, nil},
		{link, ws, true, nil}, // through a symlink: the physical path, as git does
		{filepath.Join(inner, "x"), inner, true, nil},
		{filepath.Join(odd, "below"), ws, true, nil},
		{odd, odd, true, nil},
		{base, base, false, nil},
		{deep, deep, false, []string{filepath.Join(ws, "a"), "relative/ignored", ""}},
		{deep, deep, false, []string{ws}}, // a ceiling is not looked in either, as git's
		{deep, ws, true, []string{base}},
	} {
		got, found, err := Discover(c.start, c.ceilings)
		if err != nil || got != c.want || found != c.found {
			t.Errorf("Discover(%s, %v) = %s, %v, %v; want %s, %v", c.start, c.ceilings, got, found, err, c.want, c.found)
		}
	}
}

// A .plan in the home directory is never discovered from below it: init refuses to make one there,
// and a stray one must not capture every command run in the home directory.
func TestDiscoverPassesTheHomeDirectory(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	sub := filepath.Join(home, "project")
	for _, d := range []string{filepath.Join(home, StateDir), sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got, found, err := Discover(sub, nil); err != nil || found || got != sub {
		t.Fatalf("Discover under a home with .plan = %s, %v, %v", got, found, err)
	}
}

// A workspace whose .plan belongs to another user is refused, not used: above the start as in the
// start itself (the current directory or -C DIR), as git refuses a repository of dubious ownership.
func TestDiscoverRefusesAnotherUsersWorkspace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user (uid 65534)")
	}
	base := t.TempDir()
	sub := filepath.Join(base, "sub")
	state := filepath.Join(base, StateDir)
	for _, d := range []string{state, sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(state, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	for _, start := range []string{sub, base} {
		_, found, err := Discover(start, nil)
		if !errors.Is(err, fault.ErrConflict) || found || !strings.Contains(err.Error(), "belongs to another user (uid 65534)") ||
			!strings.Contains(err.Error(), "run plan as the user who owns it") {
			t.Fatalf("another user's workspace from %s: %v, want a conflict saying how to proceed", start, err)
		}
	}
	// However it is named, opening it is refused too.
	if _, err := NewLayout(base); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("NewLayout of another user's workspace: %v, want a conflict", err)
	}
}

// A .plan of the user's that others may write in is refused as another user's is: whoever can
// write it decides what plan runs. A .plan plan made (0750) is used.
func TestDiscoverRefusesAStateDirectoryOthersCanWrite(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := Layout{Root: base}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(base, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, start := range []string{base, sub} {
		if got, found, err := Discover(start, nil); err != nil || !found || got != base {
			t.Fatalf("Discover(%s) of a .plan plan made = %s, %v, %v", start, got, found, err)
		}
	}
	if _, err := NewLayout(base); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o777, 0o770, 0o757} {
		if err := os.Chmod(l.State(), mode); err != nil {
			t.Fatal(err)
		}
		for _, start := range []string{base, sub} {
			_, _, err := Discover(start, nil)
			if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "writable by users other than you") {
				t.Fatalf("Discover(%s) of a .plan of mode %s: %v, want a conflict", start, mode, err)
			}
		}
		if _, err := NewLayout(base); !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "chmod go-w") {
			t.Fatalf("NewLayout of a .plan of mode %s: %v, want a conflict saying how to proceed", mode, err)
		}
	}
}
