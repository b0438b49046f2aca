package plan_test

// The dependency rule of the house style, enforced: dependencies point inward
// (domain ← application ← infrastructure/interfaces).
//
//   - domain/ imports only the standard library and domain/ itself (in non-test files; its tests may
//     use test libraries, but never the outer layers or the frameworks);
//   - application/ never imports the frameworks (gorm, the sqlite driver, fx/dig, urfave/cli) nor the
//     outer layers (infrastructure/, interfaces/, cmd/, features/, and tests/ with its test kits), in
//     any file.
//
// Imports are read with go/parser (imports only), not go/packages or `go list`, so the test needs no
// build, sees files behind every build tag, and passes on layers that have no files yet.

import (
	"bufio"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// frameworks are the adapters' libraries: none may appear in domain or application.
var frameworks = []string{
	"gorm.io",
	"github.com/mattn/go-sqlite3",
	"go.uber.org/fx",
	"go.uber.org/dig",
	"github.com/urfave/cli",
}

// outerLayers are the module directories that depend on application, never the other way round.
var outerLayers = []string{"infrastructure", "interfaces", "cmd", "features", "tests"}

// importFile is one source file's imports, keyed for reporting.
type importFile struct {
	path    string // slash-separated, relative to the module root
	test    bool   // a _test.go file
	imports []string
}

func TestArchitecture(t *testing.T) {
	modPath, err := modulePath("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var checked int
	for _, layer := range []string{"domain", "application"} {
		files, err := scanLayer(".", layer)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Logf("%s/: no Go files yet", layer)
		}
		checked += len(files)
		for _, f := range files {
			for _, v := range violations(modPath, layer, f) {
				t.Error(v)
			}
		}
	}
	t.Logf("checked the imports of %d files", checked)
}

// TestArchitectureCatchesViolations proves the rule bites: each case is one import from one file.
func TestArchitectureCatchesViolations(t *testing.T) {
	const mod = "github.com/planhq/plan"
	cases := []struct {
		layer, imp string
		test       bool
		bad        bool
	}{
		{"domain", "fmt", false, false},
		{"domain", "crypto/sha256", false, false},
		{"domain", mod + "/domain", false, false},
		{"domain", mod + "/domain/fault", false, false},
		{"domain", mod + "/domainx", false, true}, // a sibling that merely shares the prefix
		{"domain", mod + "/application", false, true},
		{"domain", mod + "/infrastructure/persistence", false, true},
		{"domain", mod + "/interfaces/cli", false, true},
		{"domain", "gorm.io/gorm", false, true},
		{"domain", "go.uber.org/fx", false, true},
		{"domain", "github.com/urfave/cli/v2", false, true},
		{"domain", "github.com/klauspost/compress/zstd", false, true},
		{"domain", "golang.org/x/sys/unix", false, true},
		{"domain", "C", false, true},
		{"domain", "github.com/google/go-cmp/cmp", true, false}, // a test library in a test
		{"domain", mod + "/application", true, true},
		{"domain", mod + "/infrastructure/objectstore", true, true},
		{"domain", mod + "/tests/testkit", true, true}, // a test kit of the outer layers, in a test
		{"domain", mod + "/domain/fault/faulttest", true, false},
		{"domain", "gorm.io/gorm", true, true},
		{"application", "context", false, false},
		{"application", mod + "/domain/checkpoint", false, false},
		{"application", mod + "/application/ports", false, false},
		{"application", "github.com/klauspost/compress/zstd", false, false},
		{"application", "gorm.io/gorm", false, true},
		{"application", "gorm.io/driver/sqlite", false, true},
		{"application", "github.com/mattn/go-sqlite3", false, true},
		{"application", "go.uber.org/fx", false, true},
		{"application", "go.uber.org/fx/fxevent", false, true},
		{"application", "go.uber.org/dig", false, true},
		{"application", "github.com/urfave/cli/v2", false, true},
		{"application", "github.com/urfave/cli/v3", false, true},
		{"application", mod + "/infrastructure", false, true},
		{"application", mod + "/infrastructure/persistence", false, true},
		{"application", mod + "/interfaces/cli", false, true},
		{"application", mod + "/cmd/plan", false, true},
		{"application", mod + "/features", true, true},
		{"application", mod + "/tests/testkit", true, true},
		{"application", "gorm.io/gorm", true, true},
	}
	for _, c := range cases {
		f := importFile{path: c.layer + "/x/x.go", test: c.test, imports: []string{c.imp}}
		got := violations(mod, c.layer, f)
		if bad := len(got) > 0; bad != c.bad {
			t.Errorf("%s importing %q (test file: %v): violation = %v, want %v %q", c.layer, c.imp, c.test, bad, c.bad, got)
		}
	}
}

// TestArchitectureScansTree runs the whole check over a synthetic module: it must find the one bad
// import, skip what the go tool skips, and accept a layer with no files.
func TestArchitectureScansTree(t *testing.T) {
	root := t.TempDir()
	write := fileWriter(t, root)
	write("go.mod", "// a comment\nmodule \"example.com/m\"\n\ngo 1.26\n")
	write("domain/ok/ok.go", "package ok\n\nimport (\n\t\"fmt\"\n\t\"example.com/m/domain/fault\"\n)\n")
	write("domain/bad/bad.go", "//go:build ignore\n\npackage bad\n\nimport _ \"gorm.io/gorm\"\n")
	write("domain/testdata/x.go", "package x\n\nimport _ \"gorm.io/gorm\"\n")
	write("domain/_skip/x.go", "package x\n\nimport _ \"gorm.io/gorm\"\n")
	write("domain/ok/notgo.txt", "import \"gorm.io/gorm\"\n")

	modPath, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil || modPath != "example.com/m" {
		t.Fatalf("modulePath = %q, %v", modPath, err)
	}
	var got []string
	for _, layer := range []string{"domain", "application"} { // application/ does not exist
		files, err := scanLayer(root, layer)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			got = append(got, violations(modPath, layer, f)...)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "domain/bad/bad.go") || !strings.Contains(got[0], "gorm.io/gorm") {
		t.Fatalf("violations = %q, want exactly the gorm import in domain/bad/bad.go", got)
	}

	write("domain/broken/broken.go", "package broken\n\nimport (\n")
	if _, err := scanLayer(root, "domain"); err == nil {
		t.Fatal("scanLayer accepted a file it cannot parse")
	}
}

// violations returns one message per import of f that breaks layer's rule.
func violations(modPath, layer string, f importFile) []string {
	var out []string
	for _, imp := range f.imports {
		if reason := forbidden(modPath, layer, imp, f.test); reason != "" {
			out = append(out, fmt.Sprintf("%s imports %q: %s", f.path, imp, reason))
		}
	}
	return out
}

// forbidden says why imp may not be imported from layer, or "" if it may.
func forbidden(modPath, layer, imp string, test bool) string {
	for _, fw := range frameworks {
		if hasPathPrefix(imp, fw) {
			return layer + " must not depend on a framework (" + fw + "); put it behind a port"
		}
	}
	for _, outer := range outerLayers {
		if hasPathPrefix(imp, modPath+"/"+outer) {
			return layer + " must not import the outer layer " + outer + "/"
		}
	}
	if layer != "domain" {
		return ""
	}
	if hasPathPrefix(imp, modPath+"/application") {
		return "domain must not import application/"
	}
	if test || isStdlib(imp) || hasPathPrefix(imp, modPath+"/domain") {
		return ""
	}
	return "domain may import only the standard library and domain/"
}

// isStdlib reports whether imp names a standard-library package: the go tool's own rule is that
// their first path element has no dot. cgo's "C" is not one.
func isStdlib(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return imp != "C" && !strings.Contains(first, ".")
}

func hasPathPrefix(p, prefix string) bool {
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// scanLayer parses the imports of every Go file under root/layer, skipping the directories the go
// tool skips (testdata, and names starting with "." or "_"). A missing layer has no files.
func scanLayer(root, layer string) ([]importFile, error) {
	base := filepath.Join(root, layer)
	if _, err := os.Stat(base); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	fset := token.NewFileSet()
	var files []importFile
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != base && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			return nil
		}
		af, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("parse imports: %w", err)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		f := importFile{path: filepath.ToSlash(rel), test: strings.HasSuffix(name, "_test.go")}
		for _, spec := range af.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: import %s: %w", rel, spec.Path.Value, err)
			}
			f.imports = append(f.imports, imp)
		}
		files = append(files, f)
		return nil
	})
	slices.SortFunc(files, func(a, b importFile) int { return strings.Compare(a.path, b.path) })
	return files, err
}

// modulePath reads the module directive of the go.mod at path.
func modulePath(path string) (string, error) {
	f, err := os.Open(path) // #nosec G304 -- the test's own go.mod
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, "module")
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		rest, _, _ = strings.Cut(rest, "//")
		rest = strings.TrimSpace(rest)
		if unq, err := strconv.Unquote(rest); err == nil {
			rest = unq
		}
		if rest != "" {
			return rest, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s: no module directive", path)
}

// fileWriter returns what writes a file of a synthetic module under root (the rule tests' trees).
func fileWriter(t *testing.T, root string) func(rel, src string) {
	return func(rel, src string) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
