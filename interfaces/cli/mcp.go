package cli

import (
	"errors"

	ucli "github.com/urfave/cli/v2"
)

// mcpCommand is `plan mcp`: plan's undo tools for an AI agent, as an MCP server on stdin/stdout.
// The server is interfaces/mcp, reached through Runner.MCP (it imports this package).
func (h *handler) mcpCommand() *ucli.Command {
	return &ucli.Command{
		Name: "mcp", Usage: "serve this workspace's checkpoints, diffs, restores, reverts, undo and agent sessions to an AI agent over MCP (stdio)",
		Description: "Speaks the Model Context Protocol (JSON-RPC, one message a line) on stdin and stdout until stdin\n" +
			"closes. Every tool runs the plan command of the same name in-process, on the workspace that holds\n" +
			"the directory plan mcp started in (or -C DIR): same services, locks, names and operation log as\n" +
			"the command line. Refused when there is no workspace. See docs/mcp.md.",
		Action: h.mcp,
	}
}

// errNoMCP is `plan mcp` run by a Runner whose MCP hook is not set.
var errNoMCP = errors.New("plan mcp is not available here: this program's Runner has no MCP server (cli.Runner.MCP; the plan binary sets it to interfaces/mcp.Serve)")

func (h *handler) mcp(c *ucli.Context) error {
	if err := noExtraArgs(c, 0); err != nil {
		return err
	}
	// Open the workspace once, as any command does, so that a server started outside one says so
	// (exit 4, with the hint to run plan init) instead of failing every tool call later.
	app, err := h.open(c.Context, false)
	if err != nil {
		return err
	}
	root := app.Services.Layout.Root
	if err := app.Close(); err != nil {
		return err
	}
	if h.r.MCP == nil {
		return errNoMCP
	}
	return h.r.MCP(c.Context, h.r, root)
}
