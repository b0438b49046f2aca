package fsx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDistrust(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(wantWhy, wantRemedy string) {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		why, remedy := Distrust(fi)
		if (wantWhy == "") != (why == "") || !strings.Contains(why, wantWhy) || !strings.Contains(remedy, wantRemedy) {
			t.Fatalf("Distrust(%s) = %q, %q; want %q, %q", fi.Mode(), why, remedy, wantWhy, wantRemedy)
		}
	}
	check("", "")
	for _, mode := range []os.FileMode{0o644, 0o755, 0o700} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		check("", "")
	}
	for _, mode := range []os.FileMode{0o620, 0o602, 0o777} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		check("writable by users other than you", "chmod go-w")
	}
	if os.Geteuid() != 0 {
		t.Skip("the rest needs root, to give the file to another user (uid 65534)")
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	check("belongs to another user (uid 65534)", "run plan as the user who owns it")
}
