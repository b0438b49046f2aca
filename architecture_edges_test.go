package plan_test

// The walls beyond the dependency rule (architecture_test.go), enforced the same way, from the
// sources' imports and calls:
//
//   - outside infrastructure/, the only infrastructure package anyone imports is the composition
//     root, infrastructure/bootstrap (the adapters are under infrastructure/internal/, so the
//     compiler refuses the rest; this rule also covers a new adapter put beside bootstrap);
//   - the adapters (infrastructure/internal/) see of the application layer only its ports,
//     application/port: never the use cases they serve (their tests may wire the services);
//     the ports import nothing else of application;
//   - each framework lives in one place: gorm in the persistence adapter, fx and dig in the
//     composition root (and the root package and the fx example, which hand fx options to hosts),
//     urfave/cli in the CLI, the MCP SDK in the MCP server;
//   - the environment is read at the edges only: cmd/, interfaces/, the composition root, and
//     what tests and tools run; in domain/, application/ and the adapters, no os.Getenv,
//     os.LookupEnv or os.Environ outside two named exceptions.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const modPrefix = "github.com/planhq/plan/"

// frameworkHomes are the directories (and their subdirectories) that may import each framework.
var frameworkHomes = map[string][]string{
	"gorm.io/":                 {"infrastructure/internal/persistence"},
	"go.uber.org/fx":           {".", "infrastructure/bootstrap", "examples/fx"},
	"go.uber.org/dig":          {"infrastructure/bootstrap"},
	"github.com/urfave/cli/v2": {"interfaces/cli"},
	"github.com/modelcontextprotocol/go-sdk/": {"interfaces/mcp"},
	// The terminal UI (plan browse): its model, and the command that runs it.
	"charm.land/":               {"interfaces/tui", "interfaces/cli"},
	"github.com/charmbracelet/": {"interfaces/tui", "interfaces/cli"},
}

// envExceptions may read the environment, each for a reason inherent to what it does.
var envExceptions = map[string]string{
	// Armed by PLAN_FAILPOINT in the release binary, so crash trials exercise the code users run.
	"infrastructure/internal/failpoint": "crash hooks",
	// A decision runs with the user's environment: that is the product, not a setting.
	"infrastructure/internal/executor": "decisions inherit the environment",
}

// goFile is one parsed source file of the module.
type goFile struct {
	dir  string // slash-separated, relative to the module root ("." for the root)
	test bool
	ast  *ast.File
}

// parseModule parses every Go file under root, skipping what the go tool skips.
func parseModule(t *testing.T, root string) []goFile {
	t.Helper()
	fset := token.NewFileSet()
	var files []goFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		af, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		files = append(files, goFile{dir: filepath.ToSlash(rel), test: strings.HasSuffix(name, "_test.go"), ast: af})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func within(dir, home string) bool {
	return home == "." && dir == "." || dir == home || strings.HasPrefix(dir, home+"/")
}

// wallViolations returns what the files break of the rules above.
func wallViolations(files []goFile) []string {
	var out []string
	for _, f := range files {
		for _, spec := range f.ast.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			if rest, ok := strings.CutPrefix(imp, modPrefix+"infrastructure/"); ok && !within(f.dir, "infrastructure") &&
				rest != "bootstrap" {
				out = append(out, f.dir+" imports "+imp+": outside infrastructure/, only the composition root (bootstrap) is imported")
			}
			if rest, ok := strings.CutPrefix(imp, modPrefix+"application"); ok && rest != "/port" && !f.test &&
				(within(f.dir, "infrastructure/internal") || within(f.dir, "application/port")) {
				out = append(out, f.dir+" imports "+imp+": adapters and ports see only application/port of the application layer")
			}
			for fw, homes := range frameworkHomes {
				if (imp == strings.TrimSuffix(fw, "/") || strings.HasPrefix(imp, fw)) && !f.test &&
					!slices.ContainsFunc(homes, func(h string) bool { return within(f.dir, h) }) {
					out = append(out, f.dir+" imports "+imp+": "+fw+" belongs in "+strings.Join(homes, ", "))
				}
			}
		}
		inner := within(f.dir, "domain") || within(f.dir, "application") || within(f.dir, "infrastructure/internal")
		if f.test || !inner || envExceptions[f.dir] != "" {
			continue
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "os" &&
				slices.Contains([]string{"Getenv", "LookupEnv", "Environ"}, sel.Sel.Name) {
				out = append(out, f.dir+" calls os."+sel.Sel.Name+": the environment is read at the edges (cmd/, interfaces/, bootstrap) and passed in")
			}
			return true
		})
	}
	slices.Sort(out)
	return out
}

func TestWalls(t *testing.T) {
	files := parseModule(t, ".")
	if len(files) < 100 {
		t.Fatalf("parsed only %d files", len(files))
	}
	for _, v := range wallViolations(files) {
		t.Error(v)
	}
}

// TestWallsCatchViolations proves each rule bites, on a synthetic module.
func TestWallsCatchViolations(t *testing.T) {
	root := t.TempDir()
	write := fileWriter(t, root)
	write("interfaces/cli/ok.go", "package cli\n\nimport _ \"github.com/planhq/plan/infrastructure/bootstrap\"\n")
	write("interfaces/cli/bad.go", "package cli\n\nimport _ \"github.com/planhq/plan/infrastructure/objectstore\"\n")
	write("infrastructure/bootstrap/ok.go", "package bootstrap\n\nimport _ \"github.com/planhq/plan/infrastructure/internal/objectstore\"\n")
	write("application/fw.go", "package application\n\nimport _ \"gorm.io/gorm\"\n")
	write("infrastructure/internal/persistence/ok.go", "package persistence\n\nimport _ \"gorm.io/gorm\"\n")
	write("application/env.go", "package application\n\nimport \"os\"\n\nvar _ = os.Getenv(\"X\")\n")
	write("infrastructure/internal/watch/env.go", "package watch\n\nimport \"os\"\n\nfunc f() { _, _ = os.LookupEnv(\"X\") }\n")
	write("infrastructure/internal/executor/env.go", "package executor\n\nimport \"os\"\n\nvar _ = os.Environ()\n")
	write("interfaces/cli/env.go", "package cli\n\nimport \"os\"\n\nvar _ = os.Getenv(\"X\")\n")
	write("infrastructure/internal/archive/ok.go", "package archive\n\nimport _ \"github.com/planhq/plan/application/port\"\n")
	write("infrastructure/internal/archive/svc.go", "package archive\n\nimport _ \"github.com/planhq/plan/application\"\n")
	write("infrastructure/internal/archive/svc_test.go", "package archive\n\nimport _ \"github.com/planhq/plan/application\"\n")
	write("application/port/up.go", "package port\n\nimport _ \"github.com/planhq/plan/application/oplogtest\"\n")
	write("application/env_test.go", "package application\n\nimport \"os\"\n\nvar _ = os.Getenv(\"X\")\n")
	got := wallViolations(parseModule(t, root))
	want := []string{
		"application calls os.Getenv",
		"application imports gorm.io/gorm",
		"application/port imports github.com/planhq/plan/application/oplogtest",
		"infrastructure/internal/archive imports github.com/planhq/plan/application:",
		"infrastructure/internal/watch calls os.LookupEnv",
		"interfaces/cli imports github.com/planhq/plan/infrastructure/objectstore",
	}
	if len(got) != len(want) {
		t.Fatalf("violations:\n%s\nwant %d: %q", strings.Join(got, "\n"), len(want), want)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("violation %d = %q, want %q…", i, got[i], w)
		}
	}
}
