package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
)

func TestLoadAndSave(t *testing.T) {
	dir := t.TempDir()
	p := Path(dir)
	if f, err := Load(p); err != nil || f.WorkspaceID != "" || f.Store != "" {
		t.Fatalf("a missing file: %+v, %v", f, err)
	}
	keep := 5
	want := File{WorkspaceID: "01a20a7c7ac4962df0a1b58a", Store: "s3://b/p", DB: "postgres://plan@db:5432/plan",
		GC: &GC{Grace: "10m"}, Cache: &Cache{MaxBytes: "1GiB"}, Retention: &Retention{Keep: &keep}}
	if err := Save(p, want); err != nil {
		t.Fatal(err)
	}
	got, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.WorkspaceID != want.WorkspaceID || got.Store != want.Store || got.DB != want.DB || got.GC.Grace != "10m" ||
		got.Cache.MaxBytes != "1GiB" || *got.Retention.Keep != 5 {
		t.Fatalf("round trip: %+v", got)
	}
	b, _ := os.ReadFile(p)
	if !strings.HasPrefix(string(b), "# plan's workspace configuration") {
		t.Errorf("the file does not say what it is:\n%s", b)
	}
	// A password is never written.
	for _, dsn := range []string{"postgres://plan:secret@db/plan", "postgres://db/plan?user=plan&password=secret", "postgres://db/plan?passfile=/secret"} {
		if err := Save(p, File{DB: dsn}); !errors.Is(err, fault.ErrInvalid) {
			t.Fatalf("saving %s: %v", dsn, err)
		}
	}
	if b2, _ := os.ReadFile(p); strings.Contains(string(b2), ":secret@") {
		t.Fatal("the password reached the file")
	}
	// Unknown keys and bad YAML are invalid input naming the file; an empty file is no policy.
	for body, wantErr := range map[string]bool{"nope: 1\n": true, "store: [\n": true, "": false, "# only a comment\n": false} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if wantErr && (!errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), p)) {
			t.Errorf("Load(%q) = %v, want invalid input naming the file", body, err)
		}
		if !wantErr && err != nil {
			t.Errorf("Load(%q) = %v", body, err)
		}
	}
	// A file that cannot be read is an error, not "no configuration".
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil {
		t.Fatal("a directory in the file's place loaded")
	}
	if err := Save(filepath.Join(dir, "missing", FileName), File{}); err == nil {
		t.Fatal("saved into a missing directory")
	}
}

func TestRedactDSN(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/d?sslmode=disable": "postgres://u@h:5432/d?sslmode=disable",
		"postgres://u@h/d":                         "postgres://u@h/d",
		"postgres://h/d?user=u&password=pw":        "postgres://h/d?user=u",
		"postgres://h/d?passfile=/p&sslmode=x":     "postgres://h/d?sslmode=x",
		"postgres://h/d":                           "postgres://h/d",
		"sqlite:///a/b.db":                         "sqlite:///a/b.db",
		"%zz":                                      "%zz",
	} {
		got, had := RedactDSN(in)
		if got != want || had != (got != in) {
			t.Errorf("RedactDSN(%q) = %q, %v; want %q", in, got, had, want)
		}
		if HasPassword(got) {
			t.Errorf("%q still has a password", got)
		}
	}
}

func TestKinds(t *testing.T) {
	for store, want := range map[string]string{"": "", "s3://b": "s3", "s3://b/p/q": "s3", "file:///srv/store": "file", "file:///": "file"} {
		if got, err := StoreKind(store); err != nil || got != want {
			t.Errorf("StoreKind(%q) = %q, %v", store, got, err)
		}
	}
	for _, bad := range []string{"http://x", "s3://", "s3://u:p@b", "s3://b?x=1", "file://rel", "file:///a/../b", "file://host/a", "/abs"} {
		if _, err := StoreKind(bad); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("StoreKind(%q) = %v, want invalid", bad, err)
		}
	}
	if FilePath("file:///srv/store/") != "/srv/store" {
		t.Errorf("FilePath = %q", FilePath("file:///srv/store/"))
	}
	for dsn, want := range map[string]string{"": "", "postgres://u@h/d": "postgres", "postgresql://u@h/d": "postgres", "sqlite:///a/b.db": "sqlite"} {
		if got, err := DBKind(dsn); err != nil || got != want {
			t.Errorf("DBKind(%q) = %q, %v", dsn, got, err)
		}
	}
	for _, bad := range []string{"mysql://u@h/d", "sqlite://rel.db", "postgres://u:p@h:bad port/d", "plan.db"} {
		_, err := DBKind(bad)
		if !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("DBKind(%q) = %v, want invalid", bad, err)
		}
		if err != nil && strings.Contains(bad, ":p@") && strings.Contains(err.Error(), ":p@") {
			t.Errorf("DBKind's error repeats the password: %v", err)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"123": 123, "1KB": 1000, "2 KiB": 2048, "500MB": 500e6, "2GiB": 2 << 30, "1TB": 1e12, "1TiB": 1 << 40, "7B": 7} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1", "1.5GB", "GB", "12XB", "99999999999999999999", "9999999999TiB"} {
		if _, err := ParseBytes(bad); !errors.Is(err, fault.ErrInvalid) {
			t.Errorf("ParseBytes(%q): %v, want invalid", bad, err)
		}
	}
}

// A configuration another user owns or may write is refused before it is read: it names a command
// plan runs as the user (validate.command). One plan wrote is the user's alone.
func TestLoadRefusesAConfigurationOthersCanWrite(t *testing.T) {
	p := Path(t.TempDir())
	if err := Save(p, File{Validate: &Validate{Command: "touch ran"}}); err != nil {
		t.Fatal(err)
	}
	if f, err := Load(p); err != nil || f.Validate == nil || f.Validate.Command != "touch ran" {
		t.Fatalf("the user's own configuration: %+v, %v", f, err)
	}
	for _, mode := range []os.FileMode{0o666, 0o620, 0o602} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		f, err := Load(p)
		if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "writable by users other than you") ||
			!strings.Contains(err.Error(), p) || f.Validate != nil {
			t.Fatalf("a configuration of mode %s: %+v, %v; want a conflict naming the file", mode, f, err)
		}
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err != nil {
		t.Fatalf("a configuration others may read: %v", err)
	}
	// A path that cannot be opened (a file where a directory should be) is an error too.
	if _, err := Load(filepath.Join(p, FileName)); err == nil || errors.Is(err, fault.ErrConflict) {
		t.Fatalf("a configuration under a file: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("the rest needs root, to give the file to another user (uid 65534)")
	}
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	f, err := Load(p)
	if !errors.Is(err, fault.ErrConflict) || !strings.Contains(err.Error(), "belongs to another user (uid 65534)") || f.Validate != nil {
		t.Fatalf("another user's configuration: %+v, %v; want a conflict", f, err)
	}
}
