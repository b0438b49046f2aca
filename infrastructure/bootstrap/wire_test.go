package bootstrap

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.uber.org/fx"
)

// Open's hand wiring gives what Module's graph gives: the same type in every field of Services and
// in everything they hold, down to the adapters, and the same sharing (one Guard, one store, one
// snapshotter wherever the graph hands out one). A provider added to Module and not to wire (or
// wired differently) fails here.
func TestWireMatchesModule(t *testing.T) {
	dir := t.TempDir()
	made, err := Open(context.Background(), Config{Root: dir, Init: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := made.Close(); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Root: dir, LockWait: 7e9}
	first, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	byHand := shapeOf(reflect.ValueOf(first.Services))
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	var svc Services
	app := fx.New(Module(cfg), fx.Populate(&svc), fx.NopLogger)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	byGraph := shapeOf(reflect.ValueOf(svc))
	if err := app.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(byHand) < 50 {
		t.Fatalf("the walk saw only %d values: %v", len(byHand), byHand)
	}
	if !slices.Equal(byHand, byGraph) {
		for i := range max(len(byHand), len(byGraph)) {
			var h, g string
			if i < len(byHand) {
				h = byHand[i]
			}
			if i < len(byGraph) {
				g = byGraph[i]
			}
			if h != g {
				t.Fatalf("wire and Module differ first at value %d:\n  by hand:  %s\n  by graph: %s", i, h, g)
			}
		}
	}
	if got := first.Services.Guard; got == nil {
		t.Fatal("no guard")
	}
}

// shapeOf lists every value reachable from v through plan's own types, as "path: type" (with the
// value of a number, string or bool), a pointer met again as "path = first path", and a func as
// set or nil. Values of other modules' types are
// listed by type only: their insides are theirs.
func shapeOf(v reflect.Value) []string {
	var out []string
	seen := map[uintptr]string{}
	var walk func(path string, v reflect.Value, depth int)
	walk = func(path string, v reflect.Value, depth int) {
		if depth > 12 {
			return
		}
		switch v.Kind() {
		case reflect.Interface:
			if v.IsNil() {
				out = append(out, path+": nil "+v.Type().String())
				return
			}
			walk(path, v.Elem(), depth+1)
		case reflect.Pointer:
			if v.IsNil() {
				out = append(out, path+": nil "+v.Type().String())
				return
			}
			if first, ok := seen[v.Pointer()]; ok {
				out = append(out, fmt.Sprintf("%s = %s (%s)", path, first, v.Type()))
				return
			}
			seen[v.Pointer()] = path
			out = append(out, path+": "+v.Type().String())
			if ours(v.Type().Elem()) {
				walk(path, v.Elem(), depth+1)
			}
		case reflect.Struct:
			if !ours(v.Type()) {
				out = append(out, path+": "+v.Type().String())
				return
			}
			for i := range v.NumField() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i), depth+1)
			}
		case reflect.Func:
			out = append(out, fmt.Sprintf("%s: func set=%v", path, !v.IsNil()))
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
			reflect.Float32, reflect.Float64, reflect.String:
			out = append(out, fmt.Sprintf("%s: %s %v", path, v.Type(), v))
		default:
			out = append(out, path+": "+v.Type().String())
		}
	}
	walk("Services", v, 0)
	return out
}

func ours(t reflect.Type) bool { return strings.HasPrefix(t.PkgPath(), "github.com/planhq/plan/") }
