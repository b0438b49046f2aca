package plan_test

import (
	"context"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/planhq/plan"
	"github.com/planhq/plan/infrastructure/bootstrap"
)

// The root package is the host's short import path: it re-exports application/ and bootstrap, and
// pulls in nothing else of the module (not the CLI, not an adapter directly).
func TestRootPackageOnlyReexports(t *testing.T) {
	const mod = "github.com/planhq/plan/"
	allowed := []string{"context", "go.uber.org/fx", mod + "application", mod + "application/port", mod + "domain/", mod + "infrastructure/bootstrap"}
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
				t.Errorf("%s imports %q: the root package only re-exports application (and its ports), domain/ and bootstrap", name, imp)
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

// infrastructureTypes lists the named types of infrastructure/ reachable from the exported API of
// the given types: their exported fields, elements, function signatures and exported methods.
func infrastructureTypes(roots ...reflect.Type) []string {
	seen := map[reflect.Type]bool{}
	var found []string
	var walk func(t reflect.Type, via string)
	walk = func(t reflect.Type, via string) {
		if seen[t] {
			return
		}
		seen[t] = true
		if strings.Contains(t.PkgPath(), "/infrastructure/") {
			found = append(found, t.String()+" (via "+via+")")
		}
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
			walk(t.Elem(), via)
		case reflect.Map:
			walk(t.Key(), via)
			walk(t.Elem(), via)
		case reflect.Struct:
			for i := range t.NumField() {
				if f := t.Field(i); f.IsExported() {
					walk(f.Type, t.String()+"."+f.Name)
				}
			}
		case reflect.Func:
			for i := range t.NumIn() {
				walk(t.In(i), via)
			}
			for i := range t.NumOut() {
				walk(t.Out(i), via)
			}
		}
		// Exported methods (an interface's, or a named type's through its pointer).
		mt := t
		if t.Kind() != reflect.Interface && t.Kind() != reflect.Pointer && t.Name() != "" {
			mt = reflect.PointerTo(t)
		}
		for i := range mt.NumMethod() {
			m := mt.Method(i)
			walk(m.Type, t.String()+"."+m.Name)
		}
	}
	for _, r := range roots {
		walk(r, r.String())
	}
	slices.Sort(found)
	return found
}

// No type of infrastructure/ is reachable from package plan's API: a host compiles against
// application/ and domain/ only, whatever the adapters become.
func TestRootPackageReachesNoInfrastructureType(t *testing.T) {
	api := []reflect.Type{
		reflect.TypeFor[plan.Config](), reflect.TypeFor[*plan.App](), reflect.TypeFor[plan.Services](),
		reflect.TypeFor[*plan.Workspace](), reflect.TypeOf(plan.Open), reflect.TypeOf(plan.Module), reflect.TypeOf(plan.Scoped),
		reflect.TypeFor[plan.ExecRequest](), reflect.TypeFor[plan.RunRequest](), reflect.TypeFor[plan.CorrectRequest](),
		reflect.TypeFor[plan.UndoRequest](), reflect.TypeFor[plan.LoggedOperation](),
	}
	if found := infrastructureTypes(api...); len(found) > 0 {
		t.Errorf("package plan's API reaches infrastructure types:\n%s", strings.Join(found, "\n"))
	}
	// The walk bites: the CLI's App holds the workspace's layout, an adapter's type, two fields down.
	found := infrastructureTypes(reflect.TypeFor[*bootstrap.App]())
	if !slices.ContainsFunc(found, func(s string) bool { return strings.HasPrefix(s, "workspace.Layout ") }) {
		t.Errorf("the walk missed the layout in bootstrap.App: %v", found)
	}
}

// An App that Open did not return has nothing to close: Close on the zero App is no panic.
func TestZeroAppCloses(t *testing.T) {
	var app plan.App
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
}
