package main

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/kit"
)

func newMCPCommand() *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve Tavern to an agent over MCP (stdio): eight small tools",
		Description: `Runs a Model Context Protocol server on stdin/stdout (the official Go SDK)
with eight tools — prime, next, report, send, inbox, ask, reserve, search —
whose schemas together stay under 2,000 tokens. The server's instructions tell
the model to call prime first. The hooks and the CLI are the first door; this
is the second, for tools that prefer MCP.

The agent is --as, else $TAVERN_AGENT, else the agent of the hooked session
whose tool started the server. A name that names no agent (a typo) acts as
nobody: the tools answer "unknown agent" with the nearest names, and write
nothing. reserve records the agent's instance (--instance, default
$TAVERN_INSTANCE, set by tavern spawn); a dead instance (replaced by a newer
spawn, or whose spawn wrapper is gone) reserves nothing (a "fenced" tool
error), as tavern reserve.

Requests piped in are all answered before it exits at the end of its input
(printf '...' | tavern mcp); the answers come as each request finishes. A line
that is not a JSON-RPC message gets a JSON-RPC error, and the server goes on.

Example (Claude Code, .mcp.json):
   {"mcpServers": {"tavern": {"command": "tavern", "args": ["mcp"]}}}`,
		Flags:  []cli.Flag{sessionAgentFlag(), instanceFlag()},
		Action: runMCP,
	}
}

func runMCP(c *cli.Context) error {
	s, err := openStore(c)
	if err != nil {
		return err
	}
	e, err := kit.OpenEnv(s)
	if err != nil {
		return err
	}
	defer e.Close()
	srv := kit.NewMCPServer(e, kit.MCPOptions{Agent: asOrEnv(c), Instance: c.String("instance"), Version: c.App.Version})
	// kit's transport answers what was asked before the input ended.
	return srv.Run(c.Context, kit.StdioTransport(os.Stdin, os.Stdout))
}
