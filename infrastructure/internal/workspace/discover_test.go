package workspace

import (
	"errors"
	"os"
	"path/filepath"
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

// A workspace above the start whose .plan belongs to another user is refused, not used.
func TestDiscoverRefusesAnotherUsersWorkspace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	base := t.TempDir()
	sub := filepath.Join(base, "sub")
	state := filepath.Join(base, StateDir)
	for _, d := range []string{state, sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(state, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Discover(sub, nil); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("another user's workspace above: %v, want a conflict", err)
	}
	// Named outright (the start itself), it is used.
	if got, found, err := Discover(base, nil); err != nil || !found {
		t.Fatalf("another user's workspace named with -C: %s, %v, %v", got, found, err)
	}
}
