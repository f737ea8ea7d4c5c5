"""MCP servers that misbehave, for tests/test_interop_mcp.py: `python tests/mcp_servers.py MODE`.

Each is a real MCP server (the official SDK, over stdio) offering one tool, `calculate`, that
misbehaves when called: `dies` (the process exits mid-call), `hangs` (never answers), `malformed`
(an answer that does not match the output schema)."""

import os
import sys
import time

import mcp_types as types
from mcp.server.lowlevel.server import Server

from agentlab.interop.mcp import Offered, _mcp_tool, serve, world_server, world_tools


def main(mode: str) -> None:
    calculate = next(o for o in world_tools() if o.spec.name == "calculate")
    if mode == "malformed":

        async def tools(ctx, params):
            return types.ListToolsResult(tools=[_mcp_tool(calculate)])

        async def malformed(ctx, params):
            return types.CallToolResult(content=[], structured_content={"result": 42})

        serve(Server("malformed", on_list_tools=tools, on_call_tool=malformed))
        return

    def misbehave(expression: str) -> str:
        if mode == "dies":
            os._exit(3)
        time.sleep(3600)  # hangs
        return "never"

    serve(world_server([Offered(calculate.spec, calculate.annotations, misbehave)]))


if __name__ == "__main__":
    main(sys.argv[1])
