package registry

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/infrastructure/internal/config"
	"github.com/planhq/plan/infrastructure/internal/fsx"
)

// User is the per-user configuration, ~/.config/plan/config.yaml ($XDG_CONFIG_HOME/plan on every
// platform): what belongs to the user rather than to one workspace.
type User struct {
	// DataDir is where the data directory is, when PLAN_DATA_DIR does not say (absolute, or ~/…).
	DataDir string `yaml:"data_dir"`
	// DataMaxBytes is the data directory's disk budget (a size: 20GiB), every workspace's history
	// counted, those whose directory is gone included; "" is none. It only warns: plan never
	// deletes a workspace's history on its own.
	DataMaxBytes string `yaml:"data_max_bytes"`

	// Path is the file this was read from ("" when there is none); MaxBytes is DataMaxBytes read.
	Path     string `yaml:"-"`
	MaxBytes int64  `yaml:"-"`
}

// UserConfigPath is where the per-user configuration is: $XDG_CONFIG_HOME/plan/config.yaml, else
// ~/.config/plan/config.yaml ("" when neither is known).
func UserConfigPath(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "plan", "config.yaml")
	}
	if home := homeDir(getenv); home != "" {
		return filepath.Join(home, ".config", "plan", "config.yaml")
	}
	return ""
}

// LoadUser reads the per-user configuration; a missing file is the empty one. A file another user
// can write is refused (it names where every workspace's history goes), as is an unknown key, a
// relative data_dir or a size that is not one: each error names the file.
func LoadUser(getenv func(string) string) (User, error) {
	path := UserConfigPath(getenv)
	if path == "" {
		return User{}, nil
	}
	b, err := readOwn(path)
	if errors.Is(err, fs.ErrNotExist) {
		return User{}, nil
	}
	if err != nil {
		return User{}, err
	}
	u := User{Path: path}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&u); err != nil && !errors.Is(err, io.EOF) {
		return User{}, fault.Invalid("%s: %v", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	u.Path = path
	if u.DataDir != "" {
		d := u.DataDir
		if rest, ok := strings.CutPrefix(d, "~/"); ok {
			if home := homeDir(getenv); home != "" {
				d = filepath.Join(home, rest)
			}
		}
		if !filepath.IsAbs(d) {
			return User{}, fault.Invalid("%s: data_dir %q: want an absolute path (or ~/…)", path, u.DataDir)
		}
		u.DataDir = filepath.Clean(d)
	}
	if u.DataMaxBytes != "" {
		n, err := config.ParseBytes(u.DataMaxBytes)
		if err != nil {
			return User{}, fault.Invalid("%s: data_max_bytes: %v", path, err)
		}
		u.MaxBytes = n
	}
	return u, nil
}

// readOwn reads the file at path if it is the user's alone, judged on the file it opened.
func readOwn(path string) ([]byte, error) {
	f, err := os.Open(path) // #nosec G304 -- the user's own configuration file
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fault.Conflict("cannot read %s: %v", path, err)
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return nil, fault.Conflict("cannot read %s: %v", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fault.Conflict("%s is not a regular file (%s): refusing it", path, fi.Mode().Type())
	}
	if why, remedy := fsx.Distrust(fi); why != "" {
		return nil, fault.Conflict("%s %s: plan will not read a configuration another user can write, since it says where every workspace's history goes; %s", path, why, remedy)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fault.Conflict("cannot read %s: %v", path, err)
	}
	return b, nil
}

// homeDir is the user's home directory ("" when unknown or not absolute).
func homeDir(getenv func(string) string) string {
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if !filepath.IsAbs(home) {
		return ""
	}
	return home
}
