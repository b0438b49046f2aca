package registry

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
)

// writeUser writes the per-user configuration of a HOME at home, with mode.
func writeUser(t *testing.T, home, text string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(home, ".config", "plan", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// The per-user configuration moves the data directory (PLAN_DATA_DIR still wins) and sets its
// budget; XDG_CONFIG_HOME moves the file; ~/ is the home directory. A missing file is no
// configuration.
func TestUserConfigurationSetsTheDataDirectory(t *testing.T) {
	home := t.TempDir()
	e := map[string]string{"HOME": home}
	if u, err := LoadUser(env(e)); err != nil || u != (User{}) {
		t.Fatalf("no file: %+v %v", u, err)
	}
	p := writeUser(t, home, "data_dir: ~/histories\ndata_max_bytes: 2GiB\n", 0o600)
	u, err := LoadUser(env(e))
	if err != nil || u.DataDir != filepath.Join(home, "histories") || u.MaxBytes != 2<<30 || u.Path != p {
		t.Fatalf("LoadUser = %+v, %v", u, err)
	}
	if d, err := Dir(env(e)); err != nil || d != filepath.Join(home, "histories") {
		t.Fatalf("Dir = %q, %v", d, err)
	}
	e[EnvDataDir] = "/elsewhere"
	if d, err := Dir(env(e)); err != nil || d != "/elsewhere" {
		t.Fatalf("Dir with PLAN_DATA_DIR = %q, %v", d, err)
	}
	delete(e, EnvDataDir)
	xdg := t.TempDir()
	e["XDG_CONFIG_HOME"] = xdg
	if got := UserConfigPath(env(e)); got != filepath.Join(xdg, "plan", "config.yaml") {
		t.Fatalf("UserConfigPath with XDG_CONFIG_HOME = %q", got)
	}
	if d, err := Dir(env(e)); err != nil || d != filepath.Join(home, platformDataHome, "plan") {
		t.Fatalf("Dir with an XDG_CONFIG_HOME holding nothing = %q, %v", d, err)
	}
	if got := UserConfigPath(env(map[string]string{"HOME": "relative"})); got != "" && !strings.HasPrefix(got, "/") {
		t.Fatalf("UserConfigPath of a relative HOME = %q", got)
	}
}

// A configuration that cannot be trusted or read is refused, naming the file, and so is the data
// directory it would have named: plan never falls back to another directory (and a new, empty
// history) because the user's configuration was wrong.
func TestUserConfigurationRefusals(t *testing.T) {
	for _, c := range []struct {
		name, text string
		mode       os.FileMode
		want       error
		says       string
	}{
		{"relative data_dir", "data_dir: rel/dir\n", 0o600, fault.ErrInvalid, "absolute"},
		{"bad size", "data_max_bytes: lots\n", 0o600, fault.ErrInvalid, "data_max_bytes"},
		{"unknown key", "data_dri: /x\n", 0o600, fault.ErrInvalid, "data_dri"},
		{"not YAML", "data_dir: [\n", 0o600, fault.ErrInvalid, "config.yaml"},
		{"writable by others", "data_dir: /x\n", 0o666, fault.ErrConflict, "another user"},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			p := writeUser(t, home, c.text, c.mode)
			_, err := LoadUser(env(map[string]string{"HOME": home}))
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), p) {
				t.Fatalf("LoadUser: %v", err)
			}
			if d, err := Dir(env(map[string]string{"HOME": home})); err == nil {
				t.Fatalf("Dir with a refused configuration = %q", d)
			}
		})
	}
	home := t.TempDir()
	p := filepath.Join(home, ".config", "plan", "config.yaml")
	if err := os.MkdirAll(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadUser(env(map[string]string{"HOME": home})); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("a directory as the configuration: %v", err)
	}
	empty := t.TempDir()
	writeUser(t, empty, "", 0o600)
	if u, err := LoadUser(env(map[string]string{"HOME": empty})); err != nil || u.MaxBytes != 0 || u.DataDir != "" {
		t.Fatalf("an empty file: %+v %v", u, err)
	}
}
