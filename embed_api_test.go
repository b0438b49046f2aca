package plan_test

import (
	"context"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/planhq/plan"
)

// The root package is the host's short import path: it re-exports application/ and bootstrap, and
// pulls in nothing else of the module (not the CLI, not an adapter directly).
func TestRootPackageOnlyReexports(t *testing.T) {
	const mod = "github.com/planhq/plan/"
	allowed := []string{"context", "go.uber.org/fx", mod + "application", mod + "domain/", mod + "infrastructure/bootstrap"}
	matches, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range matches {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			ok := false
			for _, a := range allowed {
				ok = ok || imp == a || (strings.HasSuffix(a, "/") && strings.HasPrefix(imp, a))
			}
			if !ok {
				t.Errorf("%s imports %q: the root package only re-exports application/, domain/ and bootstrap", name, imp)
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no package file at the module root")
	}
}

// Open, Module and Scoped are the three routes into a workspace; a Go decision run through the
// first is in the log.
func TestRootPackageRoutes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	app, err := plan.Open(ctx, plan.Config{Root: dir, Init: true, Host: "root-test"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := app.Services.Plans.Exec(ctx, plan.ExecRequest{Func: plan.Func(func(_ context.Context, dir string, _ plan.DecisionCall) error {
		return os.WriteFile(filepath.Join(dir, "x.txt"), []byte("x"), 0o600)
	})})
	if err != nil || res.Ran[0] != "func-1" {
		t.Fatalf("exec: %v %v", res.Ran, err)
	}
	ops, err := app.Services.History.List(ctx, 0, "")
	if err != nil || len(ops) != 2 {
		t.Errorf("log %+v %v", ops, err)
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	for _, opt := range []fx.Option{plan.Module(plan.Config{Root: dir}), plan.Scoped("w", plan.Config{Root: dir})} {
		a := fx.New(opt, fx.NopLogger)
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
