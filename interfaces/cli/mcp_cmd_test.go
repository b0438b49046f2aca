package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// plan mcp's server is interfaces/mcp, behind Runner.MCP: the command finds the workspace (refusing
// outside one, and extra arguments, as before), then hands the Runner and the root to the hook; a
// Runner without one says so instead of serving nothing.
func TestMCPCommandHook(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "sub/a.txt", "one\n")
	if o := inWorkspace(dir, "mcp"); o.code != ExitInternal || !strings.Contains(o.stderr, "Runner.MCP") {
		t.Fatalf("plan mcp without a server: %v", o)
	}
	var got struct {
		root    string
		version string
	}
	r := Runner{Dir: filepath.Join(dir, "sub"), Version: "v-test", MCP: func(_ context.Context, r *Runner, root string) error {
		got.root, got.version = root, r.Version
		return nil
	}}
	if o := invoke(r, "mcp"); o.code != ExitOK || got.root != dir || got.version != "v-test" {
		t.Fatalf("plan mcp with a server: %v, hook got %+v", o, got)
	}
	if o := invoke(r, "mcp", "extra"); o.code != ExitUsage {
		t.Fatalf("plan mcp extra: %v", o)
	}
	if o := invoke(Runner{Dir: t.TempDir(), MCP: r.MCP}, "--json", "mcp"); o.code != ExitNotFound || !strings.Contains(o.stderr, "plan init") {
		t.Fatalf("plan mcp outside a workspace: %v", o)
	}
}
